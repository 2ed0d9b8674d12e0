// Finds the directive figures on a lesson page, waits (bounded) until lesson.js has
// mounted each one (figure.dataset.ready = "true" or "failed"), and loads and runs the
// per-directive spec tests/e2e/directives/NAME.mjs:
//   export default async function check({ page, figure, params, assert }) { ... }
// Optional exports: `timeout` (ms for this spec) and `expectedErrors` (RegExps for console
// or HTTP problems the spec provokes on purpose, e.g. a refused oversized request).

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

export const FIGURE_SELECTOR = 'figure.directive[data-widget], figure.directive[data-experiment]';

/** [{ index, name, kind, params, paramsError }] in page order. */
export async function listFigures(page) {
  return page.$$eval(FIGURE_SELECTOR, (figures) =>
    figures.map((figure, index) => {
      const kind = figure.hasAttribute('data-widget') ? 'widget' : 'experiment';
      const name = kind === 'widget' ? figure.dataset.widget : figure.dataset.experiment;
      let params = {};
      let paramsError = null;
      try {
        params = JSON.parse(figure.dataset.params || '{}');
      } catch (error) {
        paramsError = String(error);
      }
      return { index, name, kind, params, paramsError };
    }),
  );
}

/**
 * Waits up to `ms` until every figure has data-ready set, then returns each figure's state:
 * "true", "failed", or "pending" (never set within the time).
 */
export async function waitForMount(page, ms) {
  await page
    .waitForFunction(
      (selector) => [...document.querySelectorAll(selector)].every((f) => f.dataset.ready),
      FIGURE_SELECTOR,
      { timeout: ms, polling: 100 },
    )
    .catch(() => {});
  return page.$$eval(FIGURE_SELECTOR, (figures) =>
    figures.map((f) => ({
      ready: f.dataset.ready ?? 'pending',
      note: f.querySelector('.enhance-failed')?.textContent ?? '',
    })),
  );
}

/** The Locator of the index-th directive figure. */
export const figureLocator = (page, index) => page.locator(FIGURE_SELECTOR).nth(index);

/** Finds, imports and validates a spec module: { module, file (as shown), path } or { missing, ... }. */
export async function loadSpec(specsDir, repoRoot, name) {
  const file = join(specsDir, `${name}.mjs`);
  const shown = relative(repoRoot, file).startsWith('..') ? file : relative(repoRoot, file);
  if (!existsSync(file)) return { missing: true, file: shown, path: file };
  const module = await import(pathToFileURL(file).href);
  if (typeof module.default !== 'function') {
    throw new Error(`${shown} has no default export function check({ page, figure, params, assert })`);
  }
  return { module, file: shown, path: file };
}

/** "at tests/e2e/directives/NAME.mjs:LINE:COL", the spec's own frame in an error's stack. */
export function specFrame(error, spec) {
  const line = String(error?.stack ?? '')
    .split('\n')
    .find((l) => l.includes(spec.path));
  const match = line?.match(/:(\d+):(\d+)\)?\s*$/);
  return match ? `at ${spec.file}:${match[1]}:${match[2]}` : '';
}

/**
 * Predict, then measure: when the panel asks for a prediction (fieldset.exp-predict),
 * answers it the way a learner would (a number typed, the first size, the first
 * choice) and returns what was entered; null when the panel asks nothing.
 */
export async function predict(page, figure) {
  // The panel's step is attached before the figure is marked ready; every registered
  // experiment has one (its questions come from /api/device).
  const step = figure.locator('fieldset.exp-predict');
  const name = await figure.getAttribute('data-experiment');
  const asks = name !== null && await page.evaluate(async (directive) => {
    const info = await (await fetch('/api/device')).json();
    return info.experiments.some((e) => e.directive === directive && e.predictions.length > 0);
  }, name);
  // Panels that are not queued experiments (the allocator playground) check their own
  // prediction step in their spec.
  if (!asks) return null;
  await step.waitFor({ state: 'visible', timeout: 5_000 });
  const number = step.locator('input.exp-predict-number');
  if (await number.count()) {
    await number.fill('3');
    return 3;
  }
  const select = step.locator('select');
  if (await select.count()) {
    const value = await select.locator('option').nth(1).getAttribute('value');
    await select.selectOption(value);
    return Number(value);
  }
  const radio = step.getByRole('radio').first();
  await radio.check();
  return Number(await radio.getAttribute('value'));
}

/**
 * After a spec ran a panel with a prediction: the reveal states the server's verdict,
 * marks the prediction beside the measurement (unless the answer was a choice), links
 * to the lesson paragraph, and the prediction is stored under this student.
 */
export async function checkReveal(page, figure, predicted, storedBefore) {
  const reveal = figure.locator('section.exp-reveal');
  await reveal.waitFor({ timeout: 60_000 });
  const sentence = await reveal.locator('.exp-reveal-sentence').innerText();
  assert.match(sentence, /^You predicted .+; this server measured .+: (spot on \(within 5%\)|right|wrong|[\d.,]+× too (high|low))\.$/, sentence);
  const verdict = await reveal.getAttribute('data-verdict');
  assert.ok(sentence.includes(verdict), `the sentence carries the verdict ${verdict}`);
  const strip = reveal.locator('svg.exp-strip');
  if (await strip.count()) {
    assert.equal(await strip.locator('.exp-strip-predicted').count(), 1, 'the prediction is marked');
    assert.equal(await strip.locator('.exp-strip-measured').count(), 1, 'the measurement is marked');
    assert.match(await strip.getAttribute('aria-label'), /your prediction .+, measured .+/);
  }
  assert.match(await reveal.locator('.exp-reveal-link a').getAttribute('href'), /^\/lessons\/[a-z0-9-]+#[a-z0-9-]+$/);
  assert.ok((await reveal.locator('.exp-reveal-why').innerText()).length > 40, 'the explanation is there');
  const stored = await storedPredictions(page);
  assert.ok(stored.length > storedBefore, `a prediction row was stored (${stored.length} after ${storedBefore})`);
  assert.equal(stored[stored.length - 1].predicted, predicted, 'the stored row is the prediction entered');
}

/** This student's stored predictions (GET /api/me/progress, with the page's cookie). */
export async function storedPredictions(page) {
  return page.evaluate(async () => {
    const response = await fetch('/api/me/progress', { headers: { accept: 'application/json' } });
    return (await response.json()).predictions;
  });
}

/** Runs one spec's check against its figure. Rejects on assertion failure or error. */
export async function runSpec(module, { page, figure, params }) {
  const storedBefore = (await storedPredictions(page)).length;
  const predicted = await predict(page, figure);
  await module.default({ page, figure, params, assert });
  if (predicted !== null && !module.noReveal) await checkReveal(page, figure, predicted, storedBefore);
}

/** Drops the problems a spec declared it provokes on purpose. */
export function withoutExpected(problems, module) {
  const expected = Array.isArray(module?.expectedErrors) ? module.expectedErrors : [];
  return problems.filter((p) => !expected.some((re) => re.test(p)));
}
