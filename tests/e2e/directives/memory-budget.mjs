// e2e check of the memory budget calculator (lessons 7 and 8): the starting values follow
// the directive's params; 1e9 parameters with FP32 Adam show 14.90 GiB before activations;
// SGD removes the optimizer term; the OOM line is the usable memory (the total reported to
// PyTorch minus the CUDA context), so the 14.90 GiB floor alone does not fit a "16 GB" T4;
// a large batch crosses the OOM line of an A100.
const GIB = 2 ** 30;

// An independent re-statement of the usable memory: reported total minus 0.5 GiB of context.
const USABLE_GIB = { 't4-16gb': 14.56 - 0.5, 'a100-80gb': 79.25 - 0.5, 'h100-80gb': 79.11 - 0.5 };

// An independent re-statement of the calculator's arithmetic, for the starting state.
function expectedTotal(p) {
  const mixed = p.precision.endsWith('-mixed');
  const pure16 = p.precision === 'bf16' || p.precision === 'fp16';
  const value = pure16 ? 2 : 4;
  const moments = { adam: 2, adamw: 2, 'sgd-momentum': 1 }[p.optimizer] ?? 0;
  const perParam = 2 * value + moments * value + (mixed ? 2 : 0);
  const act = pure16 || mixed ? 2 : 4;
  const heads = Math.max(1, Math.round(p.hidden / 64));
  const activations = p.layers * (16 * p.batch * p.seq * p.hidden + 2 * heads * p.batch * p.seq * p.seq) * act;
  return p.params * perParam + activations;
}

export default async function check({ figure, params, assert }) {
  const p = {
    params: 1e9, precision: 'fp32', optimizer: 'adam', batch: 32, seq: 128, hidden: 2048, layers: 20, gpu: 'a100-80gb',
    ...params,
  };
  const cell = (term, column = 2) => figure.locator(`tr[data-term="${term}"] td`).nth(column - 1).textContent();
  const waitCell = (term, text) => figure.locator(`tr[data-term="${term}"]`, { hasText: text }).waitFor({ timeout: 3000 });

  assert.equal(await figure.locator('.fallback').isHidden(), true);
  assert.equal(await figure.getByLabel('Precision', { exact: true }).inputValue(), p.precision);
  assert.equal(await figure.getByLabel('Optimizer', { exact: true }).inputValue(), p.optimizer);
  assert.equal(await cell('total'), `${(expectedTotal(p) / GIB).toFixed(2)} GiB`, 'starting total');
  if (USABLE_GIB[p.gpu] !== undefined) {
    assert.equal(await cell('gpu'), `${USABLE_GIB[p.gpu].toFixed(2)} GiB`, 'usable memory, not the size on the box');
  }
  assert.equal(
    await figure.locator('tr[data-term="copies"]').count(),
    p.precision.endsWith('-mixed') ? 1 : 0,
    'autocast adds the 16-bit weight copies, nothing else does',
  );

  // The lesson's case: 1e9 parameters, FP32, Adam → 16 bytes per parameter, 14.90 GiB.
  await figure.getByLabel('Parameters', { exact: true }).fill('1000000000');
  await figure.getByLabel('Precision', { exact: true }).selectOption('fp32');
  await figure.getByLabel('Optimizer', { exact: true }).selectOption('adam');
  await waitCell('floor', '14.90 GiB');
  assert.equal(await cell('floor', 1), '16');
  assert.equal(await cell('weights'), '3.73 GiB');
  assert.equal(await cell('gradients'), '3.73 GiB');
  assert.equal(await cell('optimizer'), '7.45 GiB');
  assert.ok((await figure.locator('.tw-hint').first().textContent()).includes('1.00 billion'));

  // Mixed precision keeps the floor; only activations (and the copies) change.
  await figure.getByLabel('Precision', { exact: true }).selectOption('bf16-mixed');
  await waitCell('copies', '1.86 GiB');
  assert.equal(await cell('floor'), '14.90 GiB');

  // SGD keeps no state: the optimizer bar goes away, weights and gradients stay.
  await figure.getByLabel('Precision', { exact: true }).selectOption('fp32');
  await figure.getByLabel('Optimizer', { exact: true }).selectOption('sgd');
  await waitCell('floor', '7.45 GiB');
  assert.equal(await cell('optimizer'), '0.00 GiB');
  assert.equal(await cell('weights'), '3.73 GiB');

  // A "16 GB" T4 leaves 14.06 GiB usable: the 14.90 GiB floor alone is already out of memory.
  await figure.getByLabel('Optimizer', { exact: true }).selectOption('adam');
  await figure.getByLabel('GPU', { exact: true }).selectOption('t4-16gb');
  await waitCell('gpu', `${USABLE_GIB['t4-16gb'].toFixed(2)} GiB`);
  await waitCell('gpu-reported', '14.56 GiB');
  await figure.locator('.tw-verdict-bad').waitFor({ timeout: 3000 });

  // A big batch: activations cross the OOM line of an A100 80 GB.
  await figure.getByLabel('Optimizer', { exact: true }).selectOption('adam');
  await figure.getByLabel('GPU', { exact: true }).selectOption('a100-80gb');
  await figure.getByLabel('Batch size', { exact: true }).fill('1024');
  await figure.locator('.tw-verdict-bad').waitFor({ timeout: 3000 });
  const verdict = await figure.locator('.tw-verdict').textContent();
  assert.ok(verdict.startsWith('Out of memory'), verdict);
  await figure.getByLabel('Batch size', { exact: true }).fill('32');
  await figure.locator('.tw-verdict:not(.tw-verdict-bad)').waitFor({ timeout: 3000 });
}
