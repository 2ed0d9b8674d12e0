// e2e check for the "precision-shootout" live experiment
// (web/static/js/experiments/precision-shootout.js): run the smallest product, expect
// one row per format with a positive rate and an error, and both bar charts labelled.
// Then the run's trace (tests/e2e/lib/trace-view.mjs): lanes, table, the downloaded file's tracks.
import { checkTraceView, onGpu } from '../lib/trace-view.mjs';

export default async function check({ page, figure, assert }) {
  const select = figure.locator('select[name="size"]');
  await select.waitFor({ timeout: 60_000 });
  const sizes = await select.locator('option').evaluateAll((options) => options.map((o) => Number(o.value)));
  await select.selectOption(String(Math.min(...sizes)));
  await figure.getByRole('button', { name: 'Run the shoot-out' }).click();
  await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr').first().waitFor({ timeout: 60_000 });
  const rows = await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr').allInnerTexts();
  assert.equal(rows.length, 4, `FP32, TF32, FP16, BF16: ${rows}`);
  assert.match(rows.join('\n'), /FP32[\s\S]*TF32[\s\S]*FP16[\s\S]*BF16/);
  const rates = await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr td:nth-child(4)').allInnerTexts();
  assert.ok(rates.every((r) => Number.parseFloat(r.replace(/,/g, '')) > 0), `rates above zero: ${rates}`);
  const charts = figure.locator('.exp-bars[role="img"]');
  assert.equal(await charts.count(), 2, 'rate and error charts');
  assert.match(await charts.nth(1).getAttribute('aria-label'), /relative error/);
  assert.ok(await figure.locator('.exp-seg').count() >= 8, 'a bar per format in each chart');
  // The run's trace: lanes, table and the downloadable file, its tracks named.
  const gpu = await onGpu(page);
  await checkTraceView({ page, figure, assert }, 'precision', [gpu ? /^GPU stream/ : /^CPU: SGEMM/]);
}
