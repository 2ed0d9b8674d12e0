// Check (d): takes lesson 1's quiz through the UI, twice. With JavaScript: answer every
// question with choices read from the page (first option; 0 for numeric answers), watch
// the "Answered N of N" counter, submit, and see the graded result in place (no page
// load), consistent with the number of questions and the per-question marks. Without
// JavaScript: the same answers through the plain form give the server's results page
// with the same score.

import { assertNoProblems, watchPage } from './browser.mjs';
import { quizPath } from './course.mjs';
import { withTimeout } from './util.mjs';

const SCORE = /You scored ([\d.]+)% \((\d+) of (\d+)\)/;

export async function checkQuiz(ctx) {
  const slug = ctx.lessons[0].slug;
  let jsScore = null;
  await ctx.report.check('quiz', `${slug} with JavaScript: answer all, submit, result shown in place`, async () => {
    const { score, detail } = await withContext(ctx, { javaScriptEnabled: true }, (page, monitor) => takeWithJs(ctx, page, monitor, slug));
    jsScore = score;
    return detail;
  });
  await ctx.report.check('quiz', `${slug} without JavaScript: plain form posts, results page shown`, async () =>
    withContext(ctx, { javaScriptEnabled: false }, (page, monitor) => takeWithoutJs(ctx, page, monitor, slug, jsScore)),
  );
}

async function withContext(ctx, options, fn) {
  const context = await ctx.browser.newContext({ ...options, viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(ctx.timeouts.action);
    page.setDefaultNavigationTimeout(ctx.timeouts.navigation);
    return await fn(page, watchPage(page, ctx.origin));
  } finally {
    await withTimeout(context.close(), 10_000, 'closing the quiz context').catch(() => {});
  }
}

/** Opens the quiz and answers every question; returns the number of questions. */
async function openAndAnswer(ctx, page, slug) {
  const response = await page.goto(`${ctx.origin}${quizPath(slug)}`, { waitUntil: 'load' });
  if (!response || response.status() !== 200) throw new Error(`GET ${quizPath(slug)} answered ${response?.status() ?? 'nothing'}`);
  const fieldsets = page.locator('form.quiz-form fieldset.question');
  const count = await fieldsets.count();
  if (count === 0) throw new Error('the quiz page shows no fieldset.question');
  const intro = await page.locator('article.quiz').innerText();
  if (!intro.includes(`${count} questions`)) throw new Error(`the page shows ${count} questions but does not say "${count} questions"`);
  for (let i = 0; i < count; i += 1) {
    const fieldset = fieldsets.nth(i);
    const kind = await fieldset.getAttribute('data-kind');
    if (kind === 'numeric') {
      await fieldset.locator('input').first().fill('0');
    } else {
      const first = fieldset.locator('input').first();
      if ((await fieldset.locator('input').count()) === 0) throw new Error(`question ${i + 1} (${kind}) has no options`);
      await first.check();
    }
  }
  return count;
}

function parseScore(text, where) {
  const match = text.match(SCORE);
  if (!match) throw new Error(`${where}: no "You scored P% (C of T)" in ${JSON.stringify(text.slice(0, 200))}`);
  return { percent: Number(match[1]), correct: Number(match[2]), total: Number(match[3]), passed: /^\s*Passed\./.test(text) };
}

/** The score must agree with the question count, the marks and the server's pass rule. */
function assertConsistent(score, count, rightMarks, where) {
  const problems = [];
  if (score.total !== count) problems.push(`total ${score.total} but the page has ${count} questions`);
  if (score.correct !== rightMarks) problems.push(`${score.correct} correct but ${rightMarks} question(s) marked right`);
  // Rounded half up to one decimal, as the server rounds (22 of 24 is 91.7).
  const percent = Math.floor((score.correct * 2000 + count) / (2 * count)) / 10;
  if (Math.abs(score.percent - percent) > 0.05) problems.push(`${score.percent}% but ${score.correct}/${count} is ${percent}%`);
  if (score.passed !== score.correct * 100 > 75 * count) problems.push(`verdict ${score.passed ? 'passed' : 'not passed'} contradicts ${percent}%`);
  if (problems.length) throw new Error(`${where}: ${problems.join('; ')}`);
}

async function takeWithJs(ctx, page, monitor, slug) {
  const count = await openAndAnswer(ctx, page, slug);
  const progress = page.locator('.quiz-progress');
  if (!(await progress.isVisible())) throw new Error('the "Answered N of M" counter is not shown with JavaScript on');
  const counter = (await progress.innerText()).replace(/\s+/g, ' ').trim();
  if (counter !== `Answered ${count} of ${count}`) throw new Error(`after answering all ${count}: counter says "${counter}"`);
  const before = page.url();
  let navigated = false;
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) navigated = true;
  });
  await page.locator('form.quiz-form button[type=submit]').click();
  const verdict = page.locator('.quiz-result .verdict');
  await verdict.waitFor({ state: 'visible', timeout: 15_000 });
  if (navigated || page.url() !== before) throw new Error('submitting loaded a new page; expected the result in place');
  const score = parseScore(await verdict.innerText(), 'in-place result');
  const right = await page.locator('fieldset.question.right').count();
  const wrong = await page.locator('fieldset.question.wrong').count();
  const feedback = await page.locator('fieldset.question .feedback').count();
  assertConsistent(score, count, right, 'in-place result');
  if (right + wrong !== count || feedback !== count) throw new Error(`${right} right + ${wrong} wrong marks and ${feedback} feedback boxes for ${count} questions`);
  assertNoProblems(monitor.take(), 'on the quiz page');
  return { score, detail: `shown "${score.correct} of ${score.total}" = ${score.percent}% (${score.passed ? 'passed' : 'not passed'}); ${count} questions marked` };
}

async function takeWithoutJs(ctx, page, monitor, slug, jsScore) {
  const count = await openAndAnswer(ctx, page, slug);
  if (await page.locator('.quiz-progress').isVisible()) throw new Error('the JavaScript-only counter is visible without JavaScript');
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.request().isNavigationRequest()),
    page.locator('form.quiz-form button[type=submit]').click(),
  ]);
  if (response.status() !== 200) throw new Error(`posting the form answered ${response.status()}`);
  await page.waitForLoadState('load');
  const heading = await page.locator('main h1').innerText();
  if (!heading.startsWith('Result:')) throw new Error(`expected the results page, got heading "${heading}"`);
  const score = parseScore(await page.locator('.verdict').innerText(), 'results page');
  const items = await page.locator('li.graded-question').count();
  const right = await page.locator('li.graded-question.right').count();
  assertConsistent(score, count, right, 'results page');
  if (items !== count) throw new Error(`results page lists ${items} questions, quiz had ${count}`);
  if (jsScore && (jsScore.correct !== score.correct || jsScore.total !== score.total)) {
    throw new Error(`same answers graded differently: ${score.correct} of ${score.total} here, ${jsScore.correct} of ${jsScore.total} with JavaScript`);
  }
  assertNoProblems(monitor.take(), 'on the quiz and results pages');
  return `results page: "${score.correct} of ${score.total}" = ${score.percent}% (${score.passed ? 'passed' : 'not passed'})`;
}
