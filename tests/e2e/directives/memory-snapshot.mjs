// e2e check for the "memory-snapshot" live experiment
// (web/static/js/experiments/memory-snapshot.js): the snapshot shows stacked bars with a
// summary label and a table whose used bytes are above zero, and can be taken again.
export default async function check({ figure, assert }) {
  const bars = figure.locator('.exp-bars[role="img"]');
  await bars.waitFor({ timeout: 60_000 });
  assert.match(await bars.getAttribute('aria-label'), /used/);
  assert.ok(await figure.locator('.exp-track .exp-seg').count() >= 1, 'bar segments drawn');
  const used = await figure.locator('.exp-table tbody tr').first().locator('td').first().innerText();
  assert.ok(Number.parseFloat(used) > 0, `memory in use: ${used}`);
  await figure.getByRole('button', { name: 'Take a new snapshot' }).click();
  await figure.locator('.exp-status-done', { hasText: 'Snapshot taken at' }).waitFor({ timeout: 60_000 });
}
