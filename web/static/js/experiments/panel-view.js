// Shared view pieces of the live-experiment panels (built with dom.js's el(), which only
// ever sets text: server data never goes through innerHTML): the scrollable numbers table, the
// headline statistics, the provenance stamp and the CPU-backend banners. panel.js
// re-exports everything here, so an experiment module imports from one place.

import { el, richText } from '../dom.js';
import { watchScroll } from '../scroll-hint.js';
import { formatSig } from '../logic/panel-format.js';

export { el, richText };

let idCounter = 0;

/** A page-unique id: two copies of one experiment on a page must not share ids. */
export function uniqueId(prefix) {
  idCounter += 1;
  return `exp-${prefix}-${idCounter}`;
}

/**
 * A table of numbers in a keyboard-scrollable region (no horizontal page overflow at
 * 375 px). `columns`: [{label, numeric}]; `rows`: arrays of cell text (or nodes); the
 * first cell of each row is its header. The title sits outside the scroller so it stays
 * readable when the table scrolls; it labels both the region and the table.
 */
export function dataTable({ caption, columns, rows }) {
  const titleId = uniqueId('table');
  const head = el('tr', {}, columns.map((c) => el('th', { scope: 'col', class: c.numeric ? 'exp-num' : null }, c.label)));
  const body = rows.map((cells) =>
    el('tr', {}, cells.map((cell, i) =>
      i === 0
        ? el('th', { scope: 'row' }, cell)
        : el('td', { class: columns[i] && columns[i].numeric ? 'exp-num' : null }, cell),
    )),
  );
  const table = el('table', { class: 'exp-table', 'aria-labelledby': titleId }, el('thead', {}, head), el('tbody', {}, body));
  const wrap = el('div', { class: 'exp-table-wrap', role: 'region', 'aria-labelledby': titleId, tabindex: '0' }, table);
  const block = el('div', { class: 'exp-table-block' }, el('p', { class: 'exp-table-title', id: titleId }, caption), wrap);
  watchScroll(wrap);
  return block;
}

/** Replaces the results area's content; null / false entries (optional parts) are skipped. */
export function showResults(container, ...children) {
  container.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

/** Headline numbers as a definition list: [{label, value, hint?}]. */
export function statList(items) {
  return el('dl', { class: 'exp-stats' }, items.map((item) =>
    el('div', { class: 'exp-stat' },
      el('dt', {}, item.label),
      el('dd', {}, el('span', { class: 'exp-stat-value' }, item.value), item.hint ? el('span', { class: 'exp-stat-hint' }, item.hint) : null),
    ),
  ));
}

/** A short paragraph of findings under a result. */
export function finding(text, tone = 'plain') {
  return el('p', { class: `exp-finding exp-finding-${tone}` }, richText(text));
}

const BACKEND_WORDS = { cuda: 'GPU (CUDA)', cpu: 'CPU' };

/** The provenance stamp every job result carries, in a closed <details>. */
export function provenanceDetails(prov) {
  if (!prov) return null;
  const cpu = prov.backend === 'cpu';
  const missing = cpu ? 'not applicable (CPU backend)' : 'unknown';
  const show = (v, fmt = String) => (v === null || v === undefined || v === '' ? missing : fmt(v));
  const rows = [
    ['Backend', BACKEND_WORDS[prov.backend] || prov.backend],
    ['Device', show(prov.device)],
    ['Driver version', show(prov.driver_version)],
    ['CUDA version (driver)', show(prov.cuda_version)],
    ['PCIe link', show(prov.pcie)],
    ['Max SM clock', show(prov.sm_clock_max_mhz, (v) => `${v} MHz`)],
    ['Other GPU processes', show(prov.other_gpu_processes, (v) => (v === 0 ? 'none' : String(v)))],
    ['Method', show(prov.method)],
    ['Job time', show(prov.seconds, (v) => `${formatSig(v)} s`)],
  ];
  return el('details', { class: 'exp-provenance' },
    el('summary', {}, 'Where these numbers come from'),
    el('dl', {}, rows.map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', {}, v)))),
  );
}

/** The banner shown when the server has no GPU: every number is from its CPU. */
export function cpuBanner(device) {
  if (!device || device.kind !== 'cpu') return null;
  // The card's note reads "No GPU in use (REASON): experiments run on the CPU…".
  const reason = /^No GPU in use \((.*)\):/.exec(device.note || '');
  return el('p', { class: 'exp-banner', role: 'note' },
    el('strong', {}, 'No GPU on this server. '),
    `The numbers here come from the server's CPU (${device.name}), not from a GPU. `,
    richText(reason ? `Why: ${reason[1]}.` : device.note || ''),
  );
}

/** A note on one result that ran on the CPU although the server has a GPU. */
export function resultBackendNote(prov, device) {
  if (!prov || !device || device.kind !== 'cuda' || prov.backend !== 'cpu') return null;
  return el('p', { class: 'exp-banner', role: 'note' },
    el('strong', {}, 'This run used the CPU. '),
    "The server has a GPU, but this experiment's GPU path is not available yet, so these numbers come from its CPU reference implementation.",
  );
}

/** A legend: [{label, tone, dash?, fill?, pattern?, ghost?}], drawn as line or box swatches. */
export function legend(items) {
  return el('ul', { class: 'exp-legend' }, items.map((item) =>
    el('li', {},
      el('span', { class: `exp-swatch exp-tone-${item.tone}${item.dash ? ' exp-swatch-dash' : ''}${item.fill ? ' exp-swatch-fill' : ''}${item.pattern ? ' exp-pattern' : ''}${item.ghost ? ' exp-swatch-ghost' : ''}`, 'aria-hidden': 'true' }),
      item.label,
    ),
  ));
}
