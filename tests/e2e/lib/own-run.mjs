// Check (i): a learner brings their GPU's run home, on the main server.
// - The home page (this server runs on the CPU) links the Colab notebook, which
//   downloads as a version-4 notebook.
// - On the About page a learner uploads a `gpulab bench all --json` file: a run made on
//   the CPU is refused with the server's own reason; a GPU run (the bench document
//   behind the course's H200 recording) is imported and listed as theirs ("What your
//   NVIDIA H200 measured, <date>").
// - On the transfer lesson their run appears beside their CPU run, marked as their own
//   and apart from the course's recording of the same GPU, and under the reveal with the
//   figure the file holds; another learner (a fresh browser) does not see it; removing
//   it empties the list.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { inContext, open } from './flow.mjs';
import { predictAndRun } from './reference.mjs';
import { CheckFailure, withTimeout } from './util.mjs';
import { formatSig } from '../../../web/static/js/logic/panel-format.js';
import { isoDate } from '../../../web/static/js/logic/reference-overlay.js';

const GROUP = 'own-run';
const LESSON = '/lessons/where-tensors-live';

/** The bench document behind the course's first GPU recording, as `gpulab bench all --json` wrote it. */
function benchDocument(repoRoot) {
  const dir = join(repoRoot, 'content', 'reference-runs');
  const file = readdirSync(dir).find((f) => f.startsWith('recorded-') && !f.includes('fixture') && f.endsWith('.json'));
  if (!file) throw new CheckFailure('no GPU recording in content/reference-runs to upload');
  const run = JSON.parse(readFileSync(join(dir, file), 'utf8')).recorded;
  return {
    gpulab_version: run.gpulab_version,
    generated_at_unix: run.recorded_at_unix,
    device: { kind: 'cuda', name: run.device, driver_version: run.driver_version, cuda_driver_version: run.cuda_version },
    experiments: run.experiments,
  };
}

async function upload(page, name, doc) {
  const status = page.locator('#gpu-run-status');
  const before = await status.innerText();
  await page.locator('#gpu-run-file').setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(doc)) });
  await page.locator('#gpu-run-upload button[type="submit"]').click();
  await withTimeout(page.waitForFunction((old) => {
    const text = document.getElementById('gpu-run-status').textContent;
    return text !== old && !text.startsWith('Checking');
  }, before), 15_000, `the answer to uploading ${name}`);
  return status.innerText();
}

export async function checkOwnRun(ctx) {
  const doc = benchDocument(ctx.repoRoot);
  const label = `What your ${doc.device.name} measured, ${isoDate(doc.generated_at_unix)}`;
  await inContext(ctx, {}, async (page) => {
    await ctx.report.check(GROUP, 'the home page links the Colab notebook, which downloads as a notebook', async () => {
      await open(ctx, page, '/');
      const link = page.locator('a[href="/notebooks/gpulab-colab.ipynb"]', { hasText: 'Run this course on a free Colab GPU' });
      if ((await link.count()) !== 1) throw new CheckFailure('no "Run this course on a free Colab GPU" link on the home page');
      const response = await page.request.get(`${ctx.origin}/notebooks/gpulab-colab.ipynb`);
      const notebook = JSON.parse(await response.text());
      if (response.status() !== 200 || notebook.nbformat !== 4 || !notebook.cells.length) {
        throw new CheckFailure(`GET /notebooks/gpulab-colab.ipynb: ${response.status()}, nbformat ${notebook.nbformat}`);
      }
      return `${notebook.cells.length} cells, ${response.headers()['content-disposition']}`;
    });
    await ctx.report.check(GROUP, 'a run made on the CPU is refused on the About page with the reason', async () => {
      await open(ctx, page, '/about');
      await withTimeout(page.locator('#gpu-run-list li').first().waitFor(), 10_000, 'the list of your runs');
      const cpu = { ...doc, device: { ...doc.device, kind: 'cpu' } };
      const said = await upload(page, 'cpu-run.json', cpu);
      if (!said.includes('made on the CPU backend')) throw new CheckFailure(`after a CPU run: ${said}`);
      return said;
    });
    await ctx.report.check(GROUP, 'a GPU run is imported and listed as the learner\'s own', async () => {
      const said = await upload(page, 'my-gpu-run.json', doc);
      if (!said.startsWith(`Imported: Your run on ${doc.device.name}`)) throw new CheckFailure(`after the upload: ${said}`);
      const item = page.locator('#gpu-run-list li.gpu-run', { hasText: label });
      await withTimeout(item.first().waitFor(), 10_000, 'the run in the list');
      return `${said} · listed: ${await item.first().innerText()}`;
    });
    await ctx.report.check(GROUP, 'beside the CPU run and under the reveal, as theirs and apart from the course\'s recording', async () => {
      await open(ctx, page, LESSON);
      const aside = page.locator('aside.exp-reference[data-reference-for="transfer"]');
      const own = aside.locator('li.exp-reference-own', { hasText: label });
      await withTimeout(own.first().waitFor(), 15_000, 'the learner\'s run in the transfer aside');
      const course = aside.locator('li.exp-reference-recorded:not(.exp-reference-own)', { hasText: `What ${doc.device.name} measured (recorded run` });
      if ((await course.count()) < 1) throw new CheckFailure('the course\'s own recording is no longer listed apart from the learner\'s');
      const figure = await predictAndRun(page);
      const measured = doc.experiments.find((e) => e.name === 'transfer').result.measured;
      const under = figure.locator('.exp-reveal-recorded li.exp-reference-own');
      await withTimeout(under.first().waitFor(), 10_000, 'the learner\'s run under the reveal');
      const text = await under.first().innerText();
      const want = `${label}: ${formatSig(measured.value)} ${measured.unit}`;
      if (!text.startsWith(want)) throw new CheckFailure(`under the reveal: ${text} (want ${want})`);
      return `${await own.first().innerText()} · ${text}`;
    });
    await inContext(ctx, {}, async (other) => {
      await ctx.report.check(GROUP, 'another learner does not see it', async () => {
        await open(ctx, other, LESSON);
        const aside = other.locator('aside.exp-reference[data-reference-for="transfer"]');
        await withTimeout(aside.locator('li.exp-reference-recorded').first().waitFor(), 15_000, 'the course\'s recording in the aside');
        const theirs = await aside.locator('li.exp-reference-own').count();
        if (theirs) throw new CheckFailure(`${theirs} run(s) of another learner's shown`);
        return 'only the course\'s recording';
      });
    });
    await ctx.report.check(GROUP, 'removing it empties the learner\'s list', async () => {
      await open(ctx, page, '/about');
      const remove = page.locator('#gpu-run-list li.gpu-run button');
      await withTimeout(remove.first().waitFor(), 10_000, 'the Remove button');
      await remove.first().click();
      await withTimeout(page.locator('#gpu-run-list li.gpu-run-none').waitFor(), 10_000, 'the empty list');
      return page.locator('#gpu-run-status').innerText();
    });
  });
}
