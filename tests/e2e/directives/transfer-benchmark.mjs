// e2e check for the "transfer-benchmark" live experiment
// (web/static/js/experiments/transfer-benchmark.js): pick a small largest copy, run the
// sweep, and expect a chart (canvas) and bandwidth numbers above zero in the table, and
// on the CPU backend a caption that describes the curve in that table (where it peaks).
// Then the run's trace (tests/e2e/lib/trace-view.mjs): lanes, table, the downloaded file's tracks.
import { checkTraceView, onGpu } from '../lib/trace-view.mjs';

export default async function check({ page, figure, assert }) {
  const select = figure.locator('select[name="max_bytes"]');
  await select.waitFor({ timeout: 60_000 });
  const values = (await select.locator('option').evaluateAll((options) => options.map((o) => Number(o.value))));
  assert.ok(values.length > 0, 'the size picker has options');
  const small = values.filter((v) => v <= 1 << 20);
  await select.selectOption(String(small.length ? small[small.length - 1] : values[0]));
  await figure.getByRole('button', { name: 'Run the benchmark' }).click();
  await figure.locator('.exp-chart canvas').first().waitFor({ timeout: 60_000 });
  const chart = figure.locator('.exp-chart[role="img"]');
  assert.match(await chart.getAttribute('aria-label'), /bandwidth in GB\/s/);
  assert.match(await chart.getAttribute('aria-label'), /shaded band .* middle half of its samples/);
  assert.match(await figure.locator('.exp-legend').innerText(), /Shaded: middle half of the samples \(IQR\)/);
  const cells = await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody td').allInnerTexts();
  assert.ok(cells.length > 0, 'the table has rows');
  const medians = cells.map((c) => Number.parseFloat(c.replace(/,/g, '')));
  assert.ok(medians.some((m) => m > 0), `a bandwidth above zero: ${cells.join(' | ')}`);
  assert.match(await figure.locator('.exp-status-text').innerText(), /^Done/);
  const first = await figure.locator('.exp-finding').first().innerText();
  if (/No GPU/.test(first)) {
    const rows = await figure.locator('.exp-table:not(.exp-trace .exp-table) tbody tr').evaluateAll((trs) =>
      trs.map((tr) => Number.parseFloat(tr.cells[1].innerText.replace(/,/g, ''))));
    // Every size whose rounded median ties for the top could be the raw maximum.
    const tops = rows.flatMap((v, i) => (v === Math.max(...rows) ? [i] : []));
    const allowed = tops.map((i) => (i === 0 ? /smallest copy .* was the fastest/ : i === rows.length - 1 ? /rose with size/ : /peaked at/));
    assert.ok(allowed.some((re) => re.test(first)), `the caption matches the table's medians ${rows.join(', ')}: ${first}`);
  }
  assert.ok(await figure.locator('details.exp-provenance').count() === 1, 'the provenance stamp is shown');
  if (/No GPU/.test(first)) {
    // Beside a CPU run: what a GPU shows, labelled as published peaks with their sources.
    const aside = figure.locator('aside.exp-reference[data-reference-for="transfer"]');
    await aside.locator('li').first().waitFor({ timeout: 10_000 });
    const text = await aside.innerText();
    assert.match(text, /What a GPU shows \(reference, not this server\)/);
    assert.match(text, /host↔GPU link \(PCIe\): \d+ GB\/s Published peak, not measured/);
    const links = await aside.locator('a').evaluateAll((as) => as.map((a) => a.href));
    assert.ok(links.length > 0 && links.every((h) => h.startsWith('https://')), `sources linked: ${links}`);
  }
  // The run's trace: lanes, table and the downloadable file, its tracks named.
  const gpu = await onGpu(page);
  await checkTraceView({ page, figure, assert }, 'transfer', [gpu ? /^GPU stream: copies/ : /^CPU: memcpy/]);
  // Where the result sits against this device's ceilings, measured at start-up.
  const placed = figure.locator('.exp-ceilings .exp-finding');
  await placed.first().waitFor({ timeout: 10_000 });
  assert.match((await placed.allInnerTexts()).join(' '), /ran at \d+% of this device's ceiling for/);
}
