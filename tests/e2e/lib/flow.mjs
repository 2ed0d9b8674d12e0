// Part "flow": the learner's path through the course in a real browser (issue 16).
// Each check runs in its own browser context, that is its own student:
//   flow-pages.mjs  lesson page → quiz, chapter list, phone contents menu, back to top,
//                   Continue where you left off, Saved, device status, search, tables
//                   that scroll, print stylesheet, math separators, no raw backticks;
//   flow-quiz.mjs   quiz marks and summary, blanks and refused numbers named by number,
//                   numbers as printed, the way on to the final exam and the completion
//                   page, the no-JavaScript error path, axe on the states they reach;
//   flow-tools.mjs  downloads parsed by Python and validated by nbformat, the copy
//                   button, and a 429 whose sentence the panel shows as sent;
//   flow-labs.mjs   a graded tuning lab read again on the Labs page without JavaScript.
// Screenshots of the new pages land in target/e2e-artifacts/screenshots/.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { watchPage } from './browser.mjs';
import { checkFlowPages } from './flow-pages.mjs';
import { checkFlowQuiz } from './flow-quiz.mjs';
import { checkFlowTools } from './flow-tools.mjs';
import { checkFlowLabs } from './flow-labs.mjs';
import { CheckFailure, withTimeout } from './util.mjs';

const AXE_PATH = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

export async function checkFlow(ctx) {
  await checkFlowPages(ctx);
  await checkFlowQuiz(ctx);
  await checkFlowTools(ctx);
  await checkFlowLabs(ctx);
}

/**
 * Runs `fn(page, monitor, context)` in a fresh context (a new student) with the site's
 * CSP on; `options` go to browser.newContext (viewport, javaScriptEnabled, …).
 */
export async function inContext(ctx, options, fn) {
  const context = await ctx.browser.newContext({ viewport: { width: 1280, height: 900 }, reducedMotion: 'reduce', ...options });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(ctx.timeouts.action);
    page.setDefaultNavigationTimeout(ctx.timeouts.navigation);
    return await fn(page, watchPage(page, ctx.origin), context);
  } finally {
    await withTimeout(context.close(), 10_000, 'closing a flow context').catch(() => {});
  }
}

/** GET `path`, failing unless it answers `status` (200 by default). */
export async function open(ctx, page, path, status = 200) {
  const response = await page.goto(`${ctx.origin}${path}`, { waitUntil: 'load' });
  if (!response || response.status() !== status) {
    throw new CheckFailure(`GET ${path} answered ${response?.status() ?? 'nothing'}, expected ${status}`);
  }
  return response;
}

/**
 * Full-page screenshots of the page as it is now, at 1280 and 375 px wide; fails when
 * the page is wider than the screen at either width.
 */
export async function shoot(ctx, page, id) {
  const dir = join(ctx.artifacts, 'screenshots');
  mkdirSync(dir, { recursive: true });
  const before = page.viewportSize();
  const files = [];
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(150);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    if (wide > width + 1) {
      const culprits = await page.evaluate((vw) => {
        const out = [...document.body.querySelectorAll('*')].filter((el) => el.getBoundingClientRect().right > vw + 1);
        return out.filter((el) => !out.some((o) => o !== el && el.contains(o))).slice(0, 5)
          .map((el) => `${el.tagName.toLowerCase()}.${String(el.className).split(' ').join('.')}`);
      }, width);
      throw new CheckFailure(`${id} scrolls sideways at ${width}px (${wide}px wide): ${culprits.join(', ')}`);
    }
    const file = join(dir, `${id}-light-${width}.png`);
    await page.screenshot({ path: file, fullPage: true, timeout: 30_000 });
    files.push(file);
  }
  if (before) await page.setViewportSize(before);
  return files;
}

/**
 * axe (default and experimental rules) on the state `page` shows now, in a second
 * context of the same student with the CSP bypassed (axe is injected as a script):
 * `path` is loaded there and `prepare(page)` may bring it to the same state.
 * Throws on any serious or critical violation. `options` go to the axe context
 * (e.g. `{ colorScheme: 'dark' }`).
 */
export async function axeOn(ctx, context, path, prepare = async () => {}, options = {}) {
  const state = await context.storageState();
  const axeContext = await ctx.browser.newContext({ bypassCSP: true, storageState: state, viewport: { width: 1280, height: 900 }, ...options });
  try {
    const page = await axeContext.newPage();
    page.setDefaultTimeout(ctx.timeouts.action);
    await page.goto(`${ctx.origin}${path}`, { waitUntil: 'load' });
    await prepare(page);
    await page.addScriptTag({ path: AXE_PATH });
    const violations = await withTimeout(page.evaluate(async () => {
      const experimental = window.axe.getRules(['experimental']).map((r) => r.ruleId);
      const rules = Object.fromEntries(['label-content-name-mismatch', ...experimental].map((id) => [id, { enabled: true }]));
      const result = await window.axe.run(document, { resultTypes: ['violations'], rules });
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
    }), 60_000, 'axe.run');
    const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    if (serious.length) {
      throw new CheckFailure(`axe on ${path}: ${serious.map((v) => `${v.id} [${v.impact}] on ${v.targets.join(' | ')}`).join('; ')}`);
    }
    return violations.length ? `axe: ${violations.map((v) => `${v.id} (${v.impact})`).join(', ')}` : 'axe: no violations';
  } finally {
    await withTimeout(axeContext.close(), 10_000, 'closing the axe context').catch(() => {});
  }
}

/** Problems the monitor saw, minus those matching `expected` RegExps. */
export function unexpected(problems, expected = []) {
  return problems.filter((p) => !expected.some((re) => re.test(p)));
}
