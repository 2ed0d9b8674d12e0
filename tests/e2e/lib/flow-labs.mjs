// Part "flow", tuning labs (issue 28): a new student runs lesson 5's lab in the panel,
// then reads the same grade with JavaScript off on the Labs page (the latest attempt's
// verdict and criteria, the lab's link to its lesson section, labs passed); the home
// page counts the labs passed; the Labs page is screenshotted at 1280 and 375 px and
// checked by axe in light and dark.

import { lessonPath } from './course.mjs';
import { waitForMount } from './directives.mjs';
import { axeOn, inContext, open, shoot } from './flow.mjs';
import { CheckFailure } from './util.mjs';

export async function checkFlowLabs(ctx) {
  await ctx.report.check('flow', 'a graded lab reads the same on the Labs page without JavaScript; axe light and dark', () =>
    inContext(ctx, {}, (page, monitor, context) => labs(ctx, page, context)));
}

async function labs(ctx, page, context) {
  await open(ctx, page, lessonPath('async-and-timing'));
  await waitForMount(page, ctx.timeouts.mount);
  const figure = page.locator('figure[data-experiment="tuning-lab"]');
  await figure.locator('input[name="log_every"]').fill('50');
  await figure.locator('select[name="timer_sync"]').selectOption('true');
  // A new student is asked to predict first; "Just run it" skips the prediction.
  await figure.getByRole('button', { name: 'Just run it' }).click();
  await figure.locator('.exp-lab-verdict').waitFor({ timeout: 60_000 });
  const verdict = (await figure.locator('.exp-lab-verdict .exp-stat-value').innerText()).trim();
  const criteria = await figure.locator('.exp-lab-criterion').count();

  // The same student's Labs page, with JavaScript off.
  const state = await context.storageState();
  const plain = await ctx.browser.newContext({ javaScriptEnabled: false, storageState: state, viewport: { width: 1280, height: 900 } });
  try {
    const nojs = await plain.newPage();
    await open(ctx, nojs, '/labs');
    const section = nojs.locator('section#stop-waiting');
    const heading = (await section.locator('h3').innerText()).trim();
    if (heading !== `Your latest attempt: ${verdict}`) throw new CheckFailure(`Labs page says "${heading}", the panel "${verdict}"`);
    const listed = await section.locator('.lab-criteria li').count();
    if (listed !== criteria) throw new CheckFailure(`${listed} criteria on the Labs page, ${criteria} in the panel`);
    const untouched = await nojs.locator('section.lab-record', { hasText: 'Not attempted yet.' }).count();
    if (untouched !== 4) throw new CheckFailure(`${untouched} labs not attempted, want 4`);
    const passed = verdict === 'passed' ? 1 : 0;
    const progress = await nojs.locator('.labs-progress').innerText();
    if (!progress.includes(`${passed} of 5`)) throw new CheckFailure(`Labs page progress: ${progress}`);
    await section.getByRole('link', { name: /Open the lab in/ }).click();
    await nojs.waitForLoadState('load');
    const hash = new URL(nojs.url()).hash.slice(1);
    if (!(await nojs.locator(`[id="${hash}"]`).count())) throw new CheckFailure(`the lab link lands on no #${hash}`);
    await open(ctx, nojs, '/');
    const home = await nojs.locator('.labs-progress').innerText();
    if (!home.includes(`${passed} of 5`)) throw new CheckFailure(`home: ${home}`);
  } finally {
    await plain.close().catch(() => {});
  }
  await open(ctx, page, '/labs');
  await shoot(ctx, page, 'labs');
  const light = await axeOn(ctx, context, '/labs');
  const dark = await axeOn(ctx, context, '/labs', async () => {}, { colorScheme: 'dark' });
  return `panel and Labs page: ${verdict}; ${light}; dark ${dark}`;
}
