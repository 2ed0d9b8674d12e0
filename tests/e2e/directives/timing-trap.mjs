// e2e check for the "timing-trap" live experiment (web/static/js/experiments/timing-trap.js):
// run it, expect the three clocks with the unsynchronised one smallest, the achieved time
// per piece of work, the two-lane timeline chart (canvas), and one table row per launch,
// and the note on why no ceiling of this device applies to clocks.
export default async function check({ figure, assert }) {
  await figure.getByRole('button', { name: 'Run the timing test' }).click();
  await figure.locator('.exp-chart canvas').first().waitFor({ timeout: 60_000 });
  assert.match(await figure.locator('.exp-chart').getAttribute('aria-label'), /two lanes/);
  const values = await figure.locator('.exp-stat-value').allInnerTexts();
  assert.equal(values.length, 5, `three clocks, the factor and the time per piece of work: ${values}`);
  const ms = (text) => {
    const [n, unit] = text.replace(/,/g, '').split(' ');
    return Number(n) * ({ ns: 1e-6, 'µs': 1e-3, ms: 1, s: 1e3 }[unit]);
  };
  assert.ok(ms(values[0]) > 0, `host timer without sync: ${values[0]}`);
  assert.ok(ms(values[0]) < ms(values[1]), `no-sync ${values[0]} is below sync ${values[1]}`);
  // The factor and the caption agree with the two timers shown (rounded to 2-3 digits).
  const ratio = ms(values[1]) / ms(values[0]);
  const caption = await figure.locator('.exp-finding').first().innerText();
  if (values[3] === 'no measurable difference') {
    assert.ok(ratio < 1.1, `"no measurable difference" beside timers ${values[0]} and ${values[1]}`);
    assert.match(caption, /No measurable difference/);
  } else {
    const shown = Number.parseFloat(values[3].replace(/,/g, ''));
    assert.ok(Math.abs(shown - ratio) <= 0.1 * ratio + 0.1, `factor ${values[3]} vs timers ${values[0]}, ${values[1]}`);
    assert.match(caption, new RegExp(`${values[3].replace('.', '\\.')} less than`), caption);
  }
  assert.ok(ms(values[4]) > 0, `achieved time per piece of work: ${values[4]}`);
  assert.ok(await figure.locator('.exp-table tbody tr').count() >= 1, 'spans in the table');
  const placed = figure.locator('.exp-ceilings .exp-finding');
  await placed.first().waitFor({ timeout: 10_000 });
  const ceilings = (await placed.allInnerTexts()).join(' ');
  assert.match(ceilings, /^No ceiling applies here: the timing trap asks when each clock stops/, ceilings);
  // No published figure measures this. The course ships a GPU's recorded run
  // (content/reference-runs/recorded-*.json, timing among its experiments), so on the CPU
  // the aside lists what that GPU's timing trap measured, labelled and dated; with no
  // recording it would say it has nothing honest to show.
  const aside = figure.locator('aside.exp-reference[data-reference-for="timing"]');
  if (await aside.count()) {
    const recorded = aside.locator('li.exp-reference-recorded');
    await aside.locator('ul, p:nth-of-type(2)').first().waitFor({ timeout: 10_000 });
    if (await recorded.count()) {
      const line = await recorded.first().innerText();
      assert.match(line, /^What .+ measured \(recorded run, \d{4}-\d{2}-\d{2}\) \(driver [^)]+\): timing\.underestimate_factor: [\d.,]+ ×; device ms: /, line);
      assert.equal(await aside.locator('li.exp-reference-published').count(), 0, 'no published figure measures the trap');
    } else {
      assert.match(await aside.innerText(), /nothing honest to show/);
    }
  }
}
