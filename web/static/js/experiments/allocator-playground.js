// Live experiment "allocator-playground" (lesson 7): a capped pool of real memory per
// student, run by the server's model of PyTorch's caching allocator. Allocate named
// tensors (POST /api/playground/tensors), free them (DELETE /api/playground/tensors/{name}),
// empty the cache and reset, switch PYTORCH_CUDA_ALLOC_CONF's options (POST
// /api/playground/config) and download a memory_viz snapshot (GET
// /api/playground/snapshot). Three bars show allocated, reserved and the system's view;
// below them each segment is a bar with its blocks inside (allocated, free, split), so
// reserved-but-unallocated memory is visible. Past the cap the server's PyTorch-worded
// out-of-memory error is shown as PyTorch would print it.

import {
  el, richText, showResults, uniqueId, panelShell, statusArea, resultsArea, requestJson, loadDevice, dataTable,
} from './panel.js';
import { stackedBars } from './panel-bars.js';
import { inputFor, revealView } from './panel-predict.js';
import {
  playgroundBars, oomProbeMib, nextTensorName, describeChange, segmentBlocks, segmentSummary, tensorTones, unallocatedBytes,
} from '../logic/panel-memory.js';
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
    ['Reserved but unallocated (cached, free for reuse)', formatBytes(unallocatedBytes(view))],
    ['Segments', String((pool.segments || []).length)],
    ['Your cap', formatBytes(pool.cap_bytes)],
    ...Object.entries(pool.tensors).map(([name, bytes]) => [`Tensor ${name}`, formatBytes(bytes)]),
    ...pool.cached_blocks.map((bytes, i) => [`Free block ${i + 1}`, formatBytes(bytes)]),
  ];
  if (Number.isFinite(view.system_used_bytes)) rows.push([`System view (${view.system_view})`, formatBytes(view.system_used_bytes)]);
  return dataTable({ caption: 'The pool in numbers', columns: [{ label: 'What' }, { label: 'Bytes', numeric: true }], rows });
}

/** Each segment as a bar with its blocks inside, and its blocks in words beside it. */
function segmentsView(view) {
  const segments = view.pool.segments || [];
  if (!segments.length) return [el('p', { class: 'exp-hint' }, 'No segments: the allocator holds no memory.')];
  // Bars share one scale, the largest segment, so sizes compare across segments.
  const largest = Math.max(...segments.map((s) => s.total_size));
  // The same tone per tensor as the allocated bar below, so a tensor is one colour.
  const tones = tensorTones(view.pool);
  return segments.map((segment, i) => {
    const { blocks, split } = segmentBlocks(segment, tones);
    const summary = segmentSummary(segment, i);
    // The caption says in words what the bar draws, so the bar itself is decoration.
    // Widths through the CSSOM: the page's CSP forbids inline style attributes.
    const track = el('div', { class: 'exp-track exp-segment-track', 'aria-hidden': 'true' },
      ...blocks.map((b) => {
        const block = el('span', {
          class: `exp-block ${b.allocated ? `exp-fill-${b.tone}` : 'exp-block-free'}`,
          title: `${b.label}: ${formatBytes(b.bytes)}`,
        });
        block.style.flexBasis = `${b.pct}%`;
        return block;
      }));
    track.style.width = `${Math.max(8, (segment.total_size / largest) * 100)}%`;
    return el('li', { class: 'exp-segment' },
      el('span', { class: 'exp-segment-caption' }, `${summary}${split ? ' (split)' : ''}`),
      track);
  });
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
  const segmentList = el('ul', { class: 'exp-segments', 'aria-label': 'Segments and their blocks' });
  const expandableInput = el('input', { name: 'expandable_segments', type: 'checkbox' });
  const splitInput = el('input', { name: 'max_split_size_mb', type: 'number', min: '20', step: '1', placeholder: 'unset' });
  const applyConf = el('button', { type: 'submit', class: 'exp-button-secondary' }, 'Apply and restart the playground');
  const expandableId = uniqueId('expandable');
  expandableInput.id = expandableId;
  const confForm = el('form', { class: 'exp-controls exp-conf' },
    el('div', { class: 'exp-field' }, el('label', { for: expandableId }, expandableInput, ' expandable_segments:True')),
    field('max_split_size_mb', splitInput, '20 or more, or empty for unset'),
    el('div', { class: 'exp-actions' }, applyConf));
  const snapshotLink = el('a', { class: 'button exp-button-secondary', href: '/api/playground/snapshot', download: 'allocator_playground_snapshot.pickle' }, 'Download snapshot (memory_viz)');
  const backendNote = el('p', { class: 'exp-hint' });
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
  root.append(form, el('div', { class: 'exp-toolbar' }, emptyButton, oomButton, resetButton, snapshotLink),
    status.element, oomBox, step, el('h3', { class: 'exp-subhead' }, 'Live tensors'), tensorList, reveal,
    el('h3', { class: 'exp-subhead' }, 'Segments'), backendNote, segmentList, results,
    el('h3', { class: 'exp-subhead' }, 'Allocator options (PYTORCH_CUDA_ALLOC_CONF)'), confForm);

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
    segmentList.replaceChildren(...segmentsView(view));
    const conf = pool.conf || {};
    expandableInput.checked = Boolean(conf.expandable_segments);
    splitInput.value = conf.max_split_size_mb ? String(conf.max_split_size_mb) : '';
    backendNote.textContent = `Each segment is ${device && device.kind === 'cuda' ? 'a real device allocation of its size on this GPU, so the driver sees what reserved says' : 'host memory of its size (this server has no GPU in use; the same allocator model runs over host memory)'}. Options now: ${[conf.expandable_segments ? 'expandable_segments:True' : '', conf.max_split_size_mb ? `max_split_size_mb:${conf.max_split_size_mb}` : ''].filter(Boolean).join(',') || 'the defaults'}.`;
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
  confForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const split = splitInput.value.trim();
    act('reset', 'POST', '/api/playground/config', {
      expandable_segments: expandableInput.checked,
      max_split_size_mb: split === '' ? null : Number(split),
    });
  });
  resetButton.addEventListener('click', () => act('reset', 'POST', '/api/playground/reset', {}));
  await act('load', 'GET', '/api/playground');
}
