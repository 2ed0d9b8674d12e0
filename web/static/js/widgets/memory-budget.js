// Memory budget calculator (lessons 7 and 8): parameters, precision, optimizer, batch,
// sequence length, hidden size and layers become a stacked bar of weights, gradients,
// optimizer state (and, under autocast, the 16-bit weight copies) and activations,
// drawn against the memory the chosen GPU really leaves a process (the total the driver
// reports to PyTorch minus the CUDA context) with its out-of-memory line. Each lesson's
// directive sets its own starting values. The arithmetic is ../logic/memory-budget.js.

import { el } from '../dom.js';
import {
  CUDA_CONTEXT_GIB,
  GIB,
  GPUS,
  OFFERED_PRECISIONS,
  OPTIMIZERS,
  PRECISIONS,
  budget,
  configFromParams,
  describeCount,
  formatGiB,
  gpuFor,
  headsFor,
  layerParams,
  scaleTicks,
} from '../logic/memory-budget.js';

let instances = 0;

const NUMBER_FIELDS = [
  { key: 'params', label: 'Parameters', min: 1, max: 1e13, step: 'any', wide: true },
  { key: 'batch', label: 'Batch size', min: 1, max: 65536, step: 1 },
  { key: 'seq', label: 'Sequence length', min: 1, max: 1048576, step: 1 },
  { key: 'hidden', label: 'Hidden size', min: 64, max: 65536, step: 64 },
  { key: 'layers', label: 'Layers', min: 1, max: 1000, step: 1 },
];

function selectField(id, labelText, choices, value) {
  const field = el('div', 'tw-field tw-field-wide');
  const label = el('label', null, labelText);
  label.htmlFor = id;
  const select = el('select');
  select.id = id;
  for (const [optionValue, text] of choices) {
    const option = el('option', null, text);
    option.value = optionValue;
    option.selected = optionValue === value;
    select.append(option);
  }
  field.append(label, select);
  return { field, select };
}

export function mount(figure, params) {
  const uid = `tw-budget-${(instances += 1)}`;
  const config = configFromParams(params);

  // Offer the directive's own precision and GPU even if they are not in the usual lists.
  const precisions = OFFERED_PRECISIONS.includes(config.precision) || !PRECISIONS[config.precision]
    ? OFFERED_PRECISIONS
    : [...OFFERED_PRECISIONS, config.precision];
  if (!PRECISIONS[config.precision]) config.precision = 'fp32';
  if (!OPTIMIZERS[config.optimizer]) config.optimizer = 'sgd';
  const usable = (gpu) => `${gpu.usableGiB.toFixed(2)} GiB`;
  const gpus = Object.entries(GPUS).map(([id, gpu]) => [id, `${gpu.label}: ${usable(gpu)} usable`]);
  if (!GPUS[config.gpu]) gpus.push([config.gpu, `${gpuFor(config.gpu).label}: ${usable(gpuFor(config.gpu))} usable`]);

  const root = el('div', 'tw tw-budget');
  const controls = el('div', 'tw-controls tw-budget-controls');
  const inputs = {};
  let paramsHint;
  for (const spec of NUMBER_FIELDS) {
    const field = el('div', spec.wide ? 'tw-field tw-field-wide' : 'tw-field');
    const labelRow = el('div', 'tw-label-row');
    const label = el('label', null, spec.label);
    labelRow.append(label);
    const input = el('input');
    input.type = 'number';
    input.id = `${uid}-${spec.key}`;
    label.htmlFor = input.id;
    input.min = String(spec.min);
    input.max = String(spec.max);
    input.step = String(spec.step);
    input.value = String(config[spec.key]);
    input.inputMode = 'numeric';
    field.append(labelRow, input);
    if (spec.key === 'params') {
      paramsHint = el('span', 'tw-hint');
      paramsHint.id = `${uid}-params-hint`;
      input.setAttribute('aria-describedby', paramsHint.id);
      labelRow.append(paramsHint);
    }
    input.addEventListener('input', () => {
      const value = input.valueAsNumber;
      const valid = Number.isFinite(value) && value >= spec.min && value <= spec.max;
      input.setAttribute('aria-invalid', String(!valid));
      if (!valid) return;
      config[spec.key] = spec.step === 1 ? Math.round(value) : value;
      render();
    });
    controls.append(field);
    inputs[spec.key] = input;
  }
  const precision = selectField(`${uid}-precision`, 'Precision', precisions.map((p) => [p, PRECISIONS[p].label]), config.precision);
  const optimizer = selectField(
    `${uid}-optimizer`,
    'Optimizer',
    Object.entries(OPTIMIZERS).map(([id, o]) => [id, o.label]),
    config.optimizer,
  );
  const gpu = selectField(`${uid}-gpu`, 'GPU', gpus, config.gpu);
  // Order: model first, then training settings, then the data, then the card.
  controls.insertBefore(precision.field, inputs.batch.parentElement);
  controls.insertBefore(optimizer.field, inputs.batch.parentElement);
  controls.append(gpu.field);
  for (const [key, { select }] of Object.entries({ precision, optimizer, gpu })) {
    select.addEventListener('change', () => {
      config[key] = select.value;
      render();
    });
  }

  // The bar, its scale and the OOM line.
  const chart = el('div', 'tw-budget-chart');
  chart.setAttribute('role', 'img');
  const bar = el('div', 'tw-budget-bar');
  const oomLine = el('div', 'tw-budget-oom');
  const oomLabel = el('span', 'tw-budget-oom-label');
  oomLine.append(oomLabel);
  chart.append(bar, oomLine);
  const scale = el('div', 'tw-budget-scale');
  scale.setAttribute('aria-hidden', 'true');

  const verdict = el('p', 'tw-verdict');
  verdict.setAttribute('aria-live', 'polite');

  const tableWrap = el('div', 'tw-scroll');
  tableWrap.tabIndex = 0;
  tableWrap.setAttribute('role', 'region');
  tableWrap.setAttribute('aria-label', 'Memory budget, term by term');
  const table = el('table', 'tw-table');
  const head = el('thead');
  const headRow = el('tr');
  for (const text of ['Term', 'Bytes per param', 'Size']) {
    const th = el('th', null, text);
    th.scope = 'col';
    headRow.append(th);
  }
  head.append(headRow);
  const tbody = el('tbody');
  table.append(head, tbody);
  tableWrap.append(table);

  const modelHint = el('p', 'tw-hint tw-budget-model');
  const formula = el('p', 'tw-hint');

  root.append(controls, chart, scale, verdict, tableWrap, modelHint, formula);

  function row(key, label, perParam, bytes, swatchKey) {
    const tr = el('tr');
    tr.dataset.term = key;
    const th = el('th');
    th.scope = 'row';
    if (swatchKey) {
      const swatch = el('span', `tw-swatch tw-swatch-${swatchKey}`);
      swatch.setAttribute('aria-hidden', 'true');
      th.append(swatch);
    }
    th.append(document.createTextNode(label));
    tr.append(th, el('td', null, perParam), el('td', null, bytes));
    return tr;
  }

  function render() {
    const result = budget(config);
    paramsHint.textContent = `= ${describeCount(config.params)}`;
    const top = Math.max(result.totalBytes, result.capacityBytes) * 1.05;
    const pct = (bytes) => `${(100 * bytes) / top}%`;

    bar.replaceChildren(
      ...result.terms.map((term) => {
        const segment = el('div', `tw-budget-segment tw-swatch-${term.key}`);
        segment.style.width = pct(term.bytes);
        return segment;
      }),
    );
    oomLine.style.left = pct(result.capacityBytes);
    oomLabel.textContent = `OOM line: ${usable(result.gpu)} usable`;
    oomLine.classList.toggle('tw-budget-oom-left', result.capacityBytes / top > 0.6);
    const ticks = scaleTicks(top / GIB).map((gib) => {
      const tick = el('span', 'tw-budget-tick', `${gib} GiB`);
      tick.style.left = `${(100 * gib * GIB) / top}%`;
      if ((gib * GIB) / top > 0.92) tick.classList.add('tw-budget-tick-end');
      return tick;
    });
    scale.replaceChildren(...ticks);

    const rows = result.terms
      .filter((t) => t.key !== 'activations')
      .map((t) => row(t.key, t.label, String(t.perParam), formatGiB(t.bytes), t.key));
    const floorRow = row('floor', 'Floor: weights + gradients + optimizer', String(result.floorPerParam), formatGiB(result.floorBytes));
    floorRow.classList.add('tw-table-sum');
    const activations = result.terms.find((t) => t.key === 'activations');
    rows.push(
      floorRow,
      row('activations', 'Activations (estimate)', '—', formatGiB(activations.bytes), 'activations'),
    );
    const totalRow = row('total', 'Total', '—', formatGiB(result.totalBytes));
    totalRow.classList.add('tw-table-sum');
    rows.push(
      totalRow,
      row('gpu-reported', `Reported to PyTorch (${result.gpu.label})`, '—', formatGiB(result.reportedBytes)),
      row('gpu-context', 'CUDA context (about)', '—', `−${formatGiB(result.contextBytes)}`),
    );
    const gpuRow = row('gpu', 'Usable for tensors', '—', formatGiB(result.capacityBytes));
    gpuRow.classList.add('tw-table-sum');
    rows.push(gpuRow);
    tbody.replaceChildren(...rows);

    verdict.classList.toggle('tw-verdict-bad', !result.fits);
    verdict.textContent = result.fits
      ? `Fits: ${formatGiB(result.totalBytes)} of ${usable(result.gpu)} usable, ${formatGiB(result.spareBytes)} to spare.`
      : `Out of memory: ${formatGiB(result.totalBytes)} needed, ${formatGiB(-result.spareBytes)} more than the ${usable(result.gpu)} usable.`;
    chart.setAttribute(
      'aria-label',
      `Stacked bar: ${result.terms.map((t) => `${t.label} ${formatGiB(t.bytes)}`).join(', ')}; ` +
        `total ${formatGiB(result.totalBytes)} against the OOM line at ${usable(result.gpu)} usable.`,
    );
    modelHint.textContent =
      `${config.layers} layers of width ${config.hidden} hold about ${describeCount(layerParams(config.hidden, config.layers))} parameters ` +
      '(12 × layers × hidden², embeddings not counted). Keep the parameter count and the shape in step: ' +
      'the activations are estimated from the shape, the floor from the parameter count.';
    const bytesPerValue = PRECISIONS[config.precision].activation;
    formula.textContent =
      `Activations ≈ layers × (16 × batch × seq × hidden + 2 × heads × batch × seq²) × ${bytesPerValue} bytes, ` +
      `with heads = hidden ÷ 64 = ${headsFor(config.hidden)}: the tensors a transformer layer keeps for backward. ` +
      'GiB = 2³⁰ bytes. The OOM line is the total the driver reports to PyTorch on that card (torch.cuda.mem_get_info) ' +
      `minus about ${CUDA_CONTEXT_GIB.toFixed(1)} GiB for the CUDA context, not the size on the box. ` +
      'The total is a floor, not a promise: temporary buffers, library workspaces and the allocator’s slack come on top.';
  }

  const fallback = figure.querySelector('.fallback');
  render();
  if (fallback) fallback.hidden = true;
  figure.append(root);
}
