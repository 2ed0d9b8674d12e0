// Live experiment "launch-overhead" (lesson 5): POST /api/experiments/launch
// {max_kernels, elements} and show what launching costs: for chains of 1 to 1,000 tiny
// steps, the host time per launch call, the device time per step and the wall time of
// the chain, launched one by one (eager), replayed as a CUDA graph, and fused into one
// kernel, with the speed-ups over eager; the eager chain against this device's memory
// ceiling (panel-ceiling.js); then the run's trace (panel-trace.js). On the CPU backend a
// worker thread stands in for the stream, and the panel says so.

import {
  showResults, loadDevice, standardPanel, runJob, dataTable, statList, finding, provenanceDetails,
  experimentSpec, boundsOf, startValue,
} from './panel.js';
import { traceView } from './panel-trace.js';
import { ceilingView } from './panel-ceiling.js';
import { formatSig, formatTimes } from '../logic/panel-format.js';

const us = (v) => `${formatSig(v)} µs`;
const spread = (s, div = 1) => `${formatSig(s.median / div)} (${formatSig(s.q1 / div)}–${formatSig(s.q3 / div)})`;

function wayWords(cpu) {
  return cpu
    ? { eager: 'one task per step', graph: 'one batch', fused: 'one fused loop' }
    : { eager: 'eager (one launch per kernel)', graph: 'CUDA graph replay', fused: 'fused kernel' };
}

function render(results, result) {
  const cpu = result.trace && result.trace.otherData && result.trace.otherData.backend === 'cpu';
  const words = wayWords(cpu);
  const longest = result.points[result.points.length - 1];
  const [eager, graph, fused] = longest.ways;
  const stats = [
    { label: cpu ? 'One hand-off call' : 'One launch call', value: us(result.launch_us), hint: `host time, median of the ${longest.kernels}-step eager chain` },
    { label: `${cpu ? 'Batch' : 'Graph replay'}, ${longest.kernels} steps`, value: formatTimes(longest.graph_speedup.median), hint: `faster than eager (quartiles ${formatSig(longest.graph_speedup.q1)}–${formatSig(longest.graph_speedup.q3)}×)` },
    { label: `Fused, ${longest.kernels} steps`, value: formatTimes(longest.fused_speedup.median), hint: `faster than eager (quartiles ${formatSig(longest.fused_speedup.q1)}–${formatSig(longest.fused_speedup.q3)}×)` },
    { label: 'Saved per step by one submission', value: us(longest.saved_per_step_us), hint: '(eager − replay wall time) ÷ steps' },
  ];
  const out = [];
  const perStepEager = eager.wall_us.median / longest.kernels;
  const perStepDevice = eager.device_us.median / longest.kernels;
  out.push(finding(`Launched one by one, each of the ${longest.kernels} steps took ${us(perStepEager)} of wall time, of which the ${cpu ? 'worker thread' : 'GPU'} was busy or waiting between steps for ${us(perStepDevice)}; submitted as one ${cpu ? 'batch' : 'graph'}, the chain took ${us(graph.wall_us.median)} instead of ${us(eager.wall_us.median)}, and as one fused ${cpu ? 'loop' : 'kernel'} ${us(fused.wall_us.median)}.`));
  if (cpu) out.push(finding('No GPU here: a worker thread plays the GPU stream. A "launch call" puts a task in its queue, and waking the thread is paid in the gaps between steps, so these numbers are what handing work to another thread costs on this processor, not what a GPU launch costs.', 'warn'));
  if (!result.outputs_match) out.push(finding(`The three ways did not compute the same numbers (${result.output_check}): something is wrong with this server, and its timings should not be trusted.`, 'warn'));
  const rows = result.points.flatMap((p) => p.ways.map((w) => [
    `${p.kernels} × ${words[w.way]}`,
    spread(w.submit_us, Math.max(1, w.calls)),
    spread(w.device_us, p.kernels),
    spread(w.wall_us),
    w.way === 'eager' ? '1×' : formatTimes((w.way === 'graph' ? p.graph_speedup : p.fused_speedup).median),
  ]));
  showResults(results,
    statList(stats),
    out,
    dataTable({
      caption: `Per chain length and way, medians (quartiles) of ${longest.ways[0].wall_us.samples} runs on ${result.elements} elements`,
      columns: [
        { label: 'Steps × way' }, { label: 'Host µs per call', numeric: true }, { label: `${cpu ? 'Thread' : 'Device'} µs per step`, numeric: true },
        { label: 'Wall µs per chain', numeric: true }, { label: 'Faster than eager', numeric: true },
      ],
      rows,
    }),
    ceilingView('launch', result),
    traceView(result.trace, 'launch'),
    provenanceDetails(result.provenance),
  );
}

export async function mount(figure, params) {
  const info = await loadDevice();
  const device = info && info.device;
  const spec = experimentSpec(info, 'launch');
  const [kernels, elements] = ['max_kernels', 'elements'].map((f) => boundsOf(spec, f));
  const cpu = device && device.kind === 'cpu';
  standardPanel(figure, device, {
    experiment: 'launch',
    intro: cpu
      ? 'A chain of tiny steps is handed to a worker thread one task at a time, as one batch, and as one fused loop.'
      : 'A chain of tiny kernels is launched one by one, replayed as a captured CUDA graph, and run as one fused kernel.',
    fields: [
      { name: 'max_kernels', label: 'Longest chain (steps)', type: 'number', ...kernels, value: startValue(spec, params, 'max_kernels'), hint: `chains of 1, 10, 100 … up to this (at most ${kernels.max})` },
      { name: 'elements', label: 'Elements per step', type: 'number', ...elements, value: startValue(spec, params, 'elements'), hint: `${elements.min} to ${elements.max}` },
    ],
    runLabel: 'Run the launch test',
    resultsSize: 'chart',
    onRun: async (values, { status, results }) => {
      const result = await runJob({ url: spec.path, body: values, status, device, results });
      if (result) render(results, result);
    },
  });
}
