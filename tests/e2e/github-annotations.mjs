// `gpulab lint --format github` against the GitHub Actions toolkit's own writer: for each
// finding (read from `--format json`), `core.warning(message, {title, file, startLine,
// startColumn})` from @actions/core (pinned in package.json) must print exactly the
// line gpulab printed, escaping included, for a file whose name holds the characters a
// workflow command must escape. Run by tests/run.sh with GPULAB_BIN set.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as core from '@actions/core';

const bin = resolve(process.env.GPULAB_BIN || '../../target/debug/gpulab');

const SCRIPT = `import torch
device = 'cuda' if torch.cuda.is_available() else 'cpu'
for x, y in loader:
    loss = crit(model(x.to(device)), y.to(device))
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(f"100% done: {loss.item()}")
    scaler = torch.cuda.amp.GradScaler()
`;

/** `gpulab lint ARGS` in `dir`: its standard output (exit status 1: findings). */
function lint(dir, args) {
  try {
    return execFileSync(bin, ['lint', '--isolated', ...args], { cwd: dir, encoding: 'utf8' });
  } catch (error) {
    if (error.status !== 1) throw error;
    return error.stdout;
  }
}

/** What `core.warning` writes for these arguments. */
function toolkitWarning(message, properties) {
  const written = [];
  const write = process.stdout.write;
  process.stdout.write = (chunk) => {
    written.push(String(chunk));
    return true;
  };
  try {
    core.warning(message, properties);
  } finally {
    process.stdout.write = write;
  }
  return written.join('').replace(/\r?\n$/, '');
}

test('each annotation is what @actions/core writes for the finding', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpulab-gh-'));
  const name = 'odd,name:100%.py';
  writeFileSync(join(dir, name), SCRIPT);
  const annotations = lint(dir, ['--format', 'github', name]).trimEnd().split('\n');
  const [report] = JSON.parse(lint(dir, ['--format', 'json', name]));
  assert.equal(annotations.length, report.findings.length);
  assert.ok(report.findings.length >= 2, JSON.stringify(report));
  report.findings.forEach((f, i) => {
    const expected = toolkitWarning(`${f.message} (${f.lesson_url})`, {
      title: `${f.code} ${f.name}`,
      file: name,
      startLine: f.line,
      startColumn: f.column,
    });
    assert.equal(annotations[i], expected);
  });
  assert.ok(annotations.some((a) => a.includes('file=odd%2Cname%3A100%25.py')), annotations.join('\n'));
});
