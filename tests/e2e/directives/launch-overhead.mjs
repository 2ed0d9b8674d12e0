// e2e check for the "launch-overhead" live experiment (web/static/js/experiments/launch-overhead.js):
// run a short sweep, expect the four headline numbers, one table row per chain length and
// way, the CPU stand-in labelled as such on a server without a GPU, and the trace: its
// lanes drawn as an SVG image with a text summary, its spans in a table, and a
// "Download trace" link that saves a JSON file whose events name both tracks; the eager
// chain against this device's memory ceiling on a GPU, and why none applies on the CPU.
import { readFile } from 'node:fs/promises';

export const timeout = 120_000;

export default async function check({ page, figure, assert }) {
  await figure.locator('input[name="max_kernels"]').fill('100');
  await figure.getByRole('button', { name: 'Run the launch test' }).click();
  await figure.locator('svg.exp-trace-lanes').waitFor({ timeout: 90_000 });
  const values = await figure.locator('.exp-stat-value').allInnerTexts();
  assert.equal(values.length, 4, `launch call, two speed-ups, saving per step: ${values}`);
  assert.match(values[0], /^[\d.,]+ µs$/, values[0]);
  assert.match(values[1], /×$/, values[1]);
  // Chains of 1, 10 and 100 steps, three ways each.
  assert.match(await figure.locator('.exp-table-block').first().locator('tbody th').first().innerText(), /^1 × /);
  const rows = await figure.locator('.exp-table-block').first().locator('tbody tr').count();
  assert.equal(rows, 9, 'three chain lengths × three ways');
  const device = await page.evaluate(() => fetch('/api/device').then((r) => r.json()));
  if (device.device && device.device.kind === 'cpu') {
    assert.match(await figure.locator('.exp-finding').allInnerTexts().then((t) => t.join(' ')), /worker thread plays the GPU stream/);
  }
  const placed = figure.locator('.exp-ceilings .exp-finding');
  await placed.first().waitFor({ timeout: 10_000 });
  const ceilings = (await placed.allInnerTexts()).join(' ');
  assert.match(ceilings, device.device && device.device.kind === 'cpu'
    ? /^No ceiling applies on the CPU stand-in: each step's [\d.]+ KiB stays in the processor's cache/
    : /^The 100-step eager chain ran at [\d.]+% of this device's ceiling for Device memory/, ceilings);
  const label = await figure.locator('svg.exp-trace-lanes > title').textContent();
  assert.match(label, /2 lanes/, label);
  assert.ok(await figure.locator('svg.exp-trace-lanes rect').count() > 10, 'bars drawn');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    figure.getByRole('link', { name: 'Download trace' }).click(),
  ]);
  assert.equal(download.suggestedFilename(), 'gpulab-launch-trace.json');
  const file = JSON.parse(await readFile(await download.path(), 'utf8'));
  const names = file.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => e.args.name);
  assert.equal(names.length, 2, `two tracks: ${names}`);
  assert.ok(file.traceEvents.some((e) => e.ph === 'X' && e.cat === 'launch'), 'launch calls in the file');
}
