// Instructor cockpit enhancements. Everything works without this script (the filter
// form has a button, sorting is links, the page shows the GPU as it was at load); with
// it, ticking "only stuck" filters at once, and the shared-GPU section refreshes itself
// from /instructor/live.json every few seconds while the tab is visible.

import { el } from './dom.js';

const REFRESH_MS = 5000;

const filter = document.querySelector('form.gradebook-filter');
filter?.querySelector('input[name="show"]')?.addEventListener('change', () => filter.requestSubmit());

const live = document.getElementById('gpu-live');

function setText(name, text) {
  const node = live.querySelector(`[data-live="${name}"]`);
  if (node) node.textContent = text;
}

function fillRows(name, rows, columns, empty) {
  const body = live.querySelector(`tbody[data-live="${name}"]`);
  if (!body) return;
  const built = rows.map((row) => el('tr', null, columns.map((column) =>
    el(column.header ? 'th' : 'td', column.header ? { scope: 'row' } : null, String(column.text(row))))));
  if (built.length === 0) built.push(el('tr', null, el('td', { colspan: String(columns.length) }, empty)));
  body.replaceChildren(...built);
}

const fixed = (value, digits) => Number(value).toFixed(digits);

function show(view) {
  setText('device', `${view.device} (${view.backend})`);
  setText('memory', view.memory_used_mib !== null && view.memory_total_mib !== null
    ? `${view.memory_used_mib} of ${view.memory_total_mib} MiB` : 'unknown');
  setText('queue', `${view.queue.depth} waiting, ${view.queue.running} running`);
  setText('outcomes', `${view.queue.done} finished, ${view.queue.failed} failed, ${view.queue.rejected} refused`);
  setText('taken', view.taken_at);
  const student = { header: true, text: (r) => r.name };
  fillRows('gpu-use', view.gpu_use, [
    student,
    { text: (r) => r.active_now },
    { text: (r) => r.done },
    { text: (r) => r.failed },
    { text: (r) => r.refused },
    { text: (r) => `${fixed(r.busy_secs, 1)} s` },
    { text: (r) => `${fixed(r.playground_mib, 0)} MiB` },
  ], 'No experiments yet.');
  fillRows('recent', view.recent, [
    { text: (r) => r.finished },
    { header: true, text: (r) => r.name },
    { text: (r) => r.experiment },
    { text: (r) => r.params },
    { text: (r) => r.device },
    { text: (r) => `${fixed(r.secs, 2)} s` },
    { text: (r) => r.outcome },
  ], 'No experiments yet.');
  live.dataset.refreshed = String(Date.now());
}

async function refresh() {
  if (document.visibilityState !== 'visible') return;
  try {
    const response = await fetch(live.dataset.liveUrl, { credentials: 'same-origin', cache: 'no-store' });
    if (response.ok) show(await response.json());
  } catch {
    // A missed refresh is retried on the next tick; the page keeps what it shows.
  }
}

if (live) {
  setInterval(refresh, REFRESH_MS);
  document.addEventListener('visibilitychange', refresh);
}
