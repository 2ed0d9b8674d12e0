// Unit tests of the symptom triage (lesson 9): every symptom has two questions, every
// combination of answers gives a cause, checks, fixes and links, every link points at a
// heading that exists in the lessons, and the classic symptoms land on the table's rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SYMPTOMS, TABLE_ROWS, answerCombinations, diagnose } from '../../web/static/js/logic/symptom-triage.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The server's slugify (server/course/html.rs), applied to a heading's visible text. */
function slugify(text) {
  let slug = '';
  for (const c of text.toLowerCase()) {
    if (/[\p{L}\p{N}]/u.test(c)) slug += c;
    else if ((c === ' ' || c === '-' || c === '_') && slug && !slug.endsWith('-')) slug += '-';
  }
  return slug.replace(/-+$/, '');
}

/** slug → set of heading anchors, read from content/course.toml and each lesson.md. */
function lessonAnchors() {
  const toml = readFileSync(`${root}content/course.toml`, 'utf8');
  const anchors = new Map();
  for (const [, slug, dir] of toml.matchAll(/slug = "([^"]+)"\s*\ndir = "([^"]+)"/g)) {
    const md = readFileSync(`${root}content/${dir}/lesson.md`, 'utf8');
    const ids = new Set();
    let inFence = false;
    for (const line of md.split('\n')) {
      if (line.startsWith('```')) inFence = !inFence;
      const heading = !inFence && /^#{2,3} (.+)$/.exec(line);
      if (!heading) continue;
      const text = heading[1].replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
      let id = slugify(text);
      for (let n = 2; ids.has(id); n += 1) id = `${slugify(text)}-${n}`;
      ids.add(id);
    }
    anchors.set(slug, ids);
  }
  return anchors;
}

test('every symptom asks exactly two questions with at least two answers each', () => {
  assert.ok(SYMPTOMS.length >= 6);
  for (const s of SYMPTOMS) {
    assert.equal(s.questions.length, 2, s.id);
    for (const q of s.questions) assert.ok(q.options.length >= 2, `${s.id}/${q.id}`);
  }
  const ids = SYMPTOMS.map((s) => s.id);
  for (const wanted of ['mismatch', 'oom', 'throughput', 'no-time', 'nan']) assert.ok(ids.includes(wanted), wanted);
});

test('no diagnosis until both questions are answered', () => {
  assert.equal(diagnose('oom', {}), null);
  assert.equal(diagnose('oom', { when: 'first-step' }), null);
  assert.equal(diagnose('nope', { when: 'first-step', floor: 'below' }), null);
});

test('every answer combination gives a cause, ordered checks and fixes, and working links', () => {
  const anchors = lessonAnchors();
  assert.ok(anchors.get('gpu-memory').has('the-16-bytes-per-parameter-floor'), 'the anchor reader works');
  for (const symptom of SYMPTOMS) {
    for (const answers of answerCombinations(symptom)) {
      const d = diagnose(symptom.id, answers);
      const where = `${symptom.id} ${JSON.stringify(answers)}`;
      assert.ok(d, where);
      assert.ok(d.cause.length > 20, where);
      assert.ok(d.checks.length >= 1 && d.fixes.length >= 1, where);
      assert.ok(d.links.length >= 1, where);
      for (const link of d.links) {
        const [, slug, id] = /^\/lessons\/([a-z0-9-]+)#([a-z0-9-]+)$/.exec(link.href) ?? [];
        assert.ok(anchors.get(slug)?.has(id), `${where}: ${link.href} names a real heading`);
      }
      if (d.row !== null) assert.ok(Object.values(TABLE_ROWS).includes(d.row), where);
    }
  }
});

test('the four classic symptoms land on their rows of the table', () => {
  assert.equal(diagnose('mismatch', { where: 'loss', how: 'by-hand' }).row, TABLE_ROWS.mismatch);
  assert.match(diagnose('mismatch', { where: 'loss', how: 'by-hand' }).cause, /labels/);
  const oom = diagnose('oom', { when: 'first-step', floor: 'below' });
  assert.equal(oom.row, TABLE_ROWS.oom);
  assert.match(oom.fixes[0], /accumulate gradients/);
  assert.match(oom.fixes[1], /Shorter sequences/);
  assert.match(oom.fixes[2], /Mixed precision/);
  assert.equal(diagnose('throughput', { workers: 'zero', sync: 'no' }).row, TABLE_ROWS.throughput);
  assert.match(diagnose('throughput', { workers: 'many', sync: 'yes' }).cause, /Sync points/);
  const noTime = diagnose('no-time', { sync: 'no', warm: 'no' });
  assert.equal(noTime.row, TABLE_ROWS.noTime);
  assert.match(noTime.cause, /20× too low/);
});

test('follow-ups: the floor check comes first when unknown; FP16 NaN points at GradScaler', () => {
  assert.match(diagnose('oom', { when: 'first-step', floor: 'unknown' }).checks[0], /14\.90 GiB/);
  assert.match(diagnose('oom', { when: 'later', floor: 'below' }).fixes[0], /loss\.item\(\)/);
  assert.match(diagnose('oom', { when: 'load', floor: 'above' }).fixes[0], /Shard/);
  assert.match(diagnose('nan', { precision: 'fp16', fp32: 'yes' }).fixes[0], /GradScaler/);
  assert.match(diagnose('nan', { precision: 'fp16', fp32: 'untried' }).checks[0], /FP32/);
  assert.match(diagnose('assert', { blocking: 'no', kernel: 'loss' }).checks[0], /CUDA_LAUNCH_BLOCKING=1/);
});
