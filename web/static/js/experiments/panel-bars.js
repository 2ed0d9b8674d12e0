// Bar charts drawn with plain elements, for quantities that are parts of a whole (the
// memory bars of lesson 7) or a handful of categories (precisions, two logging runs).
// Widths are set from JS (element.style, allowed by the CSP), colours come from
// site.css variables through classes in experiments.css, so light and dark both work.
// Each chart has role="img" with a summary; the panel's table carries the numbers.

import { el, legend } from './panel-view.js';
import { segmentPercents } from '../logic/panel-memory.js';
import { formatBytes } from '../logic/panel-format.js';

function segment(pct, tone, pattern, title) {
  // A non-empty part stays visible (3 px) even when it is a sliver of a large whole.
  const node = el('span', { class: `exp-seg exp-fill-${tone}${pattern ? ' exp-pattern' : ''}${pct > 0 ? ' exp-seg-min' : ''}`, title });
  node.style.width = `${pct}%`;
  return node;
}

/**
 * Stacked bars sharing one look: each bar {label, total, scale, segments, delta?}, from
 * logic/panel-memory.js, with its own legend of the non-empty parts under it. `summary`
 * is the whole chart's aria-label.
 */
export function stackedBars(bars, { summary, format = formatBytes, describe }) {
  const items = bars.map((bar) => {
    const pcts = segmentPercents(bar.segments, bar.scale);
    const track = el('div', { class: 'exp-track' },
      bar.segments.map((s, i) => segment(pcts[i], s.tone, s.pattern, `${s.label}: ${format(s.bytes)}`)));
    const text = describe ? describe(bar) : `${format(bar.total)} of ${format(bar.scale)}`;
    const parts = bar.segments.filter((s) => s.bytes > 0)
      .map((s) => ({ label: `${s.label} (${format(s.bytes)})`, tone: s.tone, pattern: s.pattern, fill: true }));
    return el('div', { class: 'exp-bar' },
      el('p', { class: 'exp-bar-label' }, el('span', {}, bar.label), el('strong', { class: 'exp-bar-value' }, text)),
      track,
      parts.length ? legend(parts) : null,
    );
  });
  return el('div', { class: 'exp-bars', role: 'img', 'aria-label': summary }, items);
}

/**
 * Horizontal bars for a few categories: rows [{label, value, text, tone, ghost?, ghostText?}]
 * on a common scale `max` (log10 when `log`); `ghost` draws an outline (a peak) behind.
 */
export function categoryBars(rows, { summary, max, log = false, min = 1 }) {
  const position = (v) => {
    if (!(v > 0)) return 0;
    if (!log) return Math.min(100, (v / max) * 100);
    const lo = Math.log10(min);
    const hi = Math.log10(max);
    return Math.min(100, Math.max(2, ((Math.log10(v) - lo) / (hi - lo)) * 100));
  };
  const items = rows.map((row) => {
    const track = el('div', { class: 'exp-track exp-track-category' });
    if (row.ghost > 0) {
      const ghost = el('span', { class: 'exp-ghost' });
      ghost.style.width = `${position(row.ghost)}%`;
      track.append(ghost);
    }
    const fill = el('span', { class: `exp-seg exp-fill-${row.tone || 'accent'}${row.pattern ? ' exp-pattern' : ''}` });
    fill.style.width = `${position(row.value)}%`;
    track.append(fill);
    return el('div', { class: 'exp-category' },
      el('span', { class: 'exp-category-label' }, row.label),
      track,
      el('span', { class: 'exp-category-value' }, row.text),
    );
  });
  return el('div', { class: 'exp-bars exp-bars-category', role: 'img', 'aria-label': summary }, items);
}
