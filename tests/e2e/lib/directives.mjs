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

/** Runs one spec's check against its figure. Rejects on assertion failure or error. */
export async function runSpec(module, { page, figure, params }) {
  await module.default({ page, figure, params, assert });
}

/** Drops the problems a spec declared it provokes on purpose. */
export function withoutExpected(problems, module) {
  const expected = Array.isArray(module?.expectedErrors) ? module.expectedErrors : [];
  return problems.filter((p) => !expected.some((re) => re.test(p)));
}
