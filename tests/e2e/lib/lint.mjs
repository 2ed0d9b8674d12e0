// Check (g): the "Check your script" page. A learner pastes a training script with a
// per-step `.item()` and the deprecated `torch.cuda.amp.autocast`, submits, and reads
// the findings: line numbers, rule codes, each finding's lesson link landing on a real
// section of that lesson, named by its title; each finding quotes the learner's line with
// a caret and says how to keep it with `# noqa`; the report saves as a text file in
// `gpulab lint`'s shape; a script that is not Python is answered with its line; the page
// is reachable from a lesson and from the site navigation; axe finds nothing serious on
// the form or the findings, light and dark.

import { readFileSync } from 'node:fs';
import { AXE_PATH, judge } from './axe.mjs';
import { assertNoProblems, watchPage } from './browser.mjs';
import { lessonPath } from './course.mjs';
import { CheckFailure, withTimeout } from './util.mjs';

export const SCRIPT = `import torch

def train(model, loader, optimizer, criterion):
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(), y.cuda()
        with torch.cuda.amp.autocast():
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(loss.item())
`;

async function paste(page, origin, source) {
  await page.goto(`${origin}/lint`, { waitUntil: 'load' });
  await page.getByLabel(/Your script/).fill(source);
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.getByRole('button', { name: 'Check the script' }).click()]);
}

async function axe(page) {
  await page.addScriptTag({ path: AXE_PATH });
  const results = await withTimeout(
    page.evaluate(() => {
      const experimental = window.axe.getRules(['experimental']).map((r) => r.ruleId);
      const rules = Object.fromEntries(['label-content-name-mismatch', ...experimental].map((id) => [id, { enabled: true }]));
      return window.axe.run(document, { resultTypes: ['violations'], rules });
    }),
    60_000,
    'axe.run',
  );
  return judge(results.violations);
}

export async function checkLint(ctx) {
  const { browser, origin, lessons, report, timeouts } = ctx;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(timeouts.action);
    page.setDefaultNavigationTimeout(timeouts.navigation);
    const monitor = watchPage(page, origin);

    await report.check('lint', 'a lesson links the checker, and the page loads clean', async () => {
      await page.goto(`${origin}${lessonPath(lessons[0].slug)}`, { waitUntil: 'load' });
      const inLesson = page.locator('.lint-cta').getByRole('link', { name: 'Check your script' });
      await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), inLesson.click()]);
      if (!page.url().endsWith('/lint')) throw new CheckFailure(`the link led to ${page.url()}`);
      await page.getByRole('heading', { name: 'Check your training script' }).waitFor();
      assertNoProblems(monitor.take(), 'while the page loaded');
    });

    await report.check('lint', 'the home page\'s navigation links the checker', async () => {
      await page.goto(`${origin}/`, { waitUntil: 'load' });
      const nav = page.getByRole('navigation', { name: 'Site' }).getByRole('link', { name: 'Check your script' });
      await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), nav.click()]);
      if (!page.url().endsWith('/lint')) throw new CheckFailure(`the link led to ${page.url()}`);
    });

    await report.check('lint', 'pasting a script lists its findings by line, with links', async () => {
      await paste(page, origin, SCRIPT);
      const findings = page.locator('.lint-finding');
      const codes = await findings.evaluateAll((items) => items.map((i) => `${i.dataset.line}:${i.dataset.code}`));
      for (const want of ['6:GL401', '11:GL101']) {
        if (!codes.includes(want)) throw new CheckFailure(`expected ${want} among ${codes.join(', ')}`);
      }
      const summary = await page.locator('[data-lint-summary]').innerText();
      if (!/finding/.test(summary)) throw new CheckFailure(`summary reads "${summary}"`);
      const version = await findings.filter({ has: page.locator('code', { hasText: 'GL401' }) }).innerText();
      if (!version.includes('PyTorch 2.4')) throw new CheckFailure(`GL401 names no PyTorch version: ${version}`);
      assertNoProblems(monitor.take(), 'while checking');
    });

    await report.check('lint', 'a finding\'s lesson link lands on that section', async () => {
      const finding = page.locator('.lint-finding[data-code="GL101"]');
      const line = await finding.locator('.lint-line').innerText();
      if (!line.includes('print(loss.item())') || !line.includes('^')) throw new CheckFailure(`the quoted line reads:\n${line}`);
      const noqa = await finding.locator('.lint-noqa').innerText();
      if (!noqa.includes('# noqa: GL101')) throw new CheckFailure(`the noqa hint reads "${noqa}"`);
      const link = finding.getByRole('link', { name: /^Lesson 5, / });
      const href = await link.getAttribute('href');
      await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), link.click()]);
      const id = href.split('#')[1];
      const heading = page.locator(`[id="${id}"]`);
      if ((await heading.count()) !== 1) throw new CheckFailure(`${href}: no element with id ${id}`);
      await page.goBack({ waitUntil: 'load' });
    });

    await report.check('lint', 'the report saves as gpulab lint lines', async () => {
      await paste(page, origin, SCRIPT);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /Save this report/ }).click()]);
      const text = readFileSync(await download.path(), 'utf8');
      if (!/^train\.py:11:\d+: GL101 /m.test(text)) throw new CheckFailure(`the saved report reads:\n${text}`);
    });

    await report.check('lint', 'a script that is not Python is answered with its line', async () => {
      monitor.take();
      await paste(page, origin, 'import torch\nfor x in:\n    pass\n');
      const error = await page.locator('[data-lint-error]').innerText();
      if (!error.includes('line 2')) throw new CheckFailure(`the error reads "${error}"`);
      // The 422 itself is the expected answer, not a problem.
      const problems = monitor.take().filter((p) => !p.includes('HTTP 422: POST /lint') && !p.includes('422'));
      assertNoProblems(problems, 'besides the expected 422');
    });
  } finally {
    await withTimeout(context.close(), 10_000, 'closing the lint context').catch(() => {});
  }

  for (const scheme of ['light', 'dark']) {
    const context = await browser.newContext({ bypassCSP: true, colorScheme: scheme, reducedMotion: 'reduce', viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(timeouts.action);
      page.setDefaultNavigationTimeout(timeouts.navigation);
      await report.check('axe', `check your script, empty form (${scheme})`, async () => {
        await page.goto(`${origin}/lint`, { waitUntil: 'load' });
        return axe(page);
      });
      await report.check('axe', `check your script, with findings (${scheme})`, async () => {
        await paste(page, origin, SCRIPT);
        return axe(page);
      });
    } finally {
      await withTimeout(context.close(), 10_000, 'closing the lint axe context').catch(() => {});
    }
  }
}
