// Check (c): axe-core on every lesson, home, about, search, lesson 1's quiz and the
// final exam, in light and dark, after the widgets mounted, with axe's default rules
// and its experimental ones (label-content-name-mismatch among the rules checked).
// Pages whose controls only appear after use are put in that state first: the
// allocator playground gets a live tensor (its "del" buttons), lesson 5's tuning lab a
// graded result. Fails on any violation
// of impact "serious" or "critical" and prints rule, impact, target selectors and help
// for each. Injecting axe needs a script the site's CSP (script-src 'self') would
// block, so this pass alone uses a browser context with bypassCSP: true.

import { createRequire } from 'node:module';
import { FINAL_EXAM_PATH, lessonPath, quizPath } from './course.mjs';
import { waitForMount } from './directives.mjs';
import { CheckFailure, withTimeout } from './util.mjs';

export const AXE_PATH = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const FAILING_IMPACTS = new Set(['serious', 'critical']);

export async function checkAccessibility(ctx) {
  const { browser, origin, lessons, report, timeouts } = ctx;
  const pages = [
    { id: 'home', path: '/' },
    { id: 'about', path: '/about' },
    { id: 'search', path: '/search?q=pinned+memory' },
    { id: `quiz ${lessons[0].slug}`, path: quizPath(lessons[0].slug) },
    { id: 'final exam', path: FINAL_EXAM_PATH },
    ...lessons.map((l) => ({ id: l.slug, path: lessonPath(l.slug), lesson: true })),
  ];
  for (const scheme of ['light', 'dark']) {
    const context = await browser.newContext({
      bypassCSP: true,
      colorScheme: scheme,
      reducedMotion: 'reduce',
      viewport: { width: 1280, height: 900 },
    });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(timeouts.action);
      page.setDefaultNavigationTimeout(timeouts.navigation);
      for (const target of pages) {
        await report.check('axe', `${target.id} (${scheme})`, async () => {
          const response = await page.goto(`${origin}${target.path}`, { waitUntil: 'load' });
          if (!response || response.status() !== 200) throw new Error(`GET ${target.path} answered ${response?.status() ?? 'nothing'}`);
          if (target.lesson) {
            await waitForMount(page, timeouts.mount);
            await useControls(page);
          }
          await page.addScriptTag({ path: AXE_PATH });
          const results = await withTimeout(
            page.evaluate(() => {
              // Every experimental rule on, besides the default set.
              const experimental = window.axe.getRules(['experimental']).map((r) => r.ruleId);
              const rules = Object.fromEntries(['label-content-name-mismatch', ...experimental].map((id) => [id, { enabled: true }]));
              return window.axe.run(document, { resultTypes: ['violations'], rules });
            }),
            60_000,
            'axe.run',
          );
          return judge(results.violations);
        });
      }
    } finally {
      await withTimeout(context.close(), 10_000, 'closing the axe context').catch(() => {});
    }
  }
}

/**
 * Brings out controls that only exist after use, so axe sees them: the launch experiment's
 * results with their trace view, a matmul sweep's results with its ceiling findings and
 * trace view, a graded tuning lab, a live tensor in the
 * allocator playground (each gets a "del" button) and the segment it sits in. Each scheme's context is a new
 * student, so the playground starts empty every time.
 */
async function useControls(page) {
  // The launch experiment's results and its trace view (lanes, download link, span table).
  const launch = page.locator('figure[data-experiment="launch-overhead"]');
  if (await launch.count()) {
    await launch.locator('input[name="max_kernels"]').fill('10');
    await launch.getByRole('button', { name: 'Just run it' }).click();
    await launch.locator('svg.exp-trace-lanes').waitFor({ state: 'visible', timeout: 60_000 });
  }
  // A matmul sweep's results: where it sits against this device's ceilings, and its trace.
  const matmul = page.locator('figure[data-experiment="matmul-crossover"]');
  if (await matmul.count()) {
    await matmul.locator('select[name="max_size"]').selectOption({ index: 0 });
    // A new student is asked to predict first; "Just run it" skips the prediction.
    const skip = matmul.getByRole('button', { name: 'Just run it' });
    await (await skip.count() ? skip : matmul.getByRole('button', { name: 'Run the sweep' })).click();
    await matmul.locator('svg.exp-trace-lanes').waitFor({ state: 'visible', timeout: 60_000 });
    await matmul.locator('.exp-ceilings .exp-finding').first().waitFor({ state: 'visible', timeout: 15_000 });
  }
  // A graded tuning lab (one lab is enough: every lab's result has the same parts).
  const lab = page.locator('figure[data-experiment="tuning-lab"][data-params*="stop-waiting"]');
  if (await lab.count()) {
    await lab.locator('input[name="log_every"]').fill('50');
    // A new student is asked to predict first; "Just run it" skips the prediction.
    await lab.getByRole('button', { name: 'Just run it' }).click();
    await lab.locator('.exp-lab-verdict').waitFor({ state: 'visible', timeout: 60_000 });
  }
  const playground = page.locator('figure[data-experiment="allocator-playground"]');
  if ((await playground.count()) === 0) return;
  await playground.getByRole('button', { name: /^Allocate$/ }).click();
  await playground.locator('.exp-tensors button').first().waitFor({ state: 'visible', timeout: 15_000 });
  // The segment view (a bar per segment, its blocks inside) exists only with memory held.
  await playground.locator('.exp-segments .exp-segment').first().waitFor({ state: 'visible', timeout: 15_000 });
}

/** Throws a readable list of serious/critical violations; else a note of the minor ones. */
export function judge(violations) {
  const failing = violations.filter((v) => FAILING_IMPACTS.has(v.impact));
  const minor = violations.filter((v) => !FAILING_IMPACTS.has(v.impact));
  const minorNote = minor.length ? `${minor.length} minor/moderate rule(s): ${minor.map((v) => `${v.id} (${v.impact})`).join(', ')}` : 'no violations';
  if (failing.length === 0) return minorNote;
  const lines = [];
  for (const v of failing) {
    const targets = v.nodes.slice(0, 5).map((n) => n.target.flat().join(' '));
    const more = v.nodes.length > 5 ? ` … and ${v.nodes.length - 5} more` : '';
    lines.push(`  * ${v.id} [${v.impact}] ${v.help} (${v.helpUrl})\n      on ${v.nodes.length} node(s): ${targets.join(' | ')}${more}`);
    const summary = v.nodes[0]?.failureSummary?.split('\n').slice(1, 2).join(' ').trim();
    if (summary) lines.push(`      e.g. ${summary}`);
  }
  throw new CheckFailure(`${failing.length} serious/critical axe violation(s):\n${lines.join('\n')}`);
}
