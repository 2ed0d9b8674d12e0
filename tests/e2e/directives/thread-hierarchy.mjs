// e2e spec for the thread hierarchy visualiser (lesson 2): the lesson's example (block 2,
// thread 37, 256 threads per block → i = 549, warp 1, lane 5) with the arithmetic written
// out; clicking a block and arrowing through threads updates the index; thread 255 of
// block 3 fails the i < 1,000 guard; each level says what it shares; quiz mode hides the
// answer until the student types it.

export default async function check({ page, figure, params, assert }) {
  const headline = figure.locator('.wb-threads-result .wb-big');
  const steps = figure.locator('.wb-threads-result .wb-steps');
  const level = figure.locator('.wb-level-panel');
  const totals = figure.locator('.wb-threads > .wb-note');
  const threadIdx = figure.getByLabel('threadIdx.x', { exact: true });
  const blockIdx = figure.getByLabel('blockIdx.x', { exact: true });

  assert.equal(await figure.locator('.fallback').isHidden(), true, 'the fallback is hidden');
  assert.equal(await figure.locator('.wb-threads-result').getAttribute('aria-live'), 'polite');

  // The grid follows the directive's params.
  const blocks = params.grid_blocks ?? 4;
  const perBlock = params.block_threads ?? 256;
  assert.equal(await figure.getByLabel('Blocks in the grid (gridDim.x)').inputValue(), String(blocks));
  assert.equal(await figure.getByLabel('Threads per block (blockDim.x)').inputValue(), String(perBlock));
  assert.equal(await figure.locator('.wb-pick-blocks button').count(), blocks);
  assert.equal(await figure.locator('.wb-pick-warps button').count(), Math.ceil(perBlock / 32));

  // The lesson's example.
  await figure.getByLabel('Threads per block (blockDim.x)').selectOption('256');
  await figure.getByLabel('Blocks in the grid (gridDim.x)').fill('4');
  await figure.getByLabel('Elements in the tensor (n)').fill('1000');
  await blockIdx.fill('2');
  await threadIdx.fill('37');
  assert.equal(await headline.textContent(), 'Block 2, thread 37: i = 549, warp 1, lane 5');
  assert.equal(
    await steps.textContent(),
    [
      'i = blockIdx.x × blockDim.x + threadIdx.x = 2 × 256 + 37 = 549',
      'warp = ⌊threadIdx.x / 32⌋ = ⌊37 / 32⌋ = 1',
      'lane = threadIdx.x mod 32 = 37 mod 32 = 5',
      'i < n: 549 < 1,000, so this thread handles element 549',
    ].join('\n'),
  );
  assert.match(await totals.textContent(), /^4 blocks × 256 threads = 1,024 threads in 32 warps \(8 per block\) for n = 1,000 elements: the last 24 threads fail the guard/);

  // Click a block: block 3, same thread → 3 × 256 + 37 = 805.
  await figure.getByRole('button', { name: 'Block 3', exact: true }).click();
  assert.match(await headline.textContent(), /i = 805, warp 1, lane 5$/);
  assert.match(await level.textContent(), /^Block: block 3.*shared memory.*barrier/);

  // Keyboard through the threads of warp 1: ArrowRight → 38, End → 63.
  await figure.getByRole('button', { name: 'Thread 37, lane 5' }).click();
  assert.match(await level.textContent(), /^Thread: thread 37 of block 3.*registers are its own/);
  await page.keyboard.press('ArrowRight');
  assert.match(await headline.textContent(), /^Block 3, thread 38: i = 806, warp 1, lane 6$/);
  await page.keyboard.press('End');
  assert.match(await headline.textContent(), /^Block 3, thread 63: i = 831, warp 1, lane 31$/);
  const focused = await page.evaluate(() => document.activeElement?.getAttribute('aria-label'));
  assert.equal(focused, 'Thread 63, lane 31', 'focus follows the arrow keys');

  // A warp: warp 7 keeps the lane (31) → thread 255, the last of the block, past the data.
  await figure.getByRole('button', { name: /^Warp 7:/ }).click();
  assert.match(await level.textContent(), /^Warp: warp 7 of block 3.*one instruction at a time/);
  assert.match(await headline.textContent(), /^Block 3, thread 255: i = 1,023, warp 7, lane 31$/);
  assert.match(await steps.textContent(), /i < n fails: 1,023 ≥ 1,000, so the guard makes this thread do nothing/);

  // The grid level.
  await figure.getByRole('button', { name: /^Grid: 4 blocks × 256 threads$/ }).click();
  assert.match(await level.textContent(), /^Grid: the whole launch, 1,024 threads.*device memory \(HBM\) and the L2 cache/);

  // A smaller block size: 4 × 128 = 512 threads cannot cover 1,000 elements.
  await figure.getByLabel('Threads per block (blockDim.x)').selectOption('128');
  assert.match(await totals.textContent(), /4 blocks × 128 threads = 512 threads in 16 warps \(4 per block\).*needs ⌈1,000 \/ 128⌉ = 8 blocks\./);
  assert.equal(await threadIdx.inputValue(), '127', 'threadIdx stays inside the block');
  await figure.getByLabel('Threads per block (blockDim.x)').selectOption('256');

  // Quiz mode: the answer is hidden until the student's own is right.
  await figure.getByLabel('Quiz me: hide the answers until I work out i').check();
  await blockIdx.fill('1');
  await threadIdx.fill('100');
  assert.equal(await headline.textContent(), 'Block 1, thread 100: i = ?');
  const guess = figure.getByLabel('Your global index i');
  await guess.fill('101');
  await figure.getByRole('button', { name: 'Check' }).click();
  assert.match(await figure.locator('.wb-guess-feedback').textContent(), /^Not 101\./);
  assert.equal(await headline.textContent(), 'Block 1, thread 100: i = ?');
  await guess.fill('356');
  await guess.press('Enter');
  assert.equal(await figure.locator('.wb-guess-feedback').textContent(), 'Right: 1 × 256 + 100 = 356.');
  assert.equal(await headline.textContent(), 'Block 1, thread 100: i = 356, warp 3, lane 4');
  await figure.getByLabel('Quiz me: hide the answers until I work out i').uncheck();
}
