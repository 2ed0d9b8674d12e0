// Live experiment "doctor" (lesson 3): GET /api/doctor and show the server's layered
// GPU check — driver library, NVML, CUDA context, NVRTC, cuBLAS — lowest layer first,
// each marked OK / failed / skipped in words (not colour alone) with its detail, the
// first broken layer flagged as the place to start, and the verdict on top.

import {
  el, richText, showResults, panelShell, statusArea, resultsArea, requestJson, loadDevice, finding,
} from './panel.js';

const STATUS_WORDS = { ok: 'OK', failed: 'Failed', skipped: 'Skipped' };

function layerItem(layer, isFirstBroken) {
  const status = STATUS_WORDS[layer.status] ? layer.status : 'skipped';
  return el('li', { class: `exp-layer exp-layer-${status}` },
    el('p', { class: 'exp-layer-head' },
      el('span', { class: `exp-badge exp-badge-${status}` }, STATUS_WORDS[status]),
      el('span', { class: 'exp-layer-name' }, layer.name),
      isFirstBroken ? el('span', { class: 'exp-first-broken' }, '← first broken layer: start here') : null,
    ),
    el('p', { class: 'exp-layer-detail' }, richText(layer.detail)),
  );
}

function render(results, report) {
  const layers = report.layers || [];
  const firstBroken = layers.findIndex((l) => l.status === 'failed');
  const counts = ['ok', 'failed', 'skipped'].map((s) => `${layers.filter((l) => l.status === s).length} ${STATUS_WORDS[s].toLowerCase()}`);
  showResults(results, 
    finding(report.verdict, firstBroken === -1 ? 'good' : 'warn'),
    el('p', { class: 'exp-intro' },
      `Backend in use: ${report.backend === 'cuda' ? 'the GPU (CUDA)' : 'the CPU'}. Layers, lowest first (${counts.join(', ')}); each one needs every layer above it in this list.`),
    el('ol', { class: 'exp-layers', 'aria-label': 'Layers of the GPU check, lowest first' },
      layers.map((layer, i) => layerItem(layer, i === firstBroken))),
  );
}

export async function mount(figure) {
  const device = await loadDevice();
  const root = panelShell(figure, device && device.device,
    'The server ran this check when it started; the report below is what it found.');
  const status = statusArea('Reading the report…');
  const results = resultsArea('list', 'Reading the report…');
  const refresh = el('button', { type: 'button', class: 'button exp-run' }, 'Read the report again');
  root.append(el('div', { class: 'exp-actions' }, refresh), status.element, results);

  const load = async () => {
    status.busy(true);
    const answer = await requestJson('GET', '/api/doctor');
    status.busy(false);
    if (!answer.ok) {
      status.error(answer.message);
      return;
    }
    render(results, answer.data);
    status.set(`Report read from the server at ${new Date().toLocaleTimeString()}.`, 'done');
  };
  refresh.addEventListener('click', load);
  await load();
}
