// Check (g): a recorded run beside a CPU run. A second server reads a copy of the course
// with the test fixture tests/fixtures/reference-runs/cpu-chain-fixture.json added (a
// run made on the CPU by tests/gpu/gpu-run.sh --cpu, so it must say it is not a GPU):
// the transfer panel's "What a GPU shows" aside lists it with its provenance, the reveal
// after a prediction shows what that run measured for the same question, and axe finds
// nothing serious on the page in that state, light and dark.

import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { axeOn, inContext, open } from './flow.mjs';
import { startServer } from './server.mjs';
import { CheckFailure, withTimeout } from './util.mjs';

const GROUP = 'reference';
const LESSON = '/lessons/where-tensors-live';
const FIXTURE = 'tests/fixtures/reference-runs/cpu-chain-fixture.json';

/** Predicts 3 GB/s on the transfer panel, runs a small sweep; returns the figure. */
async function predictAndRun(page) {
  const figure = page.locator('figure[data-experiment="transfer-benchmark"]');
  await figure.locator('fieldset.exp-predict input.exp-predict-number').fill('3');
  const select = figure.locator('select[name="max_bytes"]');
  const values = await select.locator('option').evaluateAll((os) => os.map((o) => Number(o.value)));
  await select.selectOption(String(Math.min(...values)));
  await figure.locator('button.exp-run').click();
  await withTimeout(figure.locator('section.exp-reveal').waitFor(), 60_000, 'the reveal');
  await withTimeout(figure.locator('.exp-reveal-recorded li').first().waitFor(), 10_000, 'the recorded line under the reveal');
  return figure;
}

export async function checkReference(ctx) {
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
        const item = aside.locator('li.exp-reference-recorded');
        await withTimeout(item.first().waitFor(), 15_000, 'the recorded run in the aside');
        const listed = await item.first().innerText();
        if (!/^Test fixture from GPU Lab's CPU chain on .+: not a GPU \(driver .+, \d{4}-\d{2}-\d{2}, GPU Lab [\d.]+\)/.test(listed)) {
          throw new CheckFailure(`the aside lists: ${listed}`);
        }
        const figure = await predictAndRun(page);
        const under = await figure.locator('.exp-reveal-recorded li').first().innerText();
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
