// Check (a): every lesson page loads with no console errors or warnings, no page errors
// and no failed same-origin requests; every directive figure mounts (data-ready="true")
// within a bounded time; and each figure's spec (tests/e2e/directives/NAME.mjs) passes
// within its own timeout. A directive without a spec is a failure. Runs with the site's
// CSP on, so a widget that breaks the CSP shows up as a console error.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { assertNoProblems, watchPage } from './browser.mjs';
import { lessonPath } from './course.mjs';
import { figureLocator, listFigures, loadSpec, runSpec, specFrame, waitForMount, withoutExpected } from './directives.mjs';
import { describeError } from './report.mjs';
import { CheckFailure, TimeoutError, oneLine, withTimeout } from './util.mjs';

/** Returns the sorted names of directives that have no spec file. */
export async function checkLessons(ctx) {
  const missingSpecs = new Set();
  for (const lesson of ctx.lessons) {
    await checkLesson(ctx, lesson.slug, missingSpecs);
  }
  return [...missingSpecs].sort();
}

async function checkLesson(ctx, slug, missingSpecs) {
  const { browser, origin, report, timeouts } = ctx;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(timeouts.action);
    page.setDefaultNavigationTimeout(timeouts.navigation);
    const monitor = watchPage(page, origin);
    let figures = [];
    let states = [];
    const load = async () => {
      const response = await page.goto(`${origin}${lessonPath(slug)}`, { waitUntil: 'load' });
      if (!response || response.status() !== 200) {
        throw new Error(`GET ${lessonPath(slug)} answered ${response?.status() ?? 'nothing'}`);
      }
      figures = await listFigures(page);
      states = await waitForMount(page, timeouts.mount);
      // Console messages about a failed module load can trail the figure's state by a tick.
      await page.waitForTimeout(300);
    };

    const loaded = await report.check('lesson', `${slug}: loads with no console errors, page errors or failed requests`, async () => {
      await load();
      assertNoProblems(monitor.take(), 'while the page loaded and its directives mounted');
      return `${figures.length} directive figure(s)`;
    });
    if (loaded.result === 'FAIL' && figures.length === 0) return;

    await report.check('lesson', `${slug}: all ${figures.length} directive figure(s) mount (data-ready="true")`, async () => {
      const bad = figures
        .map((f, i) => ({ f, s: states[i] }))
        .filter(({ s }) => s?.ready !== 'true')
        .map(({ f, s }) => {
          const state = s?.ready === 'pending' ? `data-ready still unset after ${timeouts.mount} ms` : `data-ready=${s?.ready ?? 'missing'}`;
          return `  * ${f.kind} ${f.name} (#${f.index + 1}): ${state}${s?.note ? ` — ${oneLine(s.note, 200)}` : ''}`;
        });
      if (bad.length) throw new CheckFailure(`${bad.length} of ${figures.length} did not mount:\n${bad.join('\n')}`);
    });

    for (const figure of figures) {
      const needsReload = await checkDirective(ctx, { page, monitor, slug, figure, state: states[figure.index], missingSpecs });
      if (needsReload) {
        // A spec that timed out may still be driving the page: start the next one afresh.
        await load().catch(() => {});
        monitor.take();
      }
    }
  } finally {
    await withTimeout(context.close(), 10_000, 'closing the lesson context').catch(() => {});
  }
}

/** Runs one figure's spec as one check; returns true when the page should be reloaded. */
async function checkDirective(ctx, { page, monitor, slug, figure, state, missingSpecs }) {
  const { report, specsDir, repoRoot, timeouts, artifacts } = ctx;
  let needsReload = false;
  const name = `${slug} › ${figure.kind} ${figure.name} (#${figure.index + 1})`;
  const entry = await report.check('directive', name, async () => {
    const spec = await withTimeout(loadSpec(specsDir, repoRoot, figure.name), 10_000, `importing the spec for ${figure.name}`);
    const ready = state?.ready ?? 'pending';
    if (spec.missing) {
      missingSpecs.add(figure.name);
      throw new Error(`no spec file ${spec.file}${ready === 'true' ? '' : ` (and the figure did not mount: data-ready=${ready})`}`);
    }
    if (figure.paramsError) throw new Error(`data-params is not valid JSON: ${figure.paramsError}`);
    if (ready !== 'true') throw new Error(`figure did not mount (data-ready=${ready}); spec ${spec.file} not run`);
    const ms = Number.isFinite(spec.module.timeout) ? spec.module.timeout : timeouts.spec;
    monitor.take();
    let specError = null;
    try {
      const locator = figureLocator(page, figure.index);
      await withTimeout(runSpec(spec.module, { page, figure: locator, params: figure.params }), ms, `spec ${spec.file}`);
    } catch (error) {
      if (error instanceof TimeoutError) needsReload = true;
      specError = error;
    }
    const problems = withoutExpected(monitor.take(), spec.module);
    if (specError) {
      // Say which line of the spec failed, and show the page's own errors, which often
      // explain a failed assertion.
      const lines = [describeError(specError)];
      const frame = specFrame(specError, spec);
      if (frame) lines.push(`  ${frame}`);
      if (problems.length) lines.push('  page problems while the spec ran:', ...problems.slice(0, 8).map((p) => `  * ${p}`));
      throw new CheckFailure(lines.join('\n'));
    }
    assertNoProblems(problems, 'while the spec ran');
    return spec.file;
  });
  if (entry.result === 'FAIL') {
    monitor.take();
    await saveFailureShot(page, figure, join(artifacts, 'failures'), slug).catch(() => {});
  }
  return needsReload;
}

/** A screenshot of a failing figure, to make the report easier to act on. */
async function saveFailureShot(page, figure, dir, slug) {
  mkdirSync(dir, { recursive: true });
  const locator = figureLocator(page, figure.index);
  await locator.screenshot({ path: join(dir, `${slug}-${figure.name}-${figure.index + 1}.png`), timeout: 5_000 });
}
