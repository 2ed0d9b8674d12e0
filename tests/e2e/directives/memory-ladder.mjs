// e2e spec for the memory ladder (lesson 2): registers are picked first (a dependent FMA
// ~4 cycles); the arrow keys walk down the rungs (native radios) to HBM (~290 cycles ≈ 206 ns, 80 GB at
// 2,039 GB/s) and host memory over PCIe; a click picks L2 (40 MiB); and both bars grow
// down the ladder on their log scales.

export default async function check({ page, figure, assert }) {
  const root = figure.locator('.wb-ladder');
  const details = figure.locator('.wb-rung-details');
  const radios = figure.getByRole('radio');

  assert.equal(await figure.locator('.fallback').isHidden(), true, 'the fallback is hidden');
  assert.equal(await details.getAttribute('aria-live'), 'polite');
  assert.equal(await radios.count(), 5);
  assert.equal(await root.getAttribute('data-rung'), 'registers');
  assert.match(await details.textContent(), /Latencypart of the instruction; a dependent FMA ~4 cycles ≈ 2\.8 ns at 1\.41 GHz/);
  assert.match(await details.textContent(), /256 KiB per SM \(65,536 registers of 32 bits\)/);

  // Keyboard: arrows move down the ladder.
  await radios.first().focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await root.getAttribute('data-rung'), 'shared');
  assert.match(await details.textContent(), /~23 cycles \(an L1 hit ~33\) ≈ 16 ns at 1\.41 GHz, 5\.8× a register/);
  assert.match(await details.textContent(), /192 KiB per SM, up to 164 KiB of it as shared memory/);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  assert.equal(await root.getAttribute('data-rung'), 'hbm');
  assert.match(await details.textContent(), /~290 cycles ≈ 206 ns at 1\.41 GHz, 72\.5× a register/);
  assert.match(await details.textContent(), /80 GB at about 2 TB\/s \(2,039 GB\/s\)/);
  await page.keyboard.press('ArrowDown');
  assert.equal(await root.getAttribute('data-rung'), 'host');
  assert.match(await details.textContent(), /some 64 times slower than HBM’s 2,039 GB\/s/);

  // A click picks a rung too.
  await root.getByText('L2 cache', { exact: true }).click();
  assert.equal(await root.getAttribute('data-rung'), 'l2');
  assert.equal(await radios.nth(2).isChecked(), true);
  assert.match(await details.textContent(), /~200 cycles ≈ 142 ns.*40 MiB for the whole chip/);

  // The latency bars grow down the ladder (log scale), as do sizes from L1 on.
  const widths = async (kind) =>
    figure.locator(`.wb-bar-${kind} .wb-bar-fill`).evaluateAll((fills) => fills.map((f) => parseFloat(f.style.width)));
  const latency = await widths('latency');
  for (let i = 1; i < latency.length; i += 1) assert.ok(latency[i] > latency[i - 1], `latency bar ${i} longer`);
  const size = await widths('size');
  for (let i = 2; i < size.length; i += 1) assert.ok(size[i] > size[i - 1], `size bar ${i} longer`);
  // 200 cycles sits at log(400)/log(20000) ≈ 60.5% of the axis from 0.5 to 10,000 cycles.
  assert.equal(latency[2], 60.5);
}
