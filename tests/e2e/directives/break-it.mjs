// e2e check for the "break-it" live experiment (web/static/js/experiments/break-it.js),
// for either case the directive names: batch-on-host lists where each buffer lives with
// PyTorch's error and the fix; log-every-step compares two runs' throughput.
import { parseSpread, assertConsistent } from '../lib/verdicts.mjs';

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
    // The verdict agrees with the two runs' step times shown in the table.
    const times = (await figure.locator('.exp-table tbody tr td:nth-child(3)').allInnerTexts()).map(parseSpread);
    const cpu = (await figure.locator('details.exp-provenance').textContent()).includes('(CPU backend)');
    const caption = await figure.locator('.exp-finding').first().innerText();
    const noise = ((times[0].max - times[0].min) + (times[1].max - times[1].min)) / 2;
    assertConsistent(assert, caption, times[0].median, times[1].median, noise, cpu);
    const stat = await figure.locator('.exp-stat-value').first().innerText();
    assert.doesNotMatch(stat, /^1×$/, `the headline never shows a bare 1×: ${stat}`);
  }
}
