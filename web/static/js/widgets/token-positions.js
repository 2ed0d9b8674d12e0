// Token positions calculator (lesson 7): batch × sequence length = token positions, the
// number activations grow with; attention scores grow with batch × sequence². The
// student edits either number or halves it with a button and sees both shares of the
// starting configuration side by side. The arithmetic is ../logic/token-positions.js.

import { thousands } from '../logic/numbers.js';
import { el } from '../dom.js';
import {
  HEADS,
  HIDDEN,
  attentionScoreBytes,
  compare,
  formatPercent,
  halve,
  hiddenStateBytes,
  megabytes,
} from '../logic/token-positions.js';

let instances = 0;

function positiveInteger(value, fallback) {
  const n = Math.round(Number(value));
  return Number.isFinite(n) && n >= 1 ? n : fallback;
}

export function mount(figure, params) {
  const uid = `tw-tokens-${(instances += 1)}`;
  const start = { batch: positiveInteger(params.batch, 32), seq: positiveInteger(params.seq, 128) };
  const now = { ...start };

  const root = el('div', 'tw tw-tokens');
  const controls = el('div', 'tw-controls');
  const inputs = {};
  for (const [key, text, max] of [
    ['batch', 'Batch size (tickets)', 65536],
    ['seq', 'Sequence length (tokens)', 65536],
  ]) {
    const field = el('div', 'tw-field');
    const label = el('label', null, text);
    const input = el('input');
    input.type = 'number';
    input.id = `${uid}-${key}`;
    label.htmlFor = input.id;
    input.min = '1';
    input.max = String(max);
    input.step = '1';
    input.inputMode = 'numeric';
    input.value = String(now[key]);
    input.addEventListener('input', () => {
      const value = input.valueAsNumber;
      const valid = Number.isInteger(value) && value >= 1 && value <= max;
      input.setAttribute('aria-invalid', String(!valid));
      if (!valid) return;
      now[key] = value;
      render();
    });
    field.append(label, input);
    controls.append(field);
    inputs[key] = input;
  }

  const buttons = el('div', 'tw-button-row');
  const halveBatch = el('button', 'tw-button', 'Halve the batch');
  const halveSeq = el('button', 'tw-button', 'Halve the sequence');
  const reset = el('button', 'tw-button tw-button-quiet', `Back to ${start.batch} × ${start.seq}`);
  for (const b of [halveBatch, halveSeq, reset]) b.type = 'button';
  halveBatch.addEventListener('click', () => set({ batch: halve(now.batch) }));
  halveSeq.addEventListener('click', () => set({ seq: halve(now.seq) }));
  reset.addEventListener('click', () => set({ ...start }));
  buttons.append(halveBatch, halveSeq, reset);

  const headline = el('p', 'tw-tokens-headline');
  const live = el('p', 'tw-visually-hidden');
  live.setAttribute('aria-live', 'polite');

  const bars = el('div', 'tw-tokens-bars');
  bars.setAttribute('aria-hidden', 'true');
  const barParts = {};
  for (const [key, text] of [
    ['positions', 'Token positions, activations'],
    ['attention', 'Attention scores'],
  ]) {
    const rowNode = el('div', 'tw-tokens-bar-row');
    const label = el('span', 'tw-tokens-bar-label', text);
    const track = el('div', 'tw-tokens-track');
    const startMark = el('div', 'tw-tokens-start');
    const fill = el('div', `tw-tokens-fill tw-tokens-fill-${key}`);
    const value = el('span', 'tw-tokens-bar-value');
    track.append(fill, startMark);
    rowNode.append(label, track, value);
    bars.append(rowNode);
    barParts[key] = { fill, startMark, value };
  }

  const tableWrap = el('div', 'tw-scroll');
  tableWrap.tabIndex = 0;
  tableWrap.setAttribute('role', 'region');
  tableWrap.setAttribute('aria-label', 'Token positions compared with the start');
  const table = el('table', 'tw-table');
  const head = el('thead');
  const headRow = el('tr');
  const startHead = el('th', null, `Start, ${start.batch} × ${start.seq}`);
  for (const th of [el('th', null, 'Quantity'), startHead, el('th', null, 'Now'), el('th', null, 'Share')]) {
    th.scope = 'col';
    headRow.append(th);
  }
  head.append(headRow);
  const tbody = el('tbody');
  table.append(head, tbody);
  tableWrap.append(table);

  const note = el(
    'p',
    'tw-hint',
    `Share is now ÷ start. Sizes are one tensor each, for the running example (${HIDDEN} features, ${HEADS} heads, FP32; b = batch, s = sequence length); MB = 10⁶ bytes. Attention scores are per layer.`,
  );

  root.append(controls, buttons, headline, live, bars, tableWrap, note);

  function set(changes) {
    Object.assign(now, changes);
    for (const key of ['batch', 'seq']) {
      inputs[key].value = String(now[key]);
      inputs[key].setAttribute('aria-invalid', 'false');
    }
    render();
  }

  function tableRow(key, label, startText, nowText, share) {
    const tr = el('tr');
    tr.dataset.quantity = key;
    const th = el('th', null, label);
    th.scope = 'row';
    tr.append(th, el('td', null, startText), el('td', null, nowText), el('td', null, share));
    return tr;
  }

  function render() {
    const c = compare(start, now);
    headline.textContent = `${thousands(now.batch)} × ${thousands(now.seq)} = ${thousands(c.positions)} token positions`;
    live.textContent =
      `${headline.textContent}: ${formatPercent(c.positionsPercent)} of the start for activations, ` +
      `${formatPercent(c.attentionPercent)} for attention scores.`;
    const top = Math.max(100, c.positionsPercent, c.attentionPercent);
    for (const [key, percent] of [
      ['positions', c.positionsPercent],
      ['attention', c.attentionPercent],
    ]) {
      barParts[key].fill.style.width = `${(100 * percent) / top}%`;
      barParts[key].startMark.style.left = `${(100 * 100) / top}%`;
      barParts[key].value.textContent = formatPercent(percent);
    }
    tbody.replaceChildren(
      tableRow('positions', 'Token positions', thousands(c.startPositions), thousands(c.positions), formatPercent(c.positionsPercent)),
      tableRow(
        'activations',
        `Hidden state (b, s, ${HIDDEN})`,
        megabytes(hiddenStateBytes(start.batch, start.seq)),
        megabytes(hiddenStateBytes(now.batch, now.seq)),
        formatPercent(c.positionsPercent),
      ),
      tableRow(
        'attention',
        `Attention scores (b, ${HEADS}, s, s)`,
        megabytes(attentionScoreBytes(start.batch, start.seq)),
        megabytes(attentionScoreBytes(now.batch, now.seq)),
        formatPercent(c.attentionPercent),
      ),
    );
    halveBatch.disabled = now.batch <= 1;
    halveSeq.disabled = now.seq <= 1;
  }

  const fallback = figure.querySelector('.fallback');
  render();
  if (fallback) fallback.hidden = true;
  figure.append(root);
}
