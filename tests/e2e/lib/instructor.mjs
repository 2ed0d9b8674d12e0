// Part "instructor": the instructor cockpit and resume codes in a real browser (issue 16,
// items 13–16). Starts its own server with an instructor token, writes a class of 300
// into its database (python3's sqlite3, as 300 browsers would have left it) plus one
// student who really takes a quiz, then: signs in through the form; sorts by a quiz with
// the mouse and the keyboard (aria-sort follows); filters stuck students with the
// checkbox (the script submits it); pages on in the same order; follows a most-missed
// question to its lesson section; sees the GPU section refresh itself after a student's
// experiment; sorts without JavaScript; carries a learner to a second browser with a
// resume code. Screenshots at 1280 and 375 px and axe (experimental rules included) on
// the gradebook and on the home page with a resume code.

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { axeOn, inContext, open, shoot } from './flow.mjs';
import { startServer } from './server.mjs';
import { roundChecks } from './instructor-round.mjs';
import { CheckFailure, withTimeout } from './util.mjs';

const TOKEN = 'e2e-instructor-token-0123456789abcdef-0123456789';
const GROUP = 'instructor';

/** 300 learners: Learner i scored i % 11 of 10 on why-gpus at minute i; every 50th
 * failed inside-the-gpu three times (stuck). */
function seedClass(database) {
  const script = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
with db:
    for i in range(300):
        sid = format(i, '032x')
        at = '2026-01-01T%02d:%02d:00.000Z' % (i // 60, i % 60)
        db.execute('INSERT INTO students (id, display_name) VALUES (?, ?)', (sid, 'Learner %03d' % i))
        c = i % 11
        db.execute('INSERT INTO attempts (student_id, quiz_id, correct, total, passed, submitted_at) VALUES (?, ?, ?, 10, ?, ?)', (sid, 'why-gpus', c, int(c * 100 > 750), at))
        if i % 50 == 0:
            for _ in range(3):
                db.execute("INSERT INTO attempts (student_id, quiz_id, correct, total, passed, submitted_at) VALUES (?, 'inside-the-gpu', 0, 10, 0, ?)", (sid, at))
`;
  const run = spawnSync('python3', ['-c', script, database], { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new CheckFailure(`seeding the class failed: ${run.stderr || run.error}`);
}

const rowNames = (page) => page.locator('table.gradebook-table tbody th[scope="row"]').evaluateAll(
  (cells) => cells.map((c) => c.firstChild.textContent.trim()));

async function signIn(ictx, page) {
  await open(ictx, page, '/instructor');
  await page.fill('#token', TOKEN);
  await page.click('form[action="/instructor/login"] button');
  await page.locator('h1', { hasText: 'Class gradebook' }).waitFor();
}

async function takeQuizAsStudent(ictx, page) {
  await open(ictx, page, '/');
  return page.evaluate(async () => {
    const quiz = await (await fetch('/api/quizzes/why-gpus')).json();
    const answers = Object.fromEntries(quiz.questions.map((q) => [q.id, q.kind === 'numeric' ? 1e12 : q.kind === 'multiple' ? [] : 0]));
    const response = await fetch('/api/quizzes/why-gpus/attempts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ answers }) });
    return response.status;
  });
}

async function gradebookChecks(ictx) {
  const { report } = ictx;
  await inContext(ictx, {}, async (page, monitor, context) => {
    await report.check(GROUP, 'sign in, sticky header, class of 301', async () => {
      await signIn(ictx, page);
      const sticky = await page.locator('table.gradebook-table thead th').first().evaluate((th) => getComputedStyle(th).position);
      if (sticky !== 'sticky') throw new CheckFailure(`header position is ${sticky}`);
      const count = await page.locator('#gradebook-count').innerText();
      if (!count.startsWith('301 of 301')) throw new CheckFailure(count);
      return count;
    });
    await report.check(GROUP, 'sort by a quiz with the mouse, then the keyboard', async () => {
      await Promise.all([page.waitForURL(/sort=why-gpus&dir=desc/), page.click('thead a:text-is("why-gpus")')]);
      const sorted = page.locator('thead th[aria-sort]');
      if ((await sorted.count()) !== 1 || (await sorted.getAttribute('aria-sort')) !== 'descending') throw new CheckFailure('aria-sort is not descending on one header');
      const top = (await rowNames(page))[0];
      if (top !== 'Learner 010') throw new CheckFailure(`best first should be Learner 010, got ${top}`);
      await page.locator('thead a:text-is("why-gpus")').focus();
      await Promise.all([page.waitForURL(/dir=asc/), page.keyboard.press('Enter')]);
      if ((await page.locator('thead th[aria-sort]').getAttribute('aria-sort')) !== 'ascending') throw new CheckFailure('Enter did not reverse the order');
      return `top: ${top}; reversed by keyboard`;
    });
    await report.check(GROUP, 'the stuck filter submits itself and flags six', async () => {
      await Promise.all([page.waitForURL(/show=stuck/), page.check('input[name="show"]')]);
      const names = await rowNames(page);
      const flags = await page.locator('tbody tr.stuck .flag').count();
      if (names.length !== 6 || flags !== 6) throw new CheckFailure(`${names.length} rows, ${flags} flags: ${names.join(', ')}`);
      return names.join(', ');
    });
    await report.check(GROUP, 'pages continue the sorted order', async () => {
      await open(ictx, page, '/instructor?sort=name&dir=desc');
      await Promise.all([page.waitForURL(/page=2/), page.click('a.pager-next')]);
      const names = await rowNames(page);
      if (!page.url().includes('sort=name') || names[0] !== 'Learner 199') throw new CheckFailure(`page 2 starts with ${names[0]} (${page.url()})`);
      return `page 2 starts with ${names[0]}`;
    });
    await report.check(GROUP, 'a most-missed question links to the section that teaches it', async () => {
      await open(ictx, page, '/instructor');
      const link = page.locator('table.missed-table tbody a').first();
      const href = await link.getAttribute('href');
      const prompt = await page.locator('table.missed-table tbody td:nth-child(2)').first().innerText();
      await Promise.all([page.waitForURL(/\/lessons\//), link.click()]);
      const id = new URL(page.url()).hash.slice(1);
      if (id && !(await page.locator(`[id="${id}"]`).count())) throw new CheckFailure(`${href}: no #${id} on the lesson`);
      return `"${prompt.slice(0, 50)}…" → ${href}`;
    });
    await report.check(GROUP, 'the GPU section refreshes itself after an experiment', async () => {
      await open(ictx, page, '/instructor');
      await page.evaluate(() => { window.notReloaded = true; });
      const status = await inContext(ictx, {}, async (student) => {
        await open(ictx, student, '/');
        return student.evaluate(async () => (await fetch('/api/experiments/precision', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ size: 128 }) })).status);
      });
      if (status !== 202) throw new CheckFailure(`the experiment answered ${status}`);
      await withTimeout(page.locator('tbody[data-live="recent"] td', { hasText: 'precision' }).first().waitFor(), 30_000, 'the live table');
      if (!(await page.evaluate(() => window.notReloaded))) throw new CheckFailure('the page reloaded instead of refreshing');
      return 'precision appeared without a reload';
    });
    await report.check(GROUP, 'screenshots and axe: the gradebook', async () => {
      await open(ictx, page, '/instructor');
      const files = await shoot(ictx, page, 'instructor-gradebook');
      const light = await axeOn(ictx, context, '/instructor');
      const dark = await axeOn(ictx, context, '/instructor', async () => {}, { colorScheme: 'dark' });
      return `${files.length} screenshots; light ${light}; dark ${dark}`;
    });
    const problems = monitor.all;
    report.record(GROUP, 'no console errors or failed requests', problems.length ? 'FAIL' : 'PASS', problems.join('\n'));
  });
  await inContext(ictx, { javaScriptEnabled: false }, async (page) => {
    await report.check(GROUP, 'without JavaScript, sorting and filtering still work', async () => {
      await signIn(ictx, page);
      await Promise.all([page.waitForURL(/sort=active/), page.click('thead a:text-is("Last active")')]);
      // The student who really took a quiz today is the most recent; then the class's last.
      const [today, latest] = await rowNames(page);
      await page.check('input[name="show"]');
      await Promise.all([page.waitForURL(/show=stuck/), page.click('form.gradebook-filter button')]);
      const stuck = (await rowNames(page)).length;
      if (!today.startsWith('anonymous s-') || latest !== 'Learner 299' || stuck !== 6) throw new CheckFailure(`top ${today}, ${latest}; ${stuck} stuck`);
      return `most recent first: ${today}, ${latest}; ${stuck} stuck`;
    });
  });
}

async function resumeChecks(ictx) {
  const { report } = ictx;
  await report.check(GROUP, 'a resume code carries progress to another browser', async () => {
    let code = '';
    await inContext(ictx, {}, async (phone) => {
      await open(ictx, phone, '/');
      await phone.fill('#display-name', 'Resumer');
      await Promise.all([phone.waitForURL(/saved=name/), phone.click('button:text-is("Save name")')]);
      await Promise.all([phone.waitForURL(/resume-heading/), phone.click('button:text-is("Show my resume code")')]);
      code = (await phone.locator('.resume-code').innerText()).trim();
    });
    if (!/^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$/.test(code)) throw new CheckFailure(`code shown: ${code}`);
    await inContext(ictx, {}, async (laptop, monitor, context) => {
      await open(ictx, laptop, '/');
      await laptop.fill('#resume-code', code.toLowerCase());
      await Promise.all([laptop.waitForURL(/resumed=1/), laptop.click('button:text-is("Continue my progress here")')]);
      const name = await laptop.inputValue('#display-name');
      if (name !== 'Resumer') throw new CheckFailure(`the second browser shows name "${name}"`);
      if ((await laptop.locator('.resume-code').innerText()).trim() !== code) throw new CheckFailure('the second browser shows another code');
      await shoot(ictx, laptop, 'home-resume-code');
      const light = await axeOn(ictx, context, '/');
      const dark = await axeOn(ictx, context, '/', async () => {}, { colorScheme: 'dark' });
      return `light ${light}; dark ${dark}`;
    });
    return `code ${code.slice(0, 4)}-…; name and code carried`;
  });
}

export async function checkInstructor(ctx) {
  const server = await startServer({ bin: ctx.bin, cwd: ctx.repoRoot, logPath: join(ctx.artifacts, 'server-instructor.log'), token: TOKEN });
  try {
    const ictx = { ...ctx, origin: server.origin };
    await ctx.report.check(GROUP, 'a class of 300 and one real quiz attempt', async () => {
      seedClass(server.database);
      const status = await inContext(ictx, {}, (page) => takeQuizAsStudent(ictx, page));
      if (status !== 200 && status !== 201) throw new CheckFailure(`the quiz attempt answered ${status}`);
      return 'seeded';
    });
    await gradebookChecks(ictx);
    await resumeChecks(ictx);
    await roundChecks(ictx, signIn);
  } finally {
    await server.stop();
  }
}
