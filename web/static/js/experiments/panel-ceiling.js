// Where a result sits against this device's own ceilings, measured by the server once
// at start-up (GET /api/device's `ceilings`): one finding per placed figure, from
// ../logic/ceiling-place.js. The device is read once per page (loadDevice), so the block
// fills in as soon as that answer is there; it stays empty where no ceiling applies.

import { el, finding } from './panel-view.js';
import { loadDevice } from './panel-request.js';
import { placements } from '../logic/ceiling-place.js';

/** A block for `result` of `experiment`, filled once the device card is read. */
export function ceilingView(experiment, result) {
  const block = el('div', { class: 'exp-ceilings' });
  loadDevice().then((info) => {
    const placed = placements(experiment, result, info && info.ceilings);
    if (!placed.length) return;
    block.replaceChildren(
      el('p', { class: 'exp-chart-title' }, "Against this device's ceilings"),
      ...placed.map((p) => finding(p.text, p.tone === 'info' ? 'plain' : p.tone)),
    );
  });
  return block;
}
