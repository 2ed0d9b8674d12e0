// Part "flow", pages (issue 16 items 1, 5, 7, 8): the lesson page's way to its quiz, its
// chapter list, the phone's contents menu at the top and the back-to-top link; the
// home page's "Continue where you left off" (from quiz results, and from the last
// lesson opened), its Saved confirmation and device status; search from the header;
// tables that say they scroll; the print stylesheet; thousands separators in math; and
// no raw backtick on any lesson page once its widgets and panels have mounted.

import { assertNoProblems } from './browser.mjs';
import { lessonPath, quizPath } from './course.mjs';
import { waitForMount } from './directives.mjs';
import { inContext, open, shoot } from './flow.mjs';
import { CheckFailure } from './util.mjs';

export async function checkFlowPages(ctx) {
  const { report } = ctx;
  await report.check('flow', 'lesson page: quiz link, chapter list, back to top; at 375px the contents menu is at the top', () =>
    inContext(ctx, {}, (page, monitor) => lessonPage(ctx, page, monitor)));
  await report.check('flow', 'home: Continue where you left off, Saved confirmation, device status in home and lesson headers', () =>
    inContext(ctx, {}, (page, monitor) => home(ctx, page, monitor)));
  await report.check('flow', 'search from the header finds lesson sections and quiz explanations', () =>
    inContext(ctx, {}, (page, monitor) => search(ctx, page, monitor)));
  await report.check('flow', 'tables say they scroll at 375px; print hides the chrome and keeps code and tables whole; math keeps 1,048,576 whole', () =>
    inContext(ctx, { viewport: { width: 375, height: 900 } }, (page, monitor) => reading(ctx, page, monitor)));
  await report.check('flow', 'no raw backtick in any lesson page once its widgets and panels mounted; code in quiz options is monospace', () =>
    inContext(ctx, {}, (page, monitor) => noBackticks(ctx, page, monitor)));
}

async function lessonPage(ctx, page, monitor) {
  const slug = ctx.lessons[1]?.slug ?? ctx.lessons[0].slug;
  await open(ctx, page, lessonPath(slug));
  const quiz = page.getByRole('link', { name: 'Take the lesson quiz →' });
  if ((await quiz.getAttribute('href')) !== quizPath(slug)) throw new CheckFailure('no "Take the lesson quiz →" link to this lesson\'s quiz');
  const chapters = page.locator('aside.toc .chapter-list a');
  if ((await chapters.count()) !== ctx.lessons.length + 1) throw new CheckFailure(`the chapter list has ${await chapters.count()} links`);
  const current = await page.locator('aside.toc .chapter-list a[aria-current="page"]').getAttribute('href');
  if (current !== lessonPath(slug)) throw new CheckFailure(`aria-current is on ${current}`);
  if (!(await page.locator('aside.toc').isVisible())) throw new CheckFailure('no sidebar at 1280px');
  const downloads = await page.locator('.downloads a').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
  if (downloads.length !== 2) throw new CheckFailure(`downloads: ${downloads}`);

  await page.setViewportSize({ width: 375, height: 800 });
  if (await page.locator('aside.toc').isVisible()) throw new CheckFailure('the sidebar still shows at 375px');
  const menu = page.locator('details.contents-mobile');
  const box = await menu.boundingBox();
  if (!box || box.y > 800) throw new CheckFailure(`the contents menu is not in the first screen (y=${box?.y})`);
  await menu.locator('summary').click();
  const first = menu.locator('nav').first().locator('a').first();
  const target = await first.getAttribute('href');
  await first.click();
  await page.waitForTimeout(300);
  if (!page.url().endsWith(target)) throw new CheckFailure(`the contents link went to ${page.url()}`);
  const scrolled = await page.evaluate(() => window.scrollY);
  await page.locator('.lesson > .back-to-top a').click();
  await page.waitForTimeout(300);
  const top = await page.evaluate(() => window.scrollY);
  if (!(scrolled > 0 && top === 0)) throw new CheckFailure(`back to top: scrollY ${scrolled} → ${top}`);
  await quiz.click();
  await page.waitForLoadState('load');
  if (!page.url().endsWith(quizPath(slug))) throw new CheckFailure(`the quiz link led to ${page.url()}`);
  assertNoProblems(monitor.take(), 'on the lesson and quiz pages');
  return `${slug}: menu at y=${Math.round(box.y)}`;
}

async function home(ctx, page, monitor) {
  await open(ctx, page, '/');
  const link = page.locator('a.continue-link');
  if ((await link.getAttribute('href')) !== lessonPath(ctx.lessons[0].slug)) throw new CheckFailure('a new learner is not sent to lesson 1');
  const status = (await page.locator('.hero .device-status').innerText()).trim();
  if (!/^(No GPU on this server|Live experiments run on this server's GPU)/.test(status)) throw new CheckFailure(`home device status: ${status}`);
  const third = ctx.lessons[2];
  await open(ctx, page, lessonPath(third.slug));
  const header = (await page.locator('.lesson-header .device-status').innerText()).trim();
  if (header !== status.replace(/ See the device card\.$/, '')) throw new CheckFailure(`lesson header says "${header}", home "${status}"`);
  await open(ctx, page, '/');
  if ((await link.getAttribute('href')) !== lessonPath(third.slug)) throw new CheckFailure(`after opening lesson 3, Continue leads to ${await link.getAttribute('href')}`);
  await page.locator('#display-name').fill('Grace');
  await page.getByRole('button', { name: 'Save name' }).click();
  await page.waitForLoadState('load');
  const saved = page.locator('#name-saved');
  if (!(await saved.isVisible()) || !(await saved.innerText()).includes('Saved')) throw new CheckFailure('no "Saved" after saving the name');
  await shoot(ctx, page, 'home-continue');
  assertNoProblems(monitor.take(), 'on the home page');
  return status;
}

async function search(ctx, page, monitor) {
  await open(ctx, page, lessonPath(ctx.lessons[0].slug));
  await page.locator('#site-search-q').fill('pinned memory');
  await page.locator('#site-search-q').press('Enter');
  await page.waitForLoadState('load');
  const hits = page.locator('.search-hit');
  if ((await hits.count()) === 0) throw new CheckFailure('no results for "pinned memory"');
  if ((await page.locator('.search-hit mark').count()) === 0) throw new CheckFailure('no matched words marked');
  await shoot(ctx, page, 'search');
  const first = hits.first().locator('.search-title a');
  const href = await first.getAttribute('href');
  await first.click();
  await page.waitForLoadState('load');
  const id = href.split('#')[1];
  if (id && (await page.locator(`[id="${id}"]`).count()) !== 1) throw new CheckFailure(`${href} has no such section`);
  await open(ctx, page, '/search?q=all_reduce');
  const quizHits = await page.locator('.search-hit-quiz .search-title a').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
  if (!quizHits.some((h) => h.includes('#question-'))) throw new CheckFailure('a word from a quiz explanation finds no question');
  assertNoProblems(monitor.take(), 'while searching');
  return `first hit ${href}; ${quizHits.length} quiz hit(s) for all_reduce`;
}

async function reading(ctx, page, monitor) {
  const slug = ctx.lessons[0].slug;
  await open(ctx, page, lessonPath(slug));
  await waitForMount(page, ctx.timeouts.mount);
  const hint = await page.evaluate(() => {
    const wide = [...document.querySelectorAll('.table-scroll')].find((t) => t.scrollWidth > t.clientWidth + 1);
    if (!wide) return null;
    const note = wide.nextElementSibling;
    return { marked: wide.dataset.overflowing, note: note && note.classList.contains('scroll-hint') && !note.hidden ? note.textContent : null };
  });
  if (!hint) throw new CheckFailure(`${slug} has no table wider than 375px to check`);
  if (hint.marked !== 'true' || !/Scroll sideways/.test(hint.note ?? '')) throw new CheckFailure(`a wide table does not say it scrolls: ${JSON.stringify(hint)}`);
  const math = await page.evaluate(() => [...document.querySelectorAll('math mn')].map((n) => n.textContent));
  if (!math.includes('1,048,576')) throw new CheckFailure('1,048,576 is not one number in the math');
  await page.emulateMedia({ media: 'print' });
  const print = await page.evaluate(() => {
    const style = (sel) => (document.querySelector(sel) ? getComputedStyle(document.querySelector(sel)) : null);
    return {
      header: style('.site-header')?.display,
      toc: style('.toc')?.display,
      copy: style('.copy-code')?.display,
      pre: style('pre.code')?.whiteSpace,
      scroller: style('.table-scroll')?.overflowX,
      table: style('.table-scroll > table')?.display,
    };
  });
  await page.emulateMedia({ media: 'screen' });
  const want = { header: 'none', toc: 'none', copy: 'none', pre: 'pre-wrap', scroller: 'visible', table: 'table' };
  const off = Object.entries(want).filter(([k, v]) => print[k] !== v);
  if (off.length) throw new CheckFailure(`print styles: ${off.map(([k, v]) => `${k} is ${print[k]}, want ${v}`).join('; ')}`);
  assertNoProblems(monitor.take(), 'on the lesson page');
  return `scroll note "${hint.note}"`;
}

async function noBackticks(ctx, page, monitor) {
  const found = [];
  for (const lesson of ctx.lessons) {
    await open(ctx, page, lessonPath(lesson.slug));
    await waitForMount(page, ctx.timeouts.mount);
    await page.waitForTimeout(500);
    const raw = await page.evaluate(() => {
      const out = [];
      const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.textContent.includes('`')) continue;
        if (node.parentElement.closest('pre, code, annotation, script, .fallback[hidden], [hidden]')) continue;
        out.push(node.textContent.trim().slice(0, 120));
      }
      return out;
    });
    found.push(...raw.map((t) => `${lesson.slug}: ${t}`));
  }
  if (found.length) throw new CheckFailure(`raw backticks shown:\n${found.slice(0, 10).map((f) => `  * ${f}`).join('\n')}`);
  await open(ctx, page, quizPath('async-and-timing'));
  const font = await page.locator('label.option code').first().evaluate((c) => getComputedStyle(c).fontFamily);
  if (!/mono|Consolas|Menlo/i.test(font)) throw new CheckFailure(`code in an option is set in ${font}`);
  assertNoProblems(monitor.take(), 'on the lesson pages');
  return `${ctx.lessons.length} lessons clean; option code in ${font.split(',')[0]}`;
}
