// e2e check for the "break-it" live experiment (web/static/js/experiments/break-it.js),
// for either case the directive names: batch-on-host lists where each buffer lives with
// PyTorch's error and the fix; log-every-step compares two runs' throughput.
export default async function check({ figure, params, assert }) {
  const kase = params.case === 'log-every-step' ? 'log-every-step' : 'batch-on-host';
  await figure.getByRole('button', { name: kase === 'log-every-step' ? 'Train both ways' : 'Start the broken run' }).click();
  await figure.locator('.exp-table tbody tr').first().waitFor({ timeout: 60_000 });
  assert.match(await figure.locator('.exp-status-text').innerText(), /^Done/);
  if (kase === 'batch-on-host') {
    const rows = await figure.locator('.exp-table tbody tr').allInnerTexts();
    assert.ok(rows.some((r) => /features|labels/.test(r)), `batch fields listed: ${rows}`);
    assert.match(await figure.locator('pre.exp-error-text').first().innerText(), /RuntimeError|device/);
    assert.match(await figure.locator('pre.exp-fix').innerText(), /to_device|\.to\(/);
  } else {
    const rows = await figure.locator('.exp-table tbody tr').allInnerTexts();
    assert.equal(rows.length, 2, `two runs: ${rows}`);
    const rates = await figure.locator('.exp-table tbody tr td:nth-child(4)').allInnerTexts();
    assert.ok(rates.every((r) => Number.parseFloat(r.replace(/,/g, '')) > 0), `samples/s above zero: ${rates}`);
    assert.match(await figure.locator('.exp-bars[role="img"]').getAttribute('aria-label'), /throughput/);
  }
}
