// Live experiment "streams-overlap" (lesson 5): POST /api/experiments/streams {chunks,
// chunk_mib, streams} and show how long a copy-in, compute, copy-out pipeline takes on
// one stream and on several, from pinned and from pageable memory: bars per run, the
// fastest multi-stream run as a timeline (one lane per stream), and findings computed
// from these numbers. On the CPU backend the lanes are worker threads.
// Below the figures, one chunk's copy and the whole pipeline against this device's copy
// ceiling (panel-ceiling.js), and the run's timeline from the same clock readings: lanes,
// a table and "Download trace" (panel-trace.js).

import {
  el, showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails, legend,
  experimentSpec, boundsOf, startValue,
} from './panel.js';
import { categoryBars } from './panel-bars.js';
import { formatBytes, formatMs, formatSpread, formatTimes } from '../logic/panel-format.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';

const STEP_TONES = { 'copy in': 'warn', compute: 'accent', 'copy out': 'note' };

/** The fastest run that could overlap (pinned memory, or the CPU's threads). */
const fastest = (runs) => runs.filter((r) => r.memory !== 'pageable')
  .reduce((a, b) => (b.total_ms.median < a.total_ms.median ? b : a));

const runLabel = (run, word) => `${run.streams} ${run.streams === 1 ? word.one : word.many}${run.memory === 'pageable' ? ', pageable' : ''}`;

function findings(result, word, cores) {
  const out = [];
  const runs = result.runs;
  const overlapping = runs.filter((r) => r.memory !== 'pageable');
  const best = fastest(runs);
  const serial = runs[0];
  // A speed-up counts only when it is 10% or more and the two runs' ranges do not overlap.
  const clear = best.streams > 1 && best.speedup >= 1.1 && best.total_ms.max < serial.total_ms.min;
  if (!clear) {
    out.push(finding(`More ${word.many} did not clearly help here: the fastest run used ${runLabel(best, word)} and took ${formatMs(best.total_ms.median)}, ${formatTimes(best.speedup)} the speed of one, and its times (${formatSpread(best.total_ms, formatMs)}) overlap those of one ${word.one} (${formatSpread(serial.total_ms, formatMs)}).`, 'warn'));
  } else {
    const why = word.many === 'streams'
      ? 'while one chunk computes, another is being copied'
      : 'each thread works through its own chunks while the others work through theirs';
    out.push(finding(`With ${runLabel(best, word)} the pipeline took ${formatMs(best.total_ms.median)}, ${formatTimes(best.speedup)} as fast as with one: ${why}.`, 'good'));
  }
  if (word.many === 'streams') {
    const ideal = (2 * result.copy_ms + result.compute_ms) / Math.max(result.copy_ms, result.compute_ms);
    out.push(finding(`One chunk takes ${formatMs(result.copy_ms)} to copy in and ${formatMs(result.compute_ms)} to compute, so with both copy directions and the compute fully overlapped the pipeline could approach ${formatTimes(ideal)} as fast.`));
  } else if (cores) {
    out.push(finding(`This server has ${cores} CPU cores, so at most ${cores} chunks can be worked on at once; more threads than that only take turns.`));
  }
  const pageable = runs.find((r) => r.memory === 'pageable');
  const twin = pageable && overlapping.find((r) => r.streams === pageable.streams);
  if (pageable && twin) {
    const ratio = pageable.total_ms.median / twin.total_ms.median;
    out.push(ratio > 1.1
      ? finding(`From pageable memory the same ${pageable.streams} streams took ${formatMs(pageable.total_ms.median)}, ${formatTimes(ratio)} as long as from pinned memory: each copy waits for the driver's staging, so the copies stop overlapping.`, 'warn')
      : finding(`From pageable memory the same ${pageable.streams} streams took ${formatMs(pageable.total_ms.median)}, within 10% of pinned memory on this run.`));
  }
  if (!result.outputs_match) out.push(finding(`A run did not compute what its input should give${result.output_error ? ` (${result.output_error})` : ''}: something is wrong with this server, and its numbers should not be trusted.`, 'warn'));
  return out;
}

/** What the compute tile says under its time: how close the calibration came to the copy. */
function computeHint(result) {
  const ratio = result.compute_copy_ratio;
  if (!Number.isFinite(ratio)) return 'calibrated to about the copy';
  const settled = result.calibration && result.calibration.converged;
  return `${formatTimes(ratio)} the copy${settled ? '' : ' (calibration did not reach it)'}`;
}

/** The timeline as lanes of positioned bars: one per stream (or thread). */
function lanes(spans, word) {
  const end = Math.max(...spans.map((s) => s.end_ms), 1e-6);
  const count = Math.max(...spans.map((s) => s.lane)) + 1;
  const rows = Array.from({ length: count }, (_, lane) => {
    const track = el('div', { class: 'exp-track exp-lane' });
    spans.filter((s) => s.lane === lane).forEach((s) => {
      const bar = el('span', { class: `exp-seg exp-fill-${STEP_TONES[s.step]}`, title: `chunk ${s.chunk}: ${s.step}, ${formatMs(s.end_ms - s.start_ms)}` });
      bar.style.left = `${(s.start_ms / end) * 100}%`;
      bar.style.width = `${((s.end_ms - s.start_ms) / end) * 100}%`;
      track.append(bar);
    });
    return el('div', { class: 'exp-lane-row' }, el('span', { class: 'exp-lane-label' }, `${word.one} ${lane + 1}`), track);
  });
  const busy = spans.reduce((sum, s) => sum + (s.end_ms - s.start_ms), 0);
  const summary = `Timeline of the fastest run over ${formatMs(end)}: ${count} ${count === 1 ? word.one : word.many} lanes, ${spans.length / 3} chunks each copied in, computed and copied out; the steps add up to ${formatMs(busy)}, ${formatTimes(busy / end)} the elapsed time, which is how much they overlapped. The table below lists every run.`;
  return el('div', { class: 'exp-lanes', role: 'img', 'aria-label': summary }, rows);
}

function render(results, result, device) {
  const cpu = result.provenance && result.provenance.backend === 'cpu';
  const word = cpu ? { one: 'thread', many: 'threads' } : { one: 'stream', many: 'streams' };
  const cores = cpu && device.cpu ? device.cpu.logical_cores : null;
  const slowest = Math.max(...result.runs.map((r) => r.total_ms.median));
  const best = fastest(result.runs);
  showResults(results,
    statList([
      { label: 'Copy in, one chunk', value: formatMs(result.copy_ms), hint: formatBytes(result.chunk_bytes) },
      { label: 'Compute, one chunk', value: formatMs(result.compute_ms), hint: computeHint(result) },
      { label: 'Fastest', value: formatMs(best.total_ms.median), hint: runLabel(best, word) },
      { label: 'Speed-up', value: formatTimes(best.speedup), hint: `vs one ${word.one}` },
    ]),
    categoryBars(result.runs.map((run) => ({
      label: runLabel(run, word),
      value: run.total_ms.median,
      text: formatMs(run.total_ms.median),
      tone: run.memory === 'pageable' ? 'warn' : 'accent',
      pattern: run.memory === 'pageable',
    })), { summary: `Total time per run: ${result.runs.map((r) => `${runLabel(r, word)} ${formatMs(r.total_ms.median)}`).join('; ')}.`, max: slowest }),
    ...findings(result, word, cores),
    result.timeline.length ? lanes(result.timeline, word) : null,
    legend(Object.entries(STEP_TONES).map(([label, tone]) => ({ label, tone, fill: true }))),
    dataTable({
      caption: `${result.chunks} chunks of ${formatBytes(result.chunk_bytes)}: whole pipeline, median (min–max) of ${best.total_ms.samples} runs`,
      columns: [{ label: 'Run' }, { label: 'Total time', numeric: true }, { label: 'Speed-up', numeric: true }],
      rows: result.runs.map((run) => [runLabel(run, word), formatSpread(run.total_ms, formatMs), formatTimes(run.speedup)]),
    }),
    ceilingView('streams', result),
    traceView(result.trace, 'streams'),
    provenanceDetails(result.provenance),
  );
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'streams');
  const [chunks, mib, streams] = ['chunks', 'chunk_mib', 'streams'].map((f) => boundsOf(spec, f));
  const cpu = device.kind === 'cpu';
  standardPanel(figure, device, {
    experiment: 'streams',
    intro: cpu
      ? 'The data is split into chunks; each is copied in, processed and copied out by worker threads standing in for streams.'
      : 'The data is split into chunks; each is copied to the GPU, processed by a kernel and copied back, over one stream and over several.',
    fields: [
      { name: 'chunks', label: 'Chunks', type: 'number', ...chunks, value: startValue(spec, params, 'chunks'), hint: `${chunks.min} to ${chunks.max}` },
      { name: 'chunk_mib', label: 'Chunk size (MiB)', type: 'number', ...mib, value: startValue(spec, params, 'chunk_mib'), hint: `all chunks together at most ${formatBytes(mib.max * 2 ** 20)} on this server` },
      { name: 'streams', label: cpu ? 'Most threads' : 'Most streams', type: 'number', ...streams, value: startValue(spec, params, 'streams'), hint: `runs use 1, 2, 4 … up to this (at most ${streams.max})` },
    ],
    runLabel: 'Run the pipeline',
    resultsSize: 'chart',
    onRun: async (values, { status, results }) => {
      const result = await runJob({ url: spec.path, body: values, status, device, results });
      if (result) render(results, result, device);
    },
  });
}
