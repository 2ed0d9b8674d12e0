// e2e spec for the Amdahl calculator (lesson 1): it opens at the directive's p and N with
// the fallback's table; p = 0.95 gives 15.42× at 64 cores and 19.96× at 10,000 (the
// server table's value), never 20×; the slider's End key reaches 100,000 cores
// (19.996×, still under the 20.0× ceiling); p = 0.99 lifts the ceiling to 100.0×.

export default async function check({ page, figure, params, assert }) {
  const pNumber = figure.getByLabel('p, exact value');
  const nNumber = figure.getByLabel('N, exact value');
  const nRange = figure.getByLabel('Cores N', { exact: true });
  const pRange = figure.getByLabel('Parallel fraction p', { exact: true });
  const headline = figure.locator('.wb-amdahl-headline');
  const result = figure.locator('.wb-result');
  const steps = figure.locator('.wb-steps');
  const rows = figure.locator('.wb-amdahl table tbody tr');

  assert.equal(await figure.locator('.fallback').isHidden(), true, 'the fallback is hidden');
  assert.equal(await result.getAttribute('aria-live'), 'polite');

  // Opens at the directive's values, with the same six rows as the server's table.
  const p = params.p ?? 0.95;
  const n = params.n ?? 64;
  assert.equal(Number(await pNumber.inputValue()), p);
  assert.equal(Number(await nNumber.inputValue()), n);
  assert.equal(await rows.count(), 6);
  const s10000 = (1 / ((1 - p) + p / 10000)).toFixed(2);
  assert.deepEqual(await rows.nth(5).locator('td').allTextContents(), ['10,000', `${s10000}×`]);

  // The lesson's numbers.
  await pNumber.fill('0.95');
  await nNumber.fill('64');
  assert.equal(await headline.locator('p').nth(0).textContent(), 'S = 15.42×');
  assert.equal(await headline.locator('p').nth(1).textContent(), 'ceiling 20.0×');
  assert.equal(
    await steps.textContent(),
    'S = 1 / ((1 − 0.95) + 0.95 / 64)\n  ≈ 1 / (0.05 + 0.01484)\n  ≈ 1 / 0.06484\n  ≈ 15.42×',
  );
  assert.match(await result.textContent(), /the speedup is 15\.42×, 77% of the ceiling 1 \/ \(1 − p\) = 20\.0×/);
  assert.deepEqual(
    await rows.evaluateAll((trs) => trs.map((tr) => tr.cells[1].textContent)),
    ['1.00×', '1.90×', '5.93×', '15.42×', '19.64×', '19.96×'],
  );
  assert.equal(await figure.locator('tr.wb-row-current td').first().textContent(), '64');

  await nNumber.fill('10000');
  assert.equal(await headline.locator('p').nth(0).textContent(), 'S = 19.96×');
  await nNumber.fill('256');
  assert.equal(await headline.locator('p').nth(0).textContent(), 'S = 18.62×');

  // Keyboard on the slider: End goes to 100,000 cores, still below the ceiling.
  await nRange.focus();
  await page.keyboard.press('End');
  assert.equal(await nNumber.inputValue(), '100000');
  assert.equal(await headline.locator('p').nth(0).textContent(), 'S = 19.996×');
  assert.equal(await nRange.getAttribute('aria-valuetext'), '100,000 cores');
  await page.keyboard.press('ArrowLeft');
  assert.equal(await nNumber.inputValue(), '65536');
  // Home goes back to one core: no speedup at all.
  await page.keyboard.press('Home');
  assert.equal(await headline.locator('p').nth(0).textContent(), 'S = 1.00×');

  // The A100's 6,912 cores are a stop on the slider.
  await nNumber.fill('6912');
  assert.equal(await headline.locator('p').nth(0).textContent(), 'S = 19.95×');

  // Shrinking the serial part lifts the ceiling: p = 0.99 → 100×.
  await pNumber.fill('0.99');
  assert.equal(await headline.locator('p').nth(1).textContent(), 'ceiling 100.0×');
  assert.equal(await headline.locator('p').nth(0).textContent(), 'S = 98.59×');
  // The p slider moves in steps of 0.01.
  await pRange.focus();
  await page.keyboard.press('ArrowLeft');
  assert.equal(await pNumber.inputValue(), '0.98');
  assert.equal(await headline.locator('p').nth(1).textContent(), 'ceiling 50.0×');

  // The chart says what it shows.
  assert.match(await figure.locator('svg.wb-chart').getAttribute('aria-label'), /ceiling of 50\.0×/);
}
