// e2e check for the "tuning-lab" live experiment (web/static/js/experiments/tuning-lab.js),
// run for each lab's figure (lessons 5-9): the knobs the directive names are offered,
// labelled; the lab's known-good settings are run and graded on this server (passed,
// or inconclusive on a noisy box, never "not yet"), the headline agrees with the
// criteria (any "not yet" fails, else any "inconclusive" …), the three settings appear
// in one table and each knob links to the lesson that teaches it. In lesson 5 the
// slow loop's own settings are run too, and the lab says "not yet" for them. Then the
// job's trace (tests/e2e/lib/trace-view.mjs): a lane per setting, the downloaded file's
// runs with their steps inside them.
import { checkTraceView } from '../lib/trace-view.mjs';

export const timeout = 150_000;

// Each lab's known-good knobs on a CPU server (the lab's reference there: FP32 where
// the CPU only emulates BF16, except in the lab about precision).
const GOOD = {
  'feed-the-gpu': { batch: '256', data_on_device: 'true', pinned: 'true' },
  'stop-waiting': { log_every: '50', timer_sync: 'true' },
  'fit-the-budget': { accumulation: '4' },
  'mixed-precision': { precision: 'bf16' },
  'slow-loop-doctor': { batch: '256', data_on_device: 'true', pinned: 'true', log_every: '50' },
};
const WORDS = ['passed', 'not yet', 'inconclusive, run again', 'not graded on this backend'];

async function setKnobs(figure, knobs) {
  for (const [name, value] of Object.entries(knobs)) {
    const control = figure.locator(`[name="${name}"]`);
    if ((await control.evaluate((e) => e.tagName)) === 'SELECT') await control.selectOption(value);
    else await control.fill(value);
  }
}

/** Runs the lab with the knobs as set; returns the headline and the criteria's words. */
async function runAndRead(figure, assert) {
  const previous = await figure.locator('.exp-lab-verdict').count();
  assert.ok(previous <= 1, 'one result at a time');
  const old = previous ? await figure.locator('.exp-lab-verdict').elementHandle() : null;
  await figure.getByRole('button', { name: 'Run and grade' }).click();
  // A new result replaces the old one: wait for the old headline to go first.
  if (old) await old.waitForElementState('hidden', { timeout: 120_000 });
  await figure.locator('.exp-lab-verdict').waitFor({ timeout: 120_000 });
  const headline = (await figure.locator('.exp-lab-verdict .exp-stat-value').innerText()).trim();
  const criteria = await figure.locator('.exp-lab-criterion').allInnerTexts();
  assert.ok(criteria.length >= 1, 'at least one graded criterion');
  const words = criteria.map((text) => {
    const word = WORDS.find((w) => text.includes(`: ${w}.`));
    assert.ok(word, `a criterion says how it came out: ${text}`);
    return word;
  });
  assert.ok(WORDS.includes(headline), `headline ${headline}`);
  const graded = words.filter((w) => w !== 'not graded on this backend');
  const expected = words.includes('not yet') ? 'not yet'
    : words.includes('inconclusive, run again') ? 'inconclusive, run again'
      : graded.length ? 'passed' : 'not graded on this backend';
  assert.equal(headline, expected, `headline agrees with ${words}`);
  return { headline, criteria };
}

export default async function check({ page, figure, params, assert }) {
  const lab = params.lab;
  assert.ok(GOOD[lab], `a known lab: ${lab}`);
  // Every knob the directive names is a labelled control, starting at the baseline.
  for (const [name, value] of Object.entries(params)) {
    if (name === 'lab') continue;
    const control = figure.locator(`[name="${name}"]`);
    assert.equal(await control.count(), 1, `control ${name}`);
    const id = await control.getAttribute('id');
    assert.ok(await figure.locator(`label[for="${id}"]`).count(), `${name} is labelled`);
    assert.equal(await control.inputValue(), String(value), `${name} starts at the baseline`);
  }
  const device = await page.evaluate(() => fetch('/api/device').then((r) => r.json()));
  const cpu = device.device && device.device.kind === 'cpu';

  if (lab === 'stop-waiting') {
    const slow = await runAndRead(figure, assert);
    assert.equal(slow.headline, 'not yet', 'the slow loop itself is no solution');
    assert.match(slow.criteria.join(' '), /baseline's own settings/);
  }

  await setKnobs(figure, GOOD[lab]);
  const good = await runAndRead(figure, assert);
  assert.notEqual(good.headline, 'not yet', `the lab's own good settings: ${good.criteria.join(' | ')}`);

  const settings = figure.locator('.exp-table-block', { hasText: 'three settings' }).locator('tbody tr');
  assert.equal(await settings.count(), 3, 'baseline, yours, reference');
  assert.match(await settings.nth(1).innerText(), /^Yours/);
  const profile = await figure.locator('.exp-table-block', { hasText: 'step time went' }).locator('tbody tr').count();
  assert.equal(profile, 5, 'the baseline profile: whole step and its four parts');
  if (cpu && GOOD[lab].pinned) {
    assert.match(await figure.locator('.exp-finding').allInnerTexts().then((t) => t.join(' ')), /pinned: no effect on this backend/);
  }
  // Each knob links to the lesson that teaches it, and the Labs page keeps the result.
  const links = await figure.locator('.exp-lab-knobs a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  assert.ok(links.length >= 1 && links.every((h) => h.startsWith('/lessons/')), `knob links ${links}`);
  assert.equal(await figure.getByRole('link', { name: /Labs page/ }).getAttribute('href'), '/labs');
  const file = await checkTraceView({ page, figure, assert }, 'lab', [/^baseline$/, /^your settings$/, /^reference$/]);
  // A sample per setting and round (a short run repeated back to back makes one), each
  // holding its first run.
  const samples = file.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'sample').map((e) => e.name);
  assert.equal(samples.filter((n) => n === 'warm-up').length, 3, `a warm-up per setting: ${samples}`);
  assert.ok(samples.filter((n) => /^round \d+$/.test(n)).length >= 3, `the graded rounds: ${samples}`);
  const firstRuns = file.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'run' && e.name === 'run 1').length;
  assert.equal(firstRuns, samples.length, 'every sample shows its first run');
}
