// e2e check for the "doctor" live experiment (web/static/js/experiments/doctor.js): the
// layered check from GET /api/doctor shows every layer with a status word and a detail,
// plus the verdict, and reading it again keeps the same layers.
export default async function check({ figure, assert }) {
  const layers = figure.locator('.exp-layer');
  await layers.first().waitFor({ timeout: 60_000 });
  assert.ok(await figure.locator('.fallback').isHidden(), 'the no-JS fallback is hidden');
  const count = await layers.count();
  assert.ok(count >= 3, `expected the layers of the check, got ${count}`);
  for (let i = 0; i < count; i += 1) {
    const text = await layers.nth(i).innerText();
    assert.match(text, /^(OK|Failed|Skipped)/i, `layer ${i} starts with its status: ${text}`);
  }
  assert.ok((await figure.locator('.exp-finding').innerText()).length > 10, 'a verdict is shown');
  await figure.getByRole('button', { name: 'Read the report again' }).click();
  await figure.locator('.exp-status-done', { hasText: 'Report read from the server at' }).waitFor({ timeout: 60_000 });
  assert.equal(await layers.count(), count);
}
