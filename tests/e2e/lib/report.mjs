// Records every end-to-end check as PASS or FAIL with a reason and its timing, prints a
// line as each check finishes, and at the end a summary table plus a JSON report
// (target/e2e-artifacts/report.json) that CI keeps as an artefact.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CheckFailure, oneLine, secondsSince } from './util.mjs';

export class Report {
  constructor() {
    this.checks = [];
    this.notes = [];
    this.startedAt = new Date();
  }

  /**
   * Runs `fn` as one check named `group`/`name`. `fn` passes by returning (optionally a
   * detail string) and fails by throwing; the harness itself never crashes on a failed check.
   */
  async check(group, name, fn) {
    const start = performance.now();
    try {
      const detail = await fn();
      return this.record(group, name, 'PASS', typeof detail === 'string' ? detail : '', secondsSince(start));
    } catch (error) {
      return this.record(group, name, 'FAIL', describeError(error), secondsSince(start));
    }
  }

  /** Records a finished check directly (for failures found without running anything). */
  record(group, name, result, reason, seconds = 0) {
    const entry = { group, name, result, seconds, reason };
    if (this.frozen) return entry;
    this.checks.push(entry);
    const tag = result === 'PASS' ? 'PASS' : 'FAIL';
    const why = reason ? ` — ${result === 'PASS' ? oneLine(reason, 200) : reason.replace(/\n/g, '\n  ')}` : '';
    console.log(`[${tag}] ${group}: ${name} (${seconds.toFixed(2)} s)${why}`);
    return entry;
  }

  /** Ignores checks from here on (after the watchdog stopped the run, the rest is noise). */
  freeze() {
    this.frozen = true;
  }

  /** An informational line shown under the summary (not a check). */
  note(text) {
    this.notes.push(text);
  }

  get failed() {
    return this.checks.filter((c) => c.result !== 'PASS');
  }

  printSummary() {
    const rows = this.checks.map((c) => [`${c.group}: ${c.name}`, c.result, c.seconds.toFixed(2)]);
    const header = ['check', 'result', 'seconds'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells) => cells.map((cell, i) => (i === 2 ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join('  ');
    console.log('\n== end-to-end summary');
    console.log(line(header));
    console.log(widths.map((w) => '-'.repeat(w)).join('  '));
    for (const row of rows) console.log(line(row));
    const failed = this.failed;
    console.log(`\n${this.checks.length - failed.length} passed, ${failed.length} failed, ${this.checks.length} checks`);
    if (failed.length) {
      console.log('\nFailures:');
      for (const c of failed) console.log(`- ${c.group}: ${c.name}\n    ${c.reason.replace(/\n/g, '\n    ')}`);
    }
    for (const note of this.notes) console.log(`\n${note}`);
  }

  writeJson(path, meta) {
    mkdirSync(dirname(path), { recursive: true });
    const finishedAt = new Date();
    const body = {
      ...meta,
      startedAt: this.startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      seconds: Math.round((finishedAt - this.startedAt) / 10) / 100,
      passed: this.checks.length - this.failed.length,
      failed: this.failed.length,
      checks: this.checks,
      notes: this.notes,
    };
    writeFileSync(path, `${JSON.stringify(body, null, 2)}\n`);
  }
}

/** A readable one-paragraph reason from anything thrown (assertion errors included). */
export function describeError(error) {
  if (!(error instanceof Error)) return String(error);
  if (error instanceof CheckFailure) return error.message;
  // Playwright colours its call log with ANSI escapes: drop them.
  const lines = error.message.replace(/\u001b\[[0-9;]*m/g, '').split('\n').filter((l) => l.trim() !== '');
  if (error.code === 'ERR_ASSERTION') return lines.slice(0, 20).join('\n');
  // Playwright errors carry a long call log after the first lines: keep its start.
  const callLog = lines.findIndex((l) => /^Call log:/.test(l.trim()));
  const head = lines.slice(0, callLog >= 0 ? Math.min(callLog + 4, lines.length) : 6);
  const name = error.name && error.name !== 'Error' ? `${error.name}: ` : '';
  return `${name}${head.join('\n')}`;
}
