// Part "instructor", predict then measure (issue 14): a student predicts on a live panel
// and sees the reveal (axe, light and dark, on the page with the reveal shown); the
// instructor opens a class round, the student's lesson page shows its question at the
// top and takes a prediction, the instructor runs it once, and the student's page
// reveals it without a reload (axe on the revealed round); the instructor page shows
// the round revealed and a strip of the class's predictions.

import { axeOn, inContext, open, shoot } from './flow.mjs';
import { CheckFailure, withTimeout } from './util.mjs';

const GROUP = 'instructor';
const LESSON = '/lessons/async-and-timing';

/** Predicts 3 on the timing trap and runs it; returns the reveal's sentence. */
async function predictTiming(page) {
  const figure = page.locator('figure[data-experiment="timing-trap"]');
  await figure.locator('fieldset.exp-predict input.exp-predict-number').fill('3');
  await figure.locator('button.exp-run').click();
  const reveal = figure.locator('section.exp-reveal');
  await withTimeout(reveal.waitFor(), 60_000, 'the reveal');
  return reveal.locator('.exp-reveal-sentence').innerText();
}

export async function roundChecks(ictx, signIn) {
  const { report } = ictx;
  await inContext(ictx, {}, async (page, _monitor, context) => {
    await report.check(GROUP, 'a panel prediction is revealed; axe on the reveal, light and dark', async () => {
      await open(ictx, page, LESSON);
      const sentence = await predictTiming(page);
      if (!/^You predicted 3×; this server measured/.test(sentence)) throw new CheckFailure(sentence);
      const prepare = async (p) => { await predictTiming(p); };
      const light = await axeOn(ictx, context, LESSON, prepare);
      const dark = await axeOn(ictx, context, LESSON, prepare, { colorScheme: 'dark' });
      return `${sentence} · light ${light}; dark ${dark}`;
    });
  });
  await inContext(ictx, {}, async (teacher) => {
    await inContext(ictx, {}, async (student, _monitor, context) => {
      await report.check(GROUP, 'a class round: open, a student predicts on a lesson page, run once, revealed there', async () => {
        await signIn(ictx, teacher);
        await open(ictx, teacher, '/instructor');
        await teacher.selectOption('#round-experiment', 'timing');
        await Promise.all([teacher.waitForURL(/\/instructor/), teacher.click('form[action="/instructor/round/open"] button')]);
        await open(ictx, student, LESSON);
        const banner = student.locator('#class-round');
        await withTimeout(banner.locator('form.class-round-form').waitFor(), 20_000, 'the round on the student page');
        await banner.locator('input.exp-predict-number').fill('4');
        await banner.getByRole('button', { name: 'Send my prediction' }).click();
        await withTimeout(banner.locator('.class-round-note', { hasText: 'Saved' }).waitFor(), 10_000, 'the saved note');
        await open(ictx, teacher, '/instructor');
        if (!(await teacher.locator('[data-round-count]').innerText()).startsWith('1')) throw new CheckFailure('the instructor does not see the prediction');
        await Promise.all([teacher.waitForURL(/\/instructor/), teacher.click('form[action="/instructor/round/run"] button')]);
        const reveal = banner.locator('section.exp-reveal');
        await withTimeout(reveal.waitFor(), 60_000, 'the reveal on the student page');
        const sentence = await reveal.locator('.exp-reveal-sentence').innerText();
        if (!/^You predicted 4×; this server measured /.test(sentence)) throw new CheckFailure(sentence);
        const axe = await axeOn(ictx, context, LESSON, async (p) => p.locator('#class-round section.exp-reveal').waitFor({ timeout: 20_000 }));
        await open(ictx, teacher, '/instructor');
        const status = await teacher.locator('.round-status').innerText();
        if (!/\(revealed\)/.test(status)) throw new CheckFailure(status);
        if (!(await teacher.locator('figure.prediction-strip circle.strip-dot').count())) throw new CheckFailure('no strip of the class predictions');
        const files = await shoot(ictx, student, 'class-round-revealed');
        return `${sentence} · ${files.length} screenshots · ${axe}`;
      });
    });
  });
}
