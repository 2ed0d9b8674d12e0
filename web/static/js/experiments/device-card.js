// Live experiment "device-card" (lesson 2): GET /api/device and show what this server
// computes on — the GPU's name, compute capability (and what it unlocks), SMs, memory,
// L2, clocks, PCIe link and driver/CUDA versions, or the CPU's model, cores and RAM —
// plus the caps the server puts on experiments and how many jobs are waiting now, and
// this device's own ceilings, measured once when the server started, each with the
// datasheet (or link) peak beside it.

import {
  el, showResults, panelShell, statusArea, resultsArea, requestJson, loadDevice, dataTable,
} from './panel.js';
import { formatBytes, formatInt, formatSig } from '../logic/panel-format.js';

/** What a compute capability means for the lessons (7.0 tensor cores, 8.0 BF16/TF32). */
function capabilityMeaning(cc) {
  const [major, minor] = String(cc).split('.').map(Number);
  const value = major + (minor || 0) / 10;
  if (value >= 8) return 'tensor cores, with BF16 and TF32 support';
  if (value >= 7) return 'tensor cores (FP16); no BF16 or TF32';
  return 'no tensor cores';
}

function pcieText(pcie) {
  const now = `gen${pcie.generation} x${pcie.width}`;
  const max = `gen${pcie.max_generation} x${pcie.max_width}`;
  const peak = `theoretical peak ${formatSig(pcie.peak_gbps)} GB/s per direction at ${max}`;
  const trained = now === max ? '' : ' (the link trains down when idle and speeds up under load)';
  return `${now} now, up to ${max}${trained}; ${peak}`;
}

function cardRows(card) {
  const rows = [['Runs on', card.kind === 'cuda' ? 'GPU (CUDA)' : 'CPU (no GPU in use)']];
  if (card.kind === 'cuda') rows.push(['Name', card.name]);
  if (card.kind === 'cuda') {
    if (card.compute_capability) rows.push(['Compute capability', `${card.compute_capability}: ${capabilityMeaning(card.compute_capability)}`]);
    if (card.sm_count) rows.push(['Streaming multiprocessors', formatInt(card.sm_count)]);
    if (card.memory_total_bytes) rows.push(['Device memory', formatBytes(card.memory_total_bytes)]);
    if (card.l2_cache_bytes) rows.push(['L2 cache', formatBytes(card.l2_cache_bytes)]);
    if (card.sm_clock_max_mhz) rows.push(['Max SM clock', `${formatInt(card.sm_clock_max_mhz)} MHz`]);
    if (card.memory_clock_max_mhz) rows.push(['Max memory clock', `${formatInt(card.memory_clock_max_mhz)} MHz`]);
    if (card.pcie) rows.push(['PCIe link', pcieText(card.pcie)]);
    rows.push(['NVIDIA driver', card.driver_version || 'unknown']);
    rows.push(['CUDA (highest the driver supports)', card.cuda_driver_version || 'unknown']);
  }
  const cpu = card.cpu || {};
  rows.push(['Host CPU', `${cpu.model || 'unknown'}, ${formatInt(cpu.logical_cores)} logical cores`]);
  if (cpu.memory_total_bytes) rows.push(['Host RAM', formatBytes(cpu.memory_total_bytes)]);
  // On the CPU backend the banner above already gives the reason.
  if (card.note && card.kind === 'cuda') rows.push(['Note', card.note]);
  return rows;
}

function limitsTable(limits) {
  const rows = [
    ['Largest transfer', formatBytes(limits.max_transfer_bytes)],
    ['Largest matmul side', formatInt(limits.max_matmul_size)],
    ['Most training steps', formatInt(limits.max_train_steps)],
    ['Widest hidden layer', formatInt(limits.max_hidden)],
    ['Largest batch', formatInt(limits.max_batch)],
    ['Your allocator playground', formatBytes(limits.playground_per_student_bytes)],
    ['Jobs that may wait in the queue', formatInt(limits.queue_capacity)],
    ['Longest one experiment may run', `${formatInt(limits.job_timeout_secs)} s`],
  ].filter(([, v]) => v !== '—' && v !== '— s');
  return dataTable({ caption: "This server's caps on experiments", columns: [{ label: 'Cap' }, { label: 'Value', numeric: true }], rows });
}

function ceilingsTable(ceilings) {
  const rows = ceilings.figures.map((c) => [
    c.label,
    `${formatSig(c.value)} ${c.unit}`,
    `${formatSig(c.low)}–${formatSig(c.high)}`,
    c.datasheet > 0 ? `${formatSig(c.datasheet)} ${c.unit} (${c.datasheet_from})` : 'not known to GPU Lab',
    c.datasheet > 0 ? `${Math.round((100 * c.value) / c.datasheet)}%` : '—',
    c.how,
  ]);
  const block = dataTable({
    caption: `This device's ceilings, measured when the server started (${formatSig(ceilings.took_ms / 1e3)} s): what an experiment can hope to reach here`,
    columns: [{ label: 'Figure' }, { label: 'Measured (median)', numeric: true }, { label: 'Slowest–fastest run', numeric: true }, { label: 'Datasheet peak', numeric: true }, { label: 'Measured ÷ datasheet', numeric: true }, { label: 'How' }],
    rows,
  });
  block.classList.add('exp-ceilings-table');
  return block;
}

function render(results, info) {
  const card = info.device;
  const list = el('dl', { class: 'exp-card' },
    cardRows(card).map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', {}, v))));
  showResults(results, 
    el('h3', { class: 'exp-subhead' }, card.kind === 'cuda' ? `GPU: ${card.name}` : `CPU: ${card.name}`),
    list,
    el('p', { class: 'exp-finding' }, `Experiments waiting in the queue right now: ${formatInt(info.queue_depth)}.`),
    info.ceilings ? ceilingsTable(info.ceilings) : el('p', { class: 'exp-finding' }, "This device's ceilings are measured when the server starts; read the card again in a few seconds."),
    info.limits ? limitsTable(info.limits) : null,
  );
}

export async function mount(figure) {
  const device = await loadDevice();
  const root = panelShell(figure, device && device.device);
  const status = statusArea('Reading the device card…');
  const results = resultsArea('card', 'Reading the device card…');
  const refresh = el('button', { type: 'button', class: 'button exp-run' }, 'Read the card again');
  root.append(el('div', { class: 'exp-actions' }, refresh), status.element, results);

  const load = async () => {
    status.busy(true);
    const answer = await requestJson('GET', '/api/device');
    status.busy(false);
    if (!answer.ok) {
      status.error(answer.message);
      return;
    }
    render(results, answer.data);
    status.set(`Read from the server at ${new Date().toLocaleTimeString()}.`, 'done');
  };
  refresh.addEventListener('click', load);
  if (device) {
    render(results, device);
    status.set('Read from the server when this page loaded.', 'done');
  } else {
    await load();
  }
}
