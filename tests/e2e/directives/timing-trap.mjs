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
  // No published figure measures this, and no GPU run is recorded: the aside says so.
  const aside = figure.locator('aside.exp-reference[data-reference-for="timing"]');
  if (await aside.count()) {
    await aside.locator('p').nth(1).waitFor({ timeout: 10_000 });
    assert.match(await aside.innerText(), /nothing honest to show/);
  }
}
