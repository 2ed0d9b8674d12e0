// Check (h): recorded runs beside a CPU run.
// - The course as shipped: every lesson page whose panels an experiment of a GPU
//   recording in content/reference-runs/ drives lists that recording in the panel's
//   "What a GPU shows" aside, labelled with its device and date and with its
//   provenance, and the transfer reveal shows the very figure the file holds.
// - A second server reads a copy of the course with the test fixture
//   tests/fixtures/reference-runs/cpu-chain-fixture.json added (a run made on the CPU
//   by tests/gpu/gpu-run.sh --cpu, so it must say it is not a GPU): the transfer aside
//   lists it with its provenance, the reveal after a prediction shows what that run
//   measured for the same question, and axe finds nothing serious on the page in that
//   state, light and dark.

import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { axeOn, inContext, open } from './flow.mjs';
import { startServer } from './server.mjs';
import { CheckFailure, withTimeout } from './util.mjs';
import { readCourse, lessonPath } from './course.mjs';
import { waitForMount } from './directives.mjs';
import { formatSig } from '../../../web/static/js/logic/panel-format.js';
import { isoDate } from '../../../web/static/js/logic/reference-overlay.js';

const GROUP = 'reference';
const LESSON = '/lessons/where-tensors-live';
const FIXTURE = 'tests/fixtures/reference-runs/cpu-chain-fixture.json';

/** Predicts 3 GB/s on the transfer panel, runs a small sweep; returns the figure. */
export async function predictAndRun(page) {
  const figure = page.locator('figure[data-experiment="transfer-benchmark"]');
  await figure.locator('fieldset.exp-predict input.exp-predict-number').fill('3');
  const select = figure.locator('select[name="max_bytes"]');
  const values = await select.locator('option').evaluateAll((os) => os.map((o) => Number(o.value)));
  await select.selectOption(String(Math.min(...values)));
  await figure.locator('button.exp-run').click();
  await withTimeout(figure.locator('section.exp-reveal').waitFor(), 60_000, 'the reveal');
  await withTimeout(figure.locator('.exp-reveal-recorded li').first().waitFor(), 10_000, 'a recorded line under the reveal');
  return figure;
}

/** The GPU recordings shipped in content/reference-runs (no fixture among them). */
function shippedRecordings(repoRoot) {
  const dir = join(repoRoot, 'content', 'reference-runs');
  return readdirSync(dir)
    .filter((f) => f.startsWith('recorded-') && f.endsWith('.json'))
    .map((f) => ({ file: f, doc: JSON.parse(readFileSync(join(dir, f), 'utf8')) }))
    .filter(({ doc }) => doc.kind === 'recorded' && !doc.recorded.fixture);
}

/** "What NVIDIA H200 measured (recorded run, 2026-11-28)" and its provenance, as the page writes them. */
function labelOf(run) {
  const provenance = [`driver ${run.driver_version}`, run.cuda_version && `CUDA ${run.cuda_version}`,
    isoDate(run.recorded_at_unix), `GPU Lab ${run.gpulab_version}`].filter(Boolean).join(', ');
  return { label: `What ${run.device} measured (recorded run, ${isoDate(run.recorded_at_unix)})`, provenance };
}

/** On the main server (the course as shipped): every aside of a recorded experiment lists each recording. */
async function checkShipped(ctx) {
  const recordings = shippedRecordings(ctx.repoRoot);
  if (!recordings.length) {
    await ctx.report.check(GROUP, 'the shipped GPU recordings beside every CPU panel', async () => 'no recording shipped: nothing to check');
    return;
  }
  const { lessons } = readCourse(ctx.repoRoot);
  await inContext(ctx, {}, async (page) => {
    for (const { file, doc } of recordings) {
      const run = doc.recorded;
      const { label, provenance } = labelOf(run);
      const experiments = new Set(run.experiments.map((e) => e.name));
      await ctx.report.check(GROUP, `${file}: listed, labelled and dated in every aside of its experiments`, async () => {
        const seen = new Set();
        for (const { slug } of lessons) {
          await open(ctx, page, lessonPath(slug));
          await waitForMount(page, 15_000);
          const asides = page.locator('aside.exp-reference[data-reference-for]');
          const count = await asides.count();
          for (let i = 0; i < count; i += 1) {
            const aside = asides.nth(i);
            const name = await aside.getAttribute('data-reference-for');
            if (!experiments.has(name)) continue;
            const items = aside.locator('li.exp-reference-recorded', { hasText: label });
            await withTimeout(items.first().waitFor(), 15_000, `${slug}: the ${name} aside's line for ${run.device}`);
            const text = await items.first().innerText();
            if (!text.startsWith(`${label} (${provenance})`)) throw new CheckFailure(`${slug}, ${name}: ${text}`);
            seen.add(name);
          }
        }
        if (!seen.has('transfer')) throw new CheckFailure(`no transfer aside listed ${label}`);
        return `${label} (${provenance}) beside ${[...seen].sort().join(', ')}`;
      });
      const transfer = run.experiments.find((e) => e.name === 'transfer');
      const measured = transfer && transfer.result.measured;
      if (!measured) continue;
      await ctx.report.check(GROUP, `${file}: the transfer reveal shows the file's own figure`, async () => {
        await open(ctx, page, LESSON);
        const figure = await predictAndRun(page);
        const line = figure.locator('.exp-reveal-recorded li', { hasText: label });
        await withTimeout(line.first().waitFor(), 10_000, `the reveal's line for ${run.device}`);
        const text = await line.first().innerText();
        const want = `${label}: ${formatSig(measured.value)} ${measured.unit}`;
        if (!text.startsWith(want)) throw new CheckFailure(`under the reveal: ${text} (the file holds ${measured.value} ${measured.unit}: ${want})`);
        return text;
      });
    }
  });
}

export async function checkReference(ctx) {
  await checkShipped(ctx);
  const content = mkdtempSync(join(tmpdir(), 'gpulab-e2e-content-'));
  cpSync(join(ctx.repoRoot, 'content'), content, { recursive: true });
  cpSync(join(ctx.repoRoot, FIXTURE), join(content, 'reference-runs', 'recorded-fixture-cpu-chain.json'));
  const server = await startServer({
    bin: ctx.bin, cwd: ctx.repoRoot, logPath: join(ctx.artifacts, 'server-reference.log'), extraArgs: ['--content', content],
  });
  try {
    const rctx = { ...ctx, origin: server.origin };
    await inContext(rctx, {}, async (page, _monitor, context) => {
      await ctx.report.check(GROUP, 'a recorded run beside a CPU run and under its reveal, labelled; axe light and dark', async () => {
        await open(rctx, page, LESSON);
        const aside = page.locator('aside.exp-reference[data-reference-for="transfer"]');
        const item = aside.locator('li.exp-reference-recorded', { hasText: 'Test fixture' });
        await withTimeout(item.first().waitFor(), 15_000, 'the recorded run in the aside');
        const listed = await item.first().innerText();
        if (!/^Test fixture from GPU Lab's CPU chain on .+: not a GPU \(driver .+, \d{4}-\d{2}-\d{2}, GPU Lab [\d.]+\)/.test(listed)) {
          throw new CheckFailure(`the aside lists: ${listed}`);
        }
        const figure = await predictAndRun(page);
        const under = await figure.locator('.exp-reveal-recorded li', { hasText: 'not a GPU' }).first().innerText();
        if (!/not a GPU: [\d.,]+ GB\/s for the same question — driver /.test(under)) throw new CheckFailure(`under the reveal: ${under}`);
        const light = await axeOn(rctx, context, LESSON, predictAndRun);
        const dark = await axeOn(rctx, context, LESSON, predictAndRun, { colorScheme: 'dark' });
        return `${under} · light ${light}; dark ${dark}`;
      });
    });
  } finally {
    await server.stop();
    rmSync(content, { recursive: true, force: true });
  }
}
