// Live experiment "allocator-playground" (lesson 7): a capped caching-allocator pool of
// real memory per student. Allocate named tensors (POST /api/playground/tensors), free
// them (DELETE /api/playground/tensors/{name}), empty the cache and reset, and watch
// three bars: allocated (live tensors), reserved (the pool, cached blocks hatched) and the
// system's view (driver or process memory, as the change since the page opened). Each
// action is explained in one sentence; past the cap the server's PyTorch-worded
// out-of-memory error is shown as PyTorch would print it.

import {
  el, richText, showResults, uniqueId, panelShell, statusArea, resultsArea, requestJson, loadDevice, dataTable,
} from './panel.js';
import { stackedBars } from './panel-bars.js';
import { inputFor, revealView } from './panel-predict.js';
import { playgroundBars, oomProbeMib, nextTensorName, describeChange } from '../logic/panel-memory.js';
import { formatBytes, formatSig } from '../logic/panel-format.js';

const MIB = 1024 * 1024;

function field(label, input, hint) {
  const id = uniqueId(input.name);
  input.id = id;
  const hintNode = hint ? el('span', { class: 'exp-hint', id: `${id}-hint` }, hint) : null;
  if (hintNode) input.setAttribute('aria-describedby', hintNode.id);
  return el('div', { class: 'exp-field' }, el('label', { for: id }, label), input, hintNode);
}

function numbersTable(view) {
  const pool = view.pool;
  const rows = [
    ['Allocated (live tensors)', formatBytes(pool.allocated_bytes)],
    ['Reserved (pool)', formatBytes(pool.reserved_bytes)],
    ['Cached, free for reuse', formatBytes(pool.reserved_bytes - pool.allocated_bytes)],
    ['Your cap', formatBytes(pool.cap_bytes)],
    ...Object.entries(pool.tensors).map(([name, bytes]) => [`Tensor ${name}`, formatBytes(bytes)]),
    ...pool.cached_blocks.map((bytes, i) => [`Cached block ${i + 1}`, formatBytes(bytes)]),
  ];
  if (Number.isFinite(view.system_used_bytes)) rows.push([`System view (${view.system_view})`, formatBytes(view.system_used_bytes)]);
  return dataTable({ caption: 'The pool in numbers', columns: [{ label: 'What' }, { label: 'Bytes', numeric: true }], rows });
}

export async function mount(figure) {
  const info = await loadDevice();
  const device = info && info.device;
  const root = panelShell(figure, device, 'Your own small pool, managed like PyTorch’s caching allocator. Sizes are rounded up to the allocator’s block size.');
  const status = statusArea('Reading your playground…');
  const results = resultsArea('bars', 'Reading your playground…');
  const oomBox = el('div', { class: 'exp-oom-box' });

  const nameInput = el('input', { name: 'name', type: 'text', required: true, pattern: '[A-Za-z0-9_]{1,32}', maxlength: '32', autocomplete: 'off', spellcheck: 'false' });
  const mibInput = el('input', { name: 'mib', type: 'number', required: true, min: '0.001', step: 'any', value: '16' });
  const allocate = el('button', { type: 'submit', class: 'button exp-run' }, 'Allocate');
  const form = el('form', { class: 'exp-controls' },
    field('Tensor name', nameInput, 'letters, digits, _'),
    field('Size (MiB)', mibInput, 'MiB to allocate'),
    el('div', { class: 'exp-actions' }, allocate));
  const oomButton = el('button', { type: 'button', class: 'exp-button-secondary' }, 'Allocate past the cap');
  const emptyButton = el('button', { type: 'button', class: 'exp-button-secondary' }, 'torch.cuda.empty_cache()');
  const resetButton = el('button', { type: 'button', class: 'exp-button-secondary' }, 'Reset the playground');
  const tensorList = el('ul', { class: 'exp-tensors', 'aria-label': 'Live tensors' });
  // Predict, then measure: before a `del`, what `reserved` will show after it.
  const question = info && info.panel_predictions ? info.panel_predictions.playground : null;
  const predictId = uniqueId('predict');
  const prediction = question ? inputFor(question, predictId, `${predictId}-hint`, {}) : null;
  const reveal = el('div', { class: 'exp-reveal-host', 'aria-live': 'polite' });
  const step = prediction ? el('fieldset', { class: 'exp-predict' },
    el('legend', { class: 'exp-predict-legend' }, 'Predict first'),
    el('label', { for: predictId, class: 'exp-predict-question' }, ...richText(question.question)),
    prediction.element,
    el('span', { class: 'exp-hint', id: `${predictId}-hint` }, 'Type your prediction, then press a del button below; the reveal shows how far off it was. Leave it empty to just free.')) : null;
  root.append(form, el('div', { class: 'exp-toolbar' }, emptyButton, oomButton, resetButton),
    status.element, oomBox, step, el('h3', { class: 'exp-subhead' }, 'Live tensors'), tensorList, reveal, results);

  let view = null;
  let baseline = null;
  let busy = false;

  const render = () => {
    const pool = view.pool;
    const capMib = pool.cap_bytes / MIB;
    mibInput.max = String(capMib * 4);
    mibInput.nextElementSibling.textContent = `MiB to allocate; your cap is ${formatSig(capMib)} MiB`;
    if (!nameInput.value || pool.tensors[nameInput.value] !== undefined) nameInput.value = nextTensorName(pool.tensors);
    oomButton.textContent = `Allocate past the cap (${oomProbeMib(view)} MiB)`;
    const names = Object.keys(pool.tensors);
    tensorList.replaceChildren(...(names.length
      ? names.map((name) => {
        // The accessible name starts with the visible text (WCAG 2.5.3, axe's
        // label-content-name-mismatch), so "click del t1" works for voice control.
        const free = el('button', { type: 'button', class: 'exp-button-secondary exp-button-small', 'aria-label': `del ${name}: free the tensor ${name}` }, `del ${name}`);
        free.addEventListener('click', () => {
          const read = prediction ? prediction.read() : { value: null };
          const query = read.value === null ? '' : `?predict=${encodeURIComponent(read.value)}`;
          act('free', 'DELETE', `/api/playground/tensors/${encodeURIComponent(name)}${query}`, undefined, name);
        });
        return el('li', {}, el('code', {}, name), el('span', {}, formatBytes(pool.tensors[name])), free);
      })
      : [el('li', { class: 'exp-hint' }, 'None yet: allocate one above.')]));
    const bars = playgroundBars(view, baseline);
    const summary = `Stacked bars on the scale of your ${formatBytes(pool.cap_bytes)} cap: allocated ${formatBytes(pool.allocated_bytes)}, reserved ${formatBytes(pool.reserved_bytes)}${bars[2] ? `, system view changed by ${formatBytes(bars[2].delta)} since the page opened` : ''}. The table below lists the numbers.`;
    showResults(results,
      stackedBars(bars, {
        summary,
        describe: (bar) => (bar.key === 'system'
          ? `${formatBytes(bar.total)} (${bar.delta >= 0 ? '+' : ''}${formatBytes(bar.delta)} since this page opened)`
          : `${formatBytes(bar.total)} of ${formatBytes(bar.scale)}`),
      }),
      numbersTable(view),
    );
  };

  async function showOutOfMemory(message) {
    oomBox.replaceChildren(el('pre', { class: 'exp-error-text exp-oom' }, `torch.OutOfMemoryError: ${message}`));
    // Like PyTorch, the pool empties its cache before giving up: redraw from the server.
    const before = view;
    const fresh = await requestJson('GET', '/api/playground');
    if (fresh.ok) {
      view = fresh.data;
      render();
    }
    const released = before && view !== before && view.pool.reserved_bytes < before.pool.reserved_bytes;
    status.error(`Out of memory: that allocation does not fit under your cap (PyTorch’s error is below).${released ? ' Before giving up, the allocator emptied its cache, as PyTorch does, so reserved dropped too.' : ''}`);
  }

  async function act(action, method, url, body, name) {
    if (busy) return;
    busy = true;
    status.busy(true);
    try {
      const answer = await requestJson(method, url, body);
      if (!answer.ok) {
        if (/out of memory/i.test(answer.message)) await showOutOfMemory(answer.message);
        else status.error(answer.message);
        return;
      }
      const before = view;
      view = answer.data;
      reveal.replaceChildren(...(question && view.prediction ? [revealView(view.prediction, question)] : []));
      if (baseline === null) baseline = view.system_used_bytes;
      oomBox.replaceChildren();
      if (before && action !== 'load') status.set(describeChange(action, before, view, name), 'done');
      else status.set('Your playground is ready: allocate a tensor to start.', 'done');
      render();
      // The pressed "del" button is gone now: keep keyboard focus inside the panel.
      if (action === 'free') (tensorList.querySelector('button') || nameInput).focus();
    } finally {
      busy = false;
      status.busy(false);
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = nameInput.value.trim();
    act('allocate', 'POST', '/api/playground/tensors', { name, mib: Number(mibInput.value) }, name);
  });
  oomButton.addEventListener('click', () => {
    if (!view) return;
    const name = nextTensorName(view.pool.tensors);
    act('allocate', 'POST', '/api/playground/tensors', { name, mib: oomProbeMib(view) }, name);
  });
  emptyButton.addEventListener('click', () => act('empty-cache', 'POST', '/api/playground/empty-cache', {}));
  resetButton.addEventListener('click', () => act('reset', 'POST', '/api/playground/reset', {}));
  await act('load', 'GET', '/api/playground');
}
