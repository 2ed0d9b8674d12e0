// Part "flow", tools (issue 16 items 6 and 4): every lesson's code downloads, fetched
// through the page's own links, parse as Python (ast.parse) and validate as nbformat 4
// (nbformat's validator, pinned in target/e2e-venv by tests/setup.sh); the copy
// button puts a code block on the clipboard; and a live-experiment panel shows the
// server's own 429 sentence, which differs between a used-up rate and a full queue.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assertNoProblems } from './browser.mjs';
import { lessonPath } from './course.mjs';
import { waitForMount } from './directives.mjs';
import { inContext, open, unexpected } from './flow.mjs';
import { CheckFailure } from './util.mjs';

// Parses each .py with Python's own parser and validates each .ipynb with nbformat.
const VALIDATE = `
import ast, json, sys
import nbformat
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".py"):
        ast.parse(text, filename=path)
    else:
        nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
        if nb.nbformat != 4:
            sys.exit(f"{path}: nbformat {nb.nbformat}, want 4")
        nbformat.validate(nb)
print(len(sys.argv) - 1)
`;

export async function checkFlowTools(ctx) {
  const { report } = ctx;
  await report.check('flow', 'every lesson\'s .py parses as Python and its .ipynb validates as nbformat 4', () =>
    inContext(ctx, {}, (page, monitor) => downloads(ctx, page, monitor)));
  await report.check('flow', 'the copy button puts the code block on the clipboard', () =>
    inContext(ctx, {}, (page, monitor, context) => copy(ctx, page, monitor, context)));
  await report.check('flow', 'a 429 shows the server\'s own sentence (rate used up and queue full differ)', () =>
    inContext(ctx, {}, (page, monitor) => tooMany(ctx, page, monitor)));
}

async function downloads(ctx, page, monitor) {
  const python = resolve(ctx.repoRoot, process.env.E2E_PYTHON || 'target/e2e-venv/bin/python');
  if (!existsSync(python)) throw new CheckFailure(`${python} not found: run bash tests/setup.sh (it installs nbformat there)`);
  const dir = mkdtempSync(join(tmpdir(), 'gpulab-downloads-'));
  try {
    const files = [];
    for (const lesson of ctx.lessons) {
      await open(ctx, page, lessonPath(lesson.slug));
      const links = await page.locator('.downloads a').evaluateAll((as) => as.map((a) => ({ href: a.getAttribute('href'), name: a.getAttribute('download') })));
      if (links.length !== 2) throw new CheckFailure(`${lesson.slug}: ${links.length} download links`);
      for (const link of links) {
        const response = await page.request.get(`${ctx.origin}${link.href}`);
        if (response.status() !== 200) throw new CheckFailure(`${link.href} answered ${response.status()}`);
        const disposition = response.headers()['content-disposition'] ?? '';
        if (!disposition.includes(`filename="${link.name}"`)) throw new CheckFailure(`${link.href}: Content-Disposition "${disposition}"`);
        const file = join(dir, link.name);
        writeFileSync(file, await response.body());
        files.push(file);
      }
    }
    let checked;
    try {
      checked = execFileSync(python, ['-c', VALIDATE, ...files], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    } catch (error) {
      throw new CheckFailure(`Python or nbformat refused a download:\n${String(error.stderr || error.message).trim().split('\n').slice(-6).join('\n')}`);
    }
    assertNoProblems(monitor.take(), 'on the lesson pages');
    return `${checked} files: ${ctx.lessons.length} scripts parsed, ${ctx.lessons.length} notebooks valid`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function copy(ctx, page, monitor, context) {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ctx.origin });
  await open(ctx, page, lessonPath(ctx.lessons[0].slug));
  const block = page.locator('.lesson-body .code-block').first();
  const button = block.getByRole('button', { name: /^Copy/ });
  const name = await button.evaluate((b) => b.textContent);
  await button.click();
  await block.locator('.copy-code', { hasText: 'Copied' }).waitFor({ timeout: 5_000 });
  const clipboard = await page.evaluate(() => navigator.clipboard.readText());
  const code = await block.locator('pre code').innerText();
  if (clipboard.trim() !== code.trim()) throw new CheckFailure(`the clipboard holds ${JSON.stringify(clipboard.slice(0, 80))}, the block ${JSON.stringify(code.slice(0, 80))}`);
  const buttons = await page.locator('.lesson-body pre.code').count();
  const wrapped = await page.locator('.lesson-body .code-block .copy-code').count();
  if (buttons !== wrapped) throw new CheckFailure(`${buttons} code blocks, ${wrapped} copy buttons`);
  assertNoProblems(monitor.take(), 'while copying');
  return `"${name}" copied ${clipboard.length} characters; ${wrapped} buttons`;
}

async function tooMany(ctx, page, monitor) {
  const slug = ctx.lessons[0].slug;
  const sentences = [
    'You have started 12 experiments in the last minute, the most one student may while other students\' experiments are waiting for the GPU. Try again in about 41 s.',
    'The experiment queue is full: the GPU is busy with other students\' experiments. Try again in about 9 s.',
  ];
  let next = 0;
  await page.route('**/api/experiments/**', (route) => route.fulfill({
    status: 429,
    headers: { 'content-type': 'application/json', 'retry-after': '9' },
    body: JSON.stringify({ error: { status: 429, message: sentences[next] } }),
  }));
  await open(ctx, page, lessonPath(slug));
  await waitForMount(page, ctx.timeouts.mount);
  const figure = page.locator('figure[data-experiment]').first();
  // "Just run it" skips the prediction step (the Run button would ask for one first).
  const skip = figure.locator('button.exp-skip');
  const run = (await skip.count()) ? skip.first() : figure.locator('button.exp-run').first();
  const shown = [];
  for (next = 0; next < sentences.length; next += 1) {
    await run.click();
    const status = figure.locator('.exp-status-text');
    await status.filter({ hasText: sentences[next].slice(0, 30) }).waitFor({ timeout: 10_000 }).catch(() => {});
    shown.push((await status.innerText()).trim());
  }
  shown.forEach((text, i) => {
    if (text !== sentences[i]) throw new CheckFailure(`the panel says "${text}", the server sent "${sentences[i]}"`);
  });
  assertNoProblems(unexpected(monitor.take(), [/HTTP 429/, /status of 429/]), 'while the server refused');
  return 'both sentences shown as sent';
}
