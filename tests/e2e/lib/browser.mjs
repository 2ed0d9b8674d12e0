// Launches Debian's headless Chromium through playwright-core and watches pages for
// trouble: console errors and warnings (CSP violations show up here), uncaught page
// errors, and same-origin requests that fail or answer HTTP >= 400.

import { chromium } from 'playwright-core';
import { CheckFailure, oneLine } from './util.mjs';

export async function launchBrowser() {
  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
  return chromium.launch({
    executablePath,
    headless: true,
    // playwright-core already starts Chromium with --no-sandbox (CI containers run as root)
    // and --disable-dev-shm-usage; no GPU is needed for these pages.
    args: ['--disable-gpu'],
    timeout: 60_000,
  });
}

/**
 * Attaches listeners to `page` and collects problems. `take()` returns the problems seen
 * since the previous `take()`, so a caller can attribute them to one step (page load, one
 * directive spec). Aborted requests (net::ERR_ABORTED, e.g. a poll cut off by navigation)
 * are not problems.
 */
export function watchPage(page, origin) {
  const problems = [];
  let taken = 0;
  const sameOrigin = (url) => url.startsWith(`${origin}/`) || url === origin;

  page.on('console', (message) => {
    const type = message.type();
    if (type !== 'error' && type !== 'warning') return;
    const { url, lineNumber } = message.location();
    const where = url ? ` (${url.replace(origin, '')}${lineNumber ? `:${lineNumber + 1}` : ''})` : '';
    problems.push(`console ${type}: ${oneLine(message.text(), 300)}${where}`);
  });
  page.on('pageerror', (error) => {
    problems.push(`page error: ${oneLine(error.message, 300)}`);
  });
  page.on('requestfailed', (request) => {
    const failure = request.failure()?.errorText ?? 'failed';
    if (!sameOrigin(request.url()) || failure.includes('ERR_ABORTED')) return;
    problems.push(`request failed: ${request.method()} ${request.url().replace(origin, '')} (${failure})`);
  });
  page.on('response', (response) => {
    if (response.status() < 400 || !sameOrigin(response.url())) return;
    problems.push(`HTTP ${response.status()}: ${response.request().method()} ${response.url().replace(origin, '')}`);
  });

  return {
    take() {
      const fresh = problems.slice(taken);
      taken = problems.length;
      return fresh;
    },
    get all() {
      return [...problems];
    },
  };
}

/** Throws an error listing `problems` (at most 12 shown) unless the list is empty. */
export function assertNoProblems(problems, what) {
  if (problems.length === 0) return;
  const shown = problems.slice(0, 12).map((p) => `  * ${p}`);
  if (problems.length > 12) shown.push(`  * … and ${problems.length - 12} more`);
  throw new CheckFailure(`${problems.length} problem(s) ${what}:\n${shown.join('\n')}`);
}
