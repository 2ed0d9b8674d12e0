// e2e check of the token positions calculator (lesson 7): batch × sequence positions,
// halving either halves them (50%), and halving the sequence leaves 25% of the attention
// scores. Expected values are computed from the directive's params.
export default async function check({ figure, params, assert }) {
  const batch = Number(params.batch ?? 32);
  const seq = Number(params.seq ?? 128);
  const fmt = (n) => n.toLocaleString('en-US');
  const share = (key) => figure.locator(`tr[data-quantity="${key}"] td`).nth(2).textContent();
  const headline = figure.locator('.tw-tokens-headline');

  assert.equal(await figure.locator('.fallback').isHidden(), true);
  assert.ok((await headline.textContent()).startsWith(`${fmt(batch)} × ${fmt(seq)} = ${fmt(batch * seq)} token positions`));
  if (batch === 32 && seq === 128) assert.ok((await headline.textContent()).includes('32 × 128 = 4,096'));

  await figure.getByRole('button', { name: 'Halve the batch' }).click();
  await headline.filter({ hasText: `= ${fmt(Math.floor(batch / 2) * seq)} token` }).waitFor({ timeout: 3000 });
  assert.equal(await share('positions'), '50%');
  assert.equal(await share('attention'), '50%');

  await figure.getByRole('button', { name: `Back to ${batch} × ${seq}` }).click();
  await figure.getByRole('button', { name: 'Halve the sequence' }).click();
  await headline.filter({ hasText: `= ${fmt(batch * Math.floor(seq / 2))} token` }).waitFor({ timeout: 3000 });
  assert.equal(await share('positions'), '50%');
  assert.equal(await share('attention'), '25%');
  assert.equal(await figure.getByLabel('Sequence length (tokens)').inputValue(), String(Math.floor(seq / 2)));

  // Typing a doubled sequence: twice the positions, four times the attention scores.
  await figure.getByLabel('Sequence length (tokens)').fill(String(seq * 2));
  await headline.filter({ hasText: `= ${fmt(batch * seq * 2)} token` }).waitFor({ timeout: 3000 });
  assert.equal(await share('positions'), '200%');
  assert.equal(await share('attention'), '400%');
  await figure.getByRole('button', { name: `Back to ${batch} × ${seq}` }).click();
  assert.equal(await share('attention'), '100%');
}
