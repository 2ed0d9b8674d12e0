// e2e check for the "allocator-playground" live experiment
// (web/static/js/experiments/allocator-playground.js): reset, allocate a 2 MiB and a
// 1 MiB tensor (a 20 MiB large-pool segment and a 2 MiB small one, drawn as segment bars),
// predict and free one (allocated drops, reserved stays), empty the cache (only the
// entirely free segment goes), download the memory_viz snapshot, switch on
// expandable_segments, then allocate past the cap and expect PyTorch's OOM wording.
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
  assert.equal(await number('Reserved (pool)'), 22 * MIB, 'a 20 MiB large segment and a 2 MiB small one');
  const segments = figure.locator('.exp-segments .exp-segment');
  assert.equal(await segments.count(), 2);
  const captions = await segments.locator('.exp-segment-caption').allInnerTexts();
  assert.ok(captions.some((c) => /large pool, 20 MiB\): weights 2 MiB, free 18 MiB \(split\)/.test(c)), captions.join(' | '));
  assert.ok(captions.some((c) => /small pool, 2 MiB\): acts 1 MiB, free 1 MiB \(split\)/.test(c)), captions.join(' | '));

  // Predict, then measure: reserved but unallocated after the del (22 − 1 = 21 MiB).
  await figure.locator('fieldset.exp-predict input.exp-predict-number').fill('21');
  await figure.getByRole('button', { name: 'del weights: free the tensor weights' }).click();
  await status.filter({ hasText: 'del weights' }).waitFor({ timeout: 60_000 });
  const reveal = figure.locator('section.exp-reveal');
  await reveal.waitFor({ timeout: 10_000 });
  assert.match(await reveal.locator('.exp-reveal-sentence').innerText(), /^You predicted 21 MiB; this server measured 21 MiB: spot on/);
  assert.match(await reveal.locator('.exp-reveal-link a').getAttribute('href'), /^\/lessons\/gpu-memory#/);
  const stored = await page.evaluate(async () => (await (await fetch('/api/me/progress')).json()).predictions);
  const last = stored[stored.length - 1];
  assert.equal(last.quantity, 'playground.unallocated_after_free');
  assert.equal(last.predicted, 21);
  assert.equal(last.measured, 21);
  assert.equal(await number('Allocated (live tensors)'), 1 * MIB, 'freeing drops allocated');
  assert.equal(await number('Reserved (pool)'), 22 * MIB, 'freeing keeps the segment reserved');

  await figure.getByRole('button', { name: 'torch.cuda.empty_cache()' }).click();
  await status.filter({ hasText: 'empty_cache() returned' }).waitFor({ timeout: 60_000 });
  assert.equal(await number('Reserved (pool)'), 2 * MIB, 'only the entirely free 20 MiB segment goes back');
  assert.equal(await segments.count(), 1);

  // The snapshot downloads as a pickle (protocol 2+ starts with 0x80).
  const link = figure.getByRole('link', { name: /Download snapshot/ });
  assert.equal(await link.getAttribute('href'), '/api/playground/snapshot');
  const head = await page.evaluate(async () => {
    const r = await fetch('/api/playground/snapshot');
    return [r.status, r.headers.get('content-type'), new Uint8Array(await r.arrayBuffer())[0]];
  });
  assert.deepEqual(head, [200, 'application/octet-stream', 0x80]);

  // expandable_segments:True restarts the playground with one growing segment per pool.
  await figure.getByLabel('expandable_segments:True').check();
  await figure.getByRole('button', { name: 'Apply and restart the playground' }).click();
  await status.filter({ hasText: 'new allocator options' }).waitFor({ timeout: 60_000 });
  await figure.getByLabel('Tensor name').fill('grown');
  await figure.getByLabel('Size (MiB)').fill('4');
  await figure.getByRole('button', { name: 'Allocate', exact: true }).click();
  await status.filter({ hasText: 'Allocated grown' }).waitFor({ timeout: 60_000 });
  assert.match(await segments.first().innerText(), /large pool, expandable, 20 MiB/);

  await figure.getByRole('button', { name: /Allocate past the cap/ }).click();
  const oom = figure.locator('pre.exp-oom');
  await oom.waitFor({ timeout: 60_000 });
  assert.match(await oom.innerText(), /CUDA out of memory\. Tried to allocate/);
  assert.match(await status.innerText(), /Out of memory/);
  assert.equal(await figure.locator('.exp-bars[role="img"]').count(), 1, 'the bar chart is labelled');
  await figure.getByRole('button', { name: 'Reset the playground' }).click();
}
