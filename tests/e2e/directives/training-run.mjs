// e2e check for the "training-run" live experiment (web/static/js/experiments/training-run.js):
// train a tiny model for a few steps, expect the loss curve (canvas), a positive step
// time and throughput, and a second run to appear beside the first for comparison.
// Then the latest run's GEMM throughput against this device's ceiling, and the run's trace
// (tests/e2e/lib/trace-view.mjs): lanes, table, the downloaded file's tracks.
import { parseMs, assertConsistent } from '../lib/verdicts.mjs';
import { checkTraceView, onGpu } from '../lib/trace-view.mjs';

export default async function check({ page, figure, assert }) {
  await figure.locator('input[name="steps"]').waitFor({ timeout: 60_000 });
  await figure.locator('input[name="batch"]').fill('16');
  await figure.locator('input[name="hidden"]').fill('16');
  await figure.locator('input[name="steps"]').fill('20');
  await figure.locator('input[name="log_every"]').fill('5');
  await figure.getByRole('button', { name: 'Train' }).click();
  await figure.locator('.exp-chart canvas').first().waitFor({ timeout: 60_000 });
  assert.match(await figure.locator('.exp-chart').getAttribute('aria-label'), /training loss against step/);
  const stats = await figure.locator('.exp-stat').allInnerTexts();
  const throughput = stats.find((s) => s.startsWith('Throughput'));
  assert.ok(throughput, `a throughput stat: ${stats}`);
  assert.ok(Number.parseFloat(throughput.split('\n')[1].replace(/,/g, '')) > 0, throughput);
  const runs = figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr', { hasText: 'Run 1' });
  assert.equal(await runs.count(), 1);
  await figure.locator('select[name="precision"]').selectOption('bf16');
  await figure.getByRole('button', { name: 'Train' }).click();
  await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr', { hasText: 'Run 2 (latest)' }).waitFor({ timeout: 60_000 });
  assert.match(await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr', { hasText: 'Run 2' }).innerText(), /BF16/);
  // The BF16 run's logging verdict agrees with the numbers it quotes.
  const caption = await figure.locator('.exp-finding', { hasText: 'every step' }).first().innerText();
  const m = /reading every step took ([^,]+?) per step and every \d+ steps (.+?), while single steps of this run ranged (.+?)–(.+?)\. /.exec(caption);
  assert.ok(m, `the logging verdict quotes its numbers: ${caption}`);
  const cpu = (await figure.locator('details.exp-provenance').last().textContent()).includes('(CPU backend)');
  assertConsistent(assert, caption, parseMs(m[1]), parseMs(m[2]), parseMs(m[4]) - parseMs(m[3]), cpu);
  const placed = figure.locator('.exp-ceilings .exp-finding');
  await placed.first().waitFor({ timeout: 10_000 });
  const ceilings = (await placed.allInnerTexts()).join(' ');
  assert.match(ceilings, /^Counting only its GEMMs \([\d.,]+ MFLOP a step\), the training step ran at [\d.]+% of this device's ceiling for (SGEMM \(FP32\)|GEMM, BF16)/, ceilings);
  // The run's trace: lanes, table and the downloadable file, its tracks named.
  const gpu = await onGpu(page);
  await checkTraceView({ page, figure, assert }, 'training', gpu ? [/^CPU: launch calls/, /^GPU stream/] : [/^CPU: training steps/]);
}
