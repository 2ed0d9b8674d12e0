// Check (b): full-page screenshots of every lesson, the home page and lesson 1's quiz in
// four variants (light/dark × 1280/375 px wide, reduced motion), saved as
// target/e2e-artifacts/screenshots/<page>-<light|dark>-<1280|375>.png for people to look
// at; and, at 375 px, a check that no page scrolls sideways.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { lessonPath, quizPath } from './course.mjs';
import { waitForMount } from './directives.mjs';
import { CheckFailure, withTimeout } from './util.mjs';

const SCHEMES = ['light', 'dark'];
const WIDTHS = [1280, 375];

export async function takeScreenshots(ctx) {
  const { browser, origin, lessons, report, artifacts, timeouts } = ctx;
  const dir = join(artifacts, 'screenshots');
  mkdirSync(dir, { recursive: true });
  const pages = [
    { id: 'home', path: '/' },
    { id: 'about', path: '/about' },
    { id: 'search-results', path: '/search?q=pinned+memory' },
    { id: `quiz-${lessons[0].slug}`, path: quizPath(lessons[0].slug) },
    ...lessons.map((l) => ({ id: l.slug, path: lessonPath(l.slug), lesson: true })),
  ];

  for (const width of WIDTHS) {
    for (const scheme of SCHEMES) {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      try {
        const page = await context.newPage();
        page.setDefaultTimeout(timeouts.action);
        page.setDefaultNavigationTimeout(timeouts.navigation);
        await page.emulateMedia({ colorScheme: scheme, reducedMotion: 'reduce' });
        for (const target of pages) {
          const file = join(dir, `${target.id}-${scheme}-${width}.png`);
          await report.check('screenshot', `${target.id} ${scheme} ${width}px`, async () => {
            const response = await page.goto(`${origin}${target.path}`, { waitUntil: 'load' });
            if (!response || response.status() !== 200) throw new Error(`GET ${target.path} answered ${response?.status() ?? 'nothing'}`);
            if (target.lesson) await waitForMount(page, timeouts.mount);
            await withTimeout(page.evaluate(() => document.fonts.ready.then(() => true)), 5_000, 'fonts').catch(() => {});
            await page.screenshot({ path: file, fullPage: true, timeout: 30_000 });
            return file;
          });
          if (width === 375 && scheme === 'light') {
            await report.check('overflow', `${target.id} has no horizontal scroll at 375px`, () => checkOverflow(page));
          }
        }
      } finally {
        await withTimeout(context.close(), 10_000, 'closing the screenshot context').catch(() => {});
      }
    }
  }
  return dir;
}

/**
 * Fails when the page is wider than the viewport, naming the innermost elements whose box
 * or content (a long word, an inline <code>, a formula) sticks out. Anything inside a
 * scroll container, such as a code block's <pre>, is clipped there and is not a cause.
 */
async function checkOverflow(page) {
  const result = await page.evaluate(() => {
    const viewport = window.innerWidth;
    const scrollWidth = document.documentElement.scrollWidth;
    if (scrollWidth <= viewport + 1) return { viewport, scrollWidth, culprits: [] };
    const clipped = (el) => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        if (getComputedStyle(p).overflowX !== 'visible') return true;
      }
      return false;
    };
    const sticksOut = (el) => {
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 && rect.height === 0) return false;
      const ownBox = rect.right > viewport + 1;
      const content = getComputedStyle(el).overflowX === 'visible' && el.scrollWidth > el.clientWidth + 1 && rect.left + el.scrollWidth > viewport + 1;
      return (ownBox || content) && !clipped(el);
    };
    const describe = (el) => {
      const id = el.id ? `#${el.id}` : '';
      const cls = typeof el.className === 'string' && el.className.trim() ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
      const parent = el.parentElement && el.parentElement !== document.body ? `${el.parentElement.tagName.toLowerCase()} > ` : '';
      const text = (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 60);
      return `${parent}${el.tagName.toLowerCase()}${id}${cls}${text ? ` "${text}"` : ''}`;
    };
    const all = [...document.body.querySelectorAll('*')].filter(sticksOut);
    const innermost = all.filter((el) => !all.some((other) => other !== el && el.contains(other)));
    return {
      viewport,
      scrollWidth,
      culprits: innermost.map((el) => ({ what: describe(el), right: Math.round(el.getBoundingClientRect().left + Math.max(el.scrollWidth, el.getBoundingClientRect().width)) })),
    };
  });
  if (result.scrollWidth > result.viewport + 1) {
    const shown = result.culprits.slice(0, 8).map((c) => `  * ${c.what} reaches x≈${c.right}px`);
    if (result.culprits.length > 8) shown.push(`  * … and ${result.culprits.length - 8} more`);
    throw new CheckFailure(`scrollWidth ${result.scrollWidth}px > innerWidth ${result.viewport}px; sticking out:\n${shown.join('\n')}`);
  }
  return `scrollWidth ${result.scrollWidth}px`;
}
