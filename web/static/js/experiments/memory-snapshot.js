// Live experiment "memory-snapshot" (lesson 7): GET /api/memory and draw stacked bars of
// what the system reports — the driver's used/free device memory, NVML's used memory
// split by process (what nvidia-smi shows), and host RAM with this server's share — with
// a table of the same numbers. On the CPU backend there is no device memory, so only the
// host bar appears and the panel says so. "Take a new snapshot" reads it again.

import {
  el, showResults, panelShell, statusArea, resultsArea, requestJson, loadDevice, dataTable, finding,
} from './panel.js';
import { stackedBars } from './panel-bars.js';
import { snapshotBars } from '../logic/panel-memory.js';
import { formatBytes, formatPercent } from '../logic/panel-format.js';

function tableRows(snap) {
  const rows = [];
  const row = (what, used, total) => rows.push([what, formatBytes(used), total === null ? '—' : formatBytes(total), total === null || used === null ? '—' : formatPercent(used / total)]);
  if (Number.isFinite(snap.driver_total_bytes)) row('Driver: device memory in use', snap.driver_total_bytes - snap.driver_free_bytes, snap.driver_total_bytes);
  if (Number.isFinite(snap.nvml_total_bytes)) row('NVML: device memory in use', snap.nvml_used_bytes, snap.nvml_total_bytes);
  for (const p of snap.processes || []) {
    rows.push([`Process ${p.pid} on the GPU`, p.used_bytes === null ? 'not reported' : formatBytes(p.used_bytes), '—', '—']);
  }
  if (Number.isFinite(snap.host_total_bytes)) row('Host RAM in use', snap.host_total_bytes - (snap.host_available_bytes ?? 0), snap.host_total_bytes);
  if (Number.isFinite(snap.process_resident_bytes)) row('This server process (resident)', snap.process_resident_bytes, snap.host_total_bytes ?? null);
  return rows;
}

function findings(snap) {
  if (snap.backend !== 'cuda') {
    return [finding(`No GPU, so there is no device memory to read: these are the host's numbers. This server process holds ${formatBytes(snap.process_resident_bytes)} resident; the machine has ${formatBytes(snap.host_available_bytes)} available of ${formatBytes(snap.host_total_bytes)}.`, 'warn')];
  }
  const procs = snap.processes || [];
  const known = procs.reduce((sum, p) => sum + (p.used_bytes || 0), 0);
  const out = [finding(procs.length === 0
    ? `NVML lists no process using the GPU, yet reports ${formatBytes(snap.nvml_used_bytes)} in use: that is the driver's own reservation.`
    : `NVML reports ${formatBytes(snap.nvml_used_bytes)} in use; the ${procs.length} process${procs.length === 1 ? '' : 'es'} it lists account for ${formatBytes(known)}. The rest belongs to the driver and to CUDA contexts, which no per-process number shows.`)];
  if (procs.some((p) => p.used_bytes === null)) {
    out.push(finding('Some processes show no number: inside a container NVML often cannot read other processes’ usage.'));
  }
  return out;
}

function render(results, snap) {
  const bars = snapshotBars(snap);
  const summary = `Stacked bars: ${bars.map((b) => `${b.label}, ${formatBytes(b.total)} of ${formatBytes(b.scale)} used`).join('; ')}. The table below lists the numbers.`;
  showResults(results,
    stackedBars(bars, { summary, describe: (b) => `${formatBytes(b.total)} of ${formatBytes(b.scale)} used` }),
    ...findings(snap),
    dataTable({
      caption: `Memory as the system reports it (${snap.backend === 'cuda' ? 'GPU' : 'CPU backend: host only'})`,
      columns: [{ label: 'What' }, { label: 'Used', numeric: true }, { label: 'Total', numeric: true }, { label: 'Share', numeric: true }],
      rows: tableRows(snap),
    }),
  );
}

export async function mount(figure) {
  const info = await loadDevice();
  const root = panelShell(figure, info && info.device, 'A snapshot of memory as the driver, NVML and the host report it right now.');
  const status = statusArea('Taking a snapshot…');
  const results = resultsArea('bars', 'Taking a snapshot…');
  const refresh = el('button', { type: 'button', class: 'button exp-run' }, 'Take a new snapshot');
  root.append(el('div', { class: 'exp-actions' }, refresh), status.element, results);
  const load = async () => {
    status.busy(true);
    const answer = await requestJson('GET', '/api/memory');
    status.busy(false);
    if (!answer.ok) {
      status.error(answer.message);
      return;
    }
    render(results, answer.data);
    status.set(`Snapshot taken at ${new Date().toLocaleTimeString()}.`, 'done');
  };
  refresh.addEventListener('click', load);
  await load();
}
