// e2e check for the "allocator-playground" live experiment
// (web/static/js/experiments/allocator-playground.js): reset, allocate two tensors, free
// one (allocated drops, reserved stays), empty the cache (reserved drops), then allocate
// past the cap and expect the PyTorch-worded out-of-memory error.
const MIB = 1024 * 1024;

// Allocating past the cap is refused with 422 on purpose (the OOM message is the lesson).
export const expectedErrors = [
  /^HTTP 422: POST \/api\/playground\/tensors$/,
  /^console error: Failed to load resource: the server responded with a status of 422/,
];

function bytes(text) {
  const [n, unit] = text.trim().replace(/,/g, '').split(/\s+/);
  return Number(n) * ({ B: 1, KiB: 1024, MiB: MIB, GiB: MIB * 1024 }[unit]);
}

export default async function check({ page, figure, assert }) {
  const status = figure.locator('.exp-status-text');
  const number = async (what) => bytes(await figure.locator('.exp-table tbody tr', { hasText: what }).first().locator('td').innerText());
  await figure.locator('.exp-table').waitFor({ timeout: 60_000 });
  await figure.getByRole('button', { name: 'Reset the playground' }).click();
  await status.filter({ hasText: 'reset' }).waitFor({ timeout: 60_000 });

  for (const [name, mib] of [['weights', '2'], ['acts', '1']]) {
    await figure.getByLabel('Tensor name').fill(name);
    await figure.getByLabel('Size (MiB)').fill(mib);
    await figure.getByRole('button', { name: 'Allocate', exact: true }).click();
    await status.filter({ hasText: `Allocated ${name}` }).waitFor({ timeout: 60_000 });
  }
  assert.equal(await number('Allocated (live tensors)'), 3 * MIB);
  assert.equal(await number('Reserved (pool)'), 3 * MIB);

  // Predict, then measure: reserved after the del (it stays at 3 MiB).
  await figure.locator('fieldset.exp-predict input.exp-predict-number').fill('3');
  await figure.getByRole('button', { name: 'del weights: free the tensor weights' }).click();
  await status.filter({ hasText: 'del weights' }).waitFor({ timeout: 60_000 });
  const reveal = figure.locator('section.exp-reveal');
  await reveal.waitFor({ timeout: 10_000 });
  assert.match(await reveal.locator('.exp-reveal-sentence').innerText(), /^You predicted 3 MiB; this server measured 3 MiB: spot on/);
  assert.match(await reveal.locator('.exp-reveal-link a').getAttribute('href'), /^\/lessons\/gpu-memory#/);
  const stored = await page.evaluate(async () => (await (await fetch('/api/me/progress')).json()).predictions);
  const last = stored[stored.length - 1];
  assert.equal(last.quantity, 'playground.reserved_after_free');
  assert.equal(last.predicted, 3);
  assert.equal(last.measured, 3);
  assert.equal(await number('Allocated (live tensors)'), 1 * MIB, 'freeing drops allocated');
  assert.equal(await number('Reserved (pool)'), 3 * MIB, 'freeing keeps the block reserved');

  await figure.getByRole('button', { name: 'torch.cuda.empty_cache()' }).click();
  await status.filter({ hasText: 'empty_cache() returned' }).waitFor({ timeout: 60_000 });
  assert.equal(await number('Reserved (pool)'), 1 * MIB, 'empty_cache releases the cached block');

  await figure.getByRole('button', { name: /Allocate past the cap/ }).click();
  const oom = figure.locator('pre.exp-oom');
  await oom.waitFor({ timeout: 60_000 });
  assert.match(await oom.innerText(), /CUDA out of memory\. Tried to allocate/);
  assert.match(await status.innerText(), /Out of memory/);
  assert.equal(await figure.locator('.exp-bars[role="img"]').count(), 1, 'the bar chart is labelled');
  await figure.getByRole('button', { name: 'Reset the playground' }).click();
}
