// e2e check for the "device-card" live experiment (web/static/js/experiments/device-card.js):
// the card renders from GET /api/device, names the device, and re-reads it on request;
// once re-read, it shows this device's ceilings measured at start-up.
export default async function check({ figure, assert }) {
  const card = figure.locator('.exp-card');
  await card.waitFor({ timeout: 60_000 });
  assert.ok(await figure.locator('.fallback').isHidden(), 'the no-JS fallback is hidden');
  const text = await card.innerText();
  assert.match(text, /Runs on/);
  assert.match(text, /Host CPU/);
  await figure.getByRole('button', { name: 'Read the card again' }).click();
  await figure.locator('.exp-status-done', { hasText: 'Read from the server at' }).waitFor({ timeout: 60_000 });
  assert.ok(await figure.locator('.exp-table td').count() > 0, 'the caps table has numbers');
  const ceilings = figure.locator('.exp-ceilings-table');
  await ceilings.waitFor({ timeout: 10_000 });
  const rows = await ceilings.locator('tbody tr').allInnerTexts();
  assert.ok(rows.length >= 2, `ceilings measured: ${rows}`);
  assert.ok(rows.some((r) => /memcpy|Host→device copy/.test(r)), `a copy ceiling: ${rows}`);
  assert.ok(rows.some((r) => /GEMM/.test(r)), `a GEMM ceiling: ${rows}`);
}
