// Part "flow", quizzes: what a learner meets when taking them (issue 16 items 2, 3, 1).
// - async-and-timing with JavaScript: a blank question is named by number beside it and
//   scrolled below the sticky counter, nothing is sent; a number the server cannot read
//   comes back beside its field; then the result: status line updated without a reload,
//   submit disabled, focus on the result, every option marked (Your answer / Correct
//   answer, a multi-select key as several marks), missed questions linked to sections
//   that exist; a retake with the key passes and offers the next lesson and a review.
// - why-gpus: "1,048,576 multiply-adds" is read as a number; without JavaScript a
//   refused number shows the quiz again (422) with the message and the typed text.
// - slow-or-broken passed → final exam; exam passed → printable completion page, and
//   the home page continues there.

import { assertNoProblems } from './browser.mjs';
import { FINAL_EXAM_PATH, lessonPath, quizPath } from './course.mjs';
import { axeOn, inContext, open, shoot, unexpected } from './flow.mjs';
import { CheckFailure } from './util.mjs';

const ASYNC = 'async-and-timing';

export async function checkFlowQuiz(ctx) {
  const { report } = ctx;
  await report.check('flow', `${ASYNC} quiz with JavaScript: blanks, refused numbers, marks, summary, the way on`, () =>
    inContext(ctx, {}, (page, monitor, context) => quizWithJs(ctx, page, monitor, context)));
  await report.check('flow', 'why-gpus quiz: "1,048,576 multiply-adds" is read as the number', () =>
    inContext(ctx, {}, (page, monitor) => printedNumber(ctx, page, monitor)));
  await report.check('flow', 'why-gpus quiz without JavaScript: a refused number shows the quiz again with its message', () =>
    inContext(ctx, { javaScriptEnabled: false }, (page, monitor, context) => refusedWithoutJs(ctx, page, monitor, context)));
  await report.check('flow', 'lesson 9 passed → final exam → completion page (score, date, lessons; printable) → home continues there', () =>
    inContext(ctx, {}, (page, monitor, context) => toCompletion(ctx, page, monitor, context)));
}

const fieldsets = (page) => page.locator('form.quiz-form fieldset.question');

/** Answers every question: the first option, "0" for numbers, skipping `skip` (1-based). */
async function answerFirst(page, { skip = [], numeric = '0' } = {}) {
  const count = await fieldsets(page).count();
  for (let i = 0; i < count; i += 1) {
    if (skip.includes(i + 1)) continue;
    const fs = fieldsets(page).nth(i);
    if ((await fs.getAttribute('data-kind')) === 'numeric') await fs.locator('input').fill(numeric);
    else await fs.locator('input').first().check();
  }
  return count;
}

/** The key as the marked result shows it: per question, option values or the number. */
async function readKey(page) {
  return page.$$eval('form.quiz-form fieldset.question', (sets) => sets.map((fs) => {
    const keys = [...fs.querySelectorAll('label.option.key input')].map((i) => i.value);
    const feedback = fs.querySelector('.feedback')?.textContent ?? '';
    const typed = fs.querySelector('input[type=text]')?.value ?? '';
    // A hardware-graded question shows this server's measurement as its key; one not
    // measured yet shows a sentence instead, and any number will do on the retake.
    const wrong = /Correct answer: (.+?)(?: \((?:±|measured)|$)/.exec(feedback);
    const number = wrong ? wrong[1].trim() : typed;
    return { kind: fs.dataset.kind, keys, number: /^[\d.,]+/.test(number) ? number : '1' };
  }));
}

/** Fills the form with `key` (from readKey). */
async function answerWith(page, key) {
  for (let i = 0; i < key.length; i += 1) {
    const fs = fieldsets(page).nth(i);
    if (key[i].kind === 'numeric') {
      await fs.locator('input').fill(key[i].number);
    } else {
      for (const value of key[i].keys) await fs.locator(`input[value="${value}"]`).check();
    }
  }
}

/** Submits with JavaScript and waits for the marked result. */
async function submitJs(page) {
  await page.locator('form.quiz-form button[type=submit]').click();
  await page.locator('.quiz-result .verdict').waitFor({ state: 'visible', timeout: 15_000 });
  return page.locator('.quiz-result .verdict').innerText();
}

/** Takes the quiz at `path` twice: once to read the key, once to pass. */
async function passQuiz(page, ctx, path) {
  await open(ctx, page, path);
  await answerFirst(page);
  await submitJs(page);
  const key = await readKey(page);
  await open(ctx, page, path);
  await answerWith(page, key);
  const verdict = await submitJs(page);
  if (!verdict.startsWith('Passed.')) throw new CheckFailure(`${path}: the retake with the key did not pass: ${verdict}`);
}

async function quizWithJs(ctx, page, monitor, context) {
  await open(ctx, page, quizPath(ASYNC));
  const state = page.locator('[data-quiz-state]');
  const before = await state.innerText();
  // A blank question: named beside it, scrolled below the sticky counter, nothing sent.
  let posted = 0;
  page.on('request', (r) => { if (r.method() === 'POST') posted += 1; });
  const count = await answerFirst(page, { skip: [3] });
  await page.locator('form.quiz-form button[type=submit]').click();
  const blank = fieldsets(page).nth(2);
  const message = (await blank.locator('.field-error').innerText()).trim();
  if (!/^Question 3: /.test(message)) throw new CheckFailure(`the blank question's message is "${message}"`);
  if (posted) throw new CheckFailure('a form with a blank question was sent');
  await page.waitForTimeout(400);
  const place = await page.evaluate(() => {
    const fs = document.querySelectorAll('fieldset.question')[2].getBoundingClientRect();
    const bar = document.querySelector('.quiz-progress').getBoundingClientRect();
    return { top: fs.top, barBottom: bar.bottom, height: window.innerHeight, focused: document.activeElement?.closest('fieldset')?.dataset.number };
  });
  if (place.top < place.barBottom - 1 || place.top > place.height) {
    throw new CheckFailure(`question 3 is at y=${Math.round(place.top)}, the sticky counter ends at ${Math.round(place.barBottom)} (viewport ${place.height})`);
  }
  if (place.focused !== '3') throw new CheckFailure(`focus is in question ${place.focused}, not 3`);

  // A number the server cannot read: sent, refused, named beside its field.
  const numericIndex = await fieldsets(page).evaluateAll((sets) => sets.findIndex((fs) => fs.dataset.kind === 'numeric'));
  if (numericIndex < 0) throw new CheckFailure(`${ASYNC}'s quiz has no numeric question`);
  await answerFirst(page, { numeric: 'about ten' });
  await page.locator('form.quiz-form button[type=submit]').click();
  const numericSet = fieldsets(page).nth(numericIndex);
  await numericSet.locator('.field-error').waitFor({ timeout: 10_000 });
  const refused = await numericSet.locator('.field-error').innerText();
  if (!refused.startsWith(`Question ${numericIndex + 1}: `) || !refused.includes('about ten')) {
    throw new CheckFailure(`the refused number's message is "${refused}"`);
  }
  if ((await numericSet.locator('input').getAttribute('aria-invalid')) !== 'true') throw new CheckFailure('the refused field is not marked aria-invalid');
  const ids = await fieldsets(page).evaluateAll((sets) => sets.map((fs) => fs.id.replace('question-', '')));
  if (ids.some((id) => refused.includes(id))) throw new CheckFailure(`the message names an internal id: ${refused}`);

  // The graded result, in place.
  await answerFirst(page);
  const url = page.url();
  await submitJs(page);
  if (page.url() !== url) throw new CheckFailure('submitting loaded another page');
  const after = await state.innerText();
  if (after === before || !/best [\d.]+%/.test(after)) throw new CheckFailure(`status line "${before}" became "${after}"`);
  if (!(await page.locator('form.quiz-form button[type=submit]').isDisabled())) throw new CheckFailure('the submit button is enabled after submitting');
  const focused = await page.evaluate(() => document.activeElement?.classList.contains('quiz-result'));
  if (!focused) throw new CheckFailure('focus did not move to the result');
  const marks = await page.$$eval('form.quiz-form fieldset.question', (sets) => sets.map((fs) => ({
    kind: fs.dataset.kind,
    checked: [...fs.querySelectorAll('input:checked')].map((i) => i.value).sort(),
    chosen: [...fs.querySelectorAll('label.option')].filter((l) => l.querySelector('.badge-chosen')).map((l) => l.querySelector('input').value).sort(),
    keys: fs.querySelectorAll('.badge-key').length,
    feedback: fs.querySelector('.feedback')?.textContent ?? '',
  })));
  for (const [i, m] of marks.entries()) {
    if (m.kind === 'numeric') continue;
    if (JSON.stringify(m.checked) !== JSON.stringify(m.chosen)) throw new CheckFailure(`question ${i + 1}: chosen ${m.checked} but "Your answer" on ${m.chosen}`);
    if (m.keys < 1) throw new CheckFailure(`question ${i + 1}: no "Correct answer" mark`);
  }
  if (!marks.some((m) => m.kind === 'multiple' && m.keys > 1)) throw new CheckFailure('no multi-select key shown as several marks');
  const missed = await page.$$eval('.quiz-result .missed li', (items) => items.map((li) => [...li.querySelectorAll('a')].map((a) => a.getAttribute('href'))));
  const wrong = await page.locator('fieldset.question.wrong').count();
  if (missed.length !== wrong) throw new CheckFailure(`${wrong} wrong questions but ${missed.length} in the summary`);
  const lesson = await (await page.request.get(`${ctx.origin}${lessonPath(ASYNC)}`)).text();
  for (const links of missed) {
    const section = links.find((h) => h.startsWith('/lessons/'));
    if (!section) throw new CheckFailure(`a missed question has no section link: ${links}`);
    const id = section.split('#')[1];
    if (!lesson.includes(`id="${id}"`)) throw new CheckFailure(`${section}: no such section on the lesson page`);
  }
  const axe = await axeOn(ctx, context, quizPath(ASYNC), async (p) => {
    await answerFirst(p);
    await submitJs(p);
  });
  await shoot(ctx, page, `quiz-result-${ASYNC}`);

  // A retake with the key passes and leads on.
  const key = await readKey(page);
  await open(ctx, page, quizPath(ASYNC));
  await answerWith(page, key);
  const verdict = await submitJs(page);
  if (!verdict.startsWith('Passed.')) throw new CheckFailure(`the retake with the key: ${verdict}`);
  const steps = await page.$$eval('.quiz-result .actions a', (links) => links.map((a) => [a.textContent, a.getAttribute('href')]));
  const next = ctx.lessons[ctx.lessons.findIndex((l) => l.slug === ASYNC) + 1];
  if (!steps.some(([t, h]) => t.startsWith('Next lesson') && t.endsWith('→') && h === lessonPath(next.slug))) throw new CheckFailure(`no "Next lesson →" to ${next.slug}: ${JSON.stringify(steps)}`);
  if (!steps.some(([t, h]) => t === 'Review the lesson' && h === lessonPath(ASYNC))) throw new CheckFailure(`no "Review the lesson": ${JSON.stringify(steps)}`);
  assertNoProblems(unexpected(monitor.take(), [/HTTP 422: POST \/api\/quizzes\//, /status of 422/]), 'on the quiz page');
  return `${count} questions; ${wrong} missed, each linked to its section; ${axe}`;
}

async function printedNumber(ctx, page, monitor) {
  await open(ctx, page, quizPath('why-gpus'));
  await answerFirst(page);
  const target = fieldsets(page).filter({ hasText: '1024 inputs and 1024 outputs' });
  if ((await target.count()) !== 1) throw new CheckFailure('the 1024 × 1024 multiply-adds question is not on the page');
  await target.locator('input').fill('1,048,576 multiply-adds');
  await submitJs(page);
  const cls = await target.getAttribute('class');
  if (!cls.includes('right')) throw new CheckFailure(`"1,048,576 multiply-adds" was graded wrong: ${await target.locator('.feedback').innerText()}`);
  assertNoProblems(monitor.take(), 'on the quiz page');
  return 'graded right';
}

async function refusedWithoutJs(ctx, page, monitor, context) {
  await open(ctx, page, quizPath('why-gpus'));
  await answerFirst(page, { numeric: '12 apples' });
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.request().isNavigationRequest()),
    page.locator('form.quiz-form button[type=submit]').click(),
  ]);
  if (response.status() !== 422) throw new CheckFailure(`the refused post answered ${response.status()}, expected 422`);
  await page.waitForLoadState('load');
  if (!(await page.locator('form.quiz-form').isVisible())) throw new CheckFailure('the quiz is not shown again');
  const summary = await page.locator('#form-errors').innerText();
  if (!/Question \d+: the answer is asked for in/.test(summary)) throw new CheckFailure(`summary: ${summary}`);
  const kept = await page.locator('input[aria-invalid="true"]').first().inputValue();
  if (kept !== '12 apples') throw new CheckFailure(`the typed text was not kept: "${kept}"`);
  const checked = await page.locator('form.quiz-form input:checked').count();
  if (checked === 0) throw new CheckFailure('the ticked answers were not kept');
  await shoot(ctx, page, 'quiz-refused-nojs');
  assertNoProblems(unexpected(monitor.take(), [/HTTP 422: POST \/lessons\/why-gpus\/quiz/, /status of 422/]), 'on the refused form');
  const axe = await axeOn(ctx, context, quizPath('why-gpus'), async (p) => {
    await answerFirst(p, { numeric: '12 apples' });
    await p.evaluate(() => { document.querySelector('form.quiz-form').noValidate = true; });
    await Promise.all([p.waitForNavigation(), p.evaluate(() => HTMLFormElement.prototype.submit.call(document.querySelector('form.quiz-form')))]);
  });
  return `422 with the quiz, the message and the answers; ${axe}`;
}

async function toCompletion(ctx, page, monitor, context) {
  const last = ctx.lessons[ctx.lessons.length - 1].slug;
  await passQuiz(page, ctx, quizPath(last));
  const exam = await page.$$eval('.quiz-result .actions a', (links) => links.map((a) => [a.textContent, a.getAttribute('href')]));
  if (!exam.some(([t, h]) => /final exam/i.test(t) && h === FINAL_EXAM_PATH)) throw new CheckFailure(`lesson 9's passed quiz offers no final exam: ${JSON.stringify(exam)}`);
  await passQuiz(page, ctx, FINAL_EXAM_PATH);
  await page.locator('.quiz-result a', { hasText: 'See your completion page' }).click();
  await page.waitForLoadState('load');
  if (!page.url().endsWith('/final-exam/complete')) throw new CheckFailure(`the completion link led to ${page.url()}`);
  const text = await page.locator('article.completion').innerText();
  if (!/passed the final exam on \d{1,2} [A-Z][a-z]+ \d{4} with a best score of 100%/.test(text)) throw new CheckFailure(`completion page: ${text.slice(0, 300)}`);
  const covered = await page.locator('ol.covered > li').count();
  if (covered !== ctx.lessons.length) throw new CheckFailure(`${covered} lessons listed as covered, the course has ${ctx.lessons.length}`);
  if (!(await page.locator('[data-print]').isVisible())) throw new CheckFailure('no print button');
  await shoot(ctx, page, 'completion');
  await page.emulateMedia({ media: 'print' });
  const hidden = await page.evaluate(() => ['.site-header', '.site-footer', '.completion-actions'].map((s) => getComputedStyle(document.querySelector(s)).display));
  await page.emulateMedia({ media: 'screen' });
  if (hidden.some((d) => d !== 'none')) throw new CheckFailure(`printing keeps the header, footer or buttons: ${hidden}`);
  await open(ctx, page, '/');
  const href = await page.locator('a.continue-link').getAttribute('href');
  if (href !== '/final-exam/complete') throw new CheckFailure(`home continues at ${href}`);
  const axe = await axeOn(ctx, context, '/final-exam/complete');
  assertNoProblems(monitor.take(), 'on the way to the completion page');
  return `completion page reached; ${axe}`;
}
