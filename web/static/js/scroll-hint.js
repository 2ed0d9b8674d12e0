// Tables and other wide blocks that scroll sideways say so: while a scroll container is
// wider inside than out, it is marked data-overflowing="true" (the stylesheet then shows
// edge shadows and a "scroll sideways" note under it), and the note says which way is
// left to see. Without JavaScript the stylesheet's shadows alone hint at it.

import { el } from './dom.js';

const watched = new WeakSet();

function update(container, note) {
  const overflowing = container.scrollWidth > container.clientWidth + 1;
  container.dataset.overflowing = overflowing ? 'true' : 'false';
  note.hidden = !overflowing;
  if (!overflowing) return;
  const atStart = container.scrollLeft <= 1;
  const atEnd = container.scrollLeft + container.clientWidth >= container.scrollWidth - 1;
  note.textContent = atStart
    ? 'Scroll sideways to see the rest of the table →'
    : atEnd ? '← Scroll back for the start of the table' : '← Scroll sideways for more →';
}

/** Marks `container` while it overflows and adds the note after it. */
export function watchScroll(container) {
  if (!container || watched.has(container)) return;
  watched.add(container);
  const note = el('p', { class: 'scroll-hint', 'aria-hidden': 'true', hidden: true });
  container.after(note);
  const refresh = () => update(container, note);
  container.addEventListener('scroll', refresh, { passive: true });
  if (typeof ResizeObserver === 'function') new ResizeObserver(refresh).observe(container);
  // A container built before it is in the page is measured once it is.
  requestAnimationFrame(refresh);
}

/** Watches every sideways-scrolling table block already on the page. */
export function watchAllScrollers(root = document) {
  root.querySelectorAll('.table-scroll, .exp-table-wrap').forEach(watchScroll);
}
