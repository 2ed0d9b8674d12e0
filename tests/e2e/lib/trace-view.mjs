// The trace block every live experiment's panel shows under its figures
// (web/static/js/experiments/panel-trace.js): its lanes drawn as an SVG image whose title
// summarises them, its spans in a table, and a "Download trace" link that saves the
// result's Chrome trace as a JSON file. `tracks` are patterns the file's track names
// must match, one per track, in order.
import { readFile } from 'node:fs/promises';

/** Checks the trace view of the latest run in `figure`; returns the downloaded file. */
export async function checkTraceView({ page, figure, assert }, experiment, tracks) {
  const lanes = figure.locator('svg.exp-trace-lanes').last();
  await lanes.waitFor({ timeout: 90_000 });
  const label = await lanes.locator(':scope > title').textContent();
  assert.match(label, new RegExp(`${tracks.length} lanes?`), label);
  assert.ok(await lanes.locator('rect').count() >= tracks.length, 'bars drawn');
  const spans = await figure.locator('.exp-trace-table').last().locator('tbody tr').count();
  assert.ok(spans >= 1, 'spans in the table');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    figure.getByRole('link', { name: 'Download trace' }).last().click(),
  ]);
  assert.equal(download.suggestedFilename(), `gpulab-${experiment}-trace.json`);
  const file = JSON.parse(await readFile(await download.path(), 'utf8'));
  const names = file.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => e.args.name);
  assert.equal(names.length, tracks.length, `tracks: ${names}`);
  tracks.forEach((pattern, i) => assert.match(names[i], pattern));
  assert.equal(file.traceEvents.filter((e) => e.ph === 'X').length, spans, 'the table lists every event in the file');
  return file;
}

/** Whether the server runs experiments on a GPU (its device card says). */
export async function onGpu(page) {
  const device = await page.evaluate(() => fetch('/api/device').then((r) => r.json()));
  return Boolean(device.device && device.device.kind !== 'cpu');
}
