// e2e check for the "matmul-crossover" live experiment
// (web/static/js/experiments/matmul-crossover.js): run a small sweep, expect a chart
// (canvas) and positive times in the table, and switch the chart to GFLOP/s; the CPU
// line's comparison with OpenBLAS on this machine, or how to record one, is stated.
// Then the run's trace (tests/e2e/lib/trace-view.mjs): lanes, table, the downloaded file's tracks.
import { checkTraceView, onGpu } from '../lib/trace-view.mjs';

export default async function check({ page, figure, assert }) {
  const select = figure.locator('select[name="max_size"]');
  await select.waitFor({ timeout: 60_000 });
  const sizes = await select.locator('option').evaluateAll((options) => options.map((o) => Number(o.value)));
  const small = sizes.filter((n) => n <= 128);
  await select.selectOption(String(small.length ? small[small.length - 1] : sizes[0]));
  await figure.getByRole('button', { name: 'Run the sweep' }).click();
  await figure.locator('.exp-chart canvas').first().waitFor({ timeout: 60_000 });
  assert.match(await figure.locator('.exp-chart').getAttribute('aria-label'), /against matrix side/);
  const rows = figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr');
  assert.ok(await rows.count() >= 2, 'one row per size');
  const firstTime = await rows.first().locator('td').first().innerText();
  assert.match(firstTime, /^[\d.,]+ (ns|µs|ms|s)$/, `a time: ${firstTime}`);
  assert.ok(Number.parseFloat(firstTime) > 0);
  await figure.getByLabel('achieved GFLOP/s').check();
  await figure.locator('.exp-chart[aria-label*="GFLOP/s"] canvas').first().waitFor({ timeout: 10_000 });
  assert.match(await figure.locator('.exp-stats').innerText(), /Crossover/);
  // The spread is drawn (a shaded IQR band, named in the chart's label and legend) and
  // tabled, and the summary's outlier sentences agree with the table's outlier counts.
  assert.match(await figure.locator('.exp-chart').getAttribute('aria-label'), /interquartile range/);
  assert.match(await figure.locator('.exp-legend').innerText(), /Shaded: middle half of the samples \(IQR\)/);
  const spreads = await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr td:last-child').allInnerTexts();
  assert.ok(spreads.every((c) => /^[\d.,]+ (ns|µs|ms|s)–[\d.,]+ (ns|µs|ms|s), \d+/.test(c)), `an IQR and a sample count per size: ${spreads}`);
  const findings = (await figure.locator('.exp-finding').allInnerTexts()).join('\n');
  const flagged = spreads.some((c) => /outlier/.test(c));
  assert.equal(/Outliers \(/.test(findings), flagged, `outlier sentences match the table (${spreads}): ${findings}`);
  if (/Every point settled/.test(findings)) assert.ok(!flagged && !/Noisy points/.test(findings), findings);
  // The CPU line against OpenBLAS on this machine (a record from tests/bench/sgemm.sh), or
  // how to record one: either way the sentence names the script.
  assert.match(findings, /GPU Lab's own (CPU )?SGEMM[^\n]*tests\/bench\/sgemm\.sh|Nothing to compare with [^\n]*tests\/bench\/sgemm\.sh/, findings);
  // The run's trace: lanes, table and the downloadable file, its tracks named.
  const gpu = await onGpu(page);
  await checkTraceView({ page, figure, assert }, 'matmul', [/^CPU: SGEMM/, ...(gpu ? [/^GPU stream/] : [])]);
  // Where the result sits against this device's ceilings, measured at start-up.
  const placed = figure.locator('.exp-ceilings .exp-finding');
  await placed.first().waitFor({ timeout: 10_000 });
  assert.match((await placed.allInnerTexts()).join(' '), /The \d+ × \d+ CPU product ran at \d+% of this device's ceiling for SGEMM \(FP32\)/);
}
