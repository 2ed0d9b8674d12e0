// e2e check for the "device-card" live experiment (web/static/js/experiments/device-card.js):
// the card renders from GET /api/device, names the device, and re-reads it on request.
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
}
