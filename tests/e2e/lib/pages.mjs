// Part of check (a) for the pages that are not lessons: home, about, lesson 1's quiz and
// the final exam answer 200 and load with no console errors or warnings, page errors or
// failed same-origin requests, with the site's CSP on.

import { assertNoProblems, watchPage } from './browser.mjs';
import { FINAL_EXAM_PATH, quizPath } from './course.mjs';
import { withTimeout } from './util.mjs';

export async function checkPages(ctx) {
  const { browser, origin, lessons, report, timeouts } = ctx;
  const pages = ['/', '/about', quizPath(lessons[0].slug), FINAL_EXAM_PATH];
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(timeouts.action);
    page.setDefaultNavigationTimeout(timeouts.navigation);
    const monitor = watchPage(page, origin);
    for (const path of pages) {
      await report.check('page', `${path} loads with no console errors, page errors or failed requests`, async () => {
        monitor.take();
        const response = await page.goto(`${origin}${path}`, { waitUntil: 'load' });
        if (!response || response.status() !== 200) throw new Error(`GET ${path} answered ${response?.status() ?? 'nothing'}`);
        await page.waitForTimeout(200);
        assertNoProblems(monitor.take(), 'while the page loaded');
      });
    }
  } finally {
    await withTimeout(context.close(), 10_000, 'closing the pages context').catch(() => {});
  }
}
