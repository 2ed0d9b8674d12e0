// Memory ladder (lesson 2): the levels of memory a kernel reads from (registers, shared
// memory / L1, L2, HBM, and host memory across PCIe), each drawn as two bars on log
// scales, latency and size, so the student sees both grow by orders of magnitude on the
// way down. The rungs are native radio buttons: arrow keys move up and down the ladder,
// and the chosen rung's details (cycles, nanoseconds, who can see it) are announced.
// The figures live in logic/memory-ladder.js.

import { el } from '../dom.js';
import {
  RUNGS,
  AXES,
  CLOCK_GHZ,
  logFraction,
  cyclesToNanoseconds,
  formatNanoseconds,
  timesRegisterLatency,
  cyclesLabel,
  bytesLabel,
} from '../logic/memory-ladder.js';

let instances = 0;

/** One bar: a fill whose width is the value's place on the axis, and the value in words. */
function bar(kind, fraction, text) {
  const wrapper = el('span', `wb-bar wb-bar-${kind}`);
  const track = el('span', 'wb-bar-track');
  const fill = el('span', 'wb-bar-fill');
  fill.style.width = `${(fraction * 100).toFixed(1)}%`;
  track.append(fill);
  wrapper.append(track, el('span', 'wb-bar-text', text));
  return wrapper;
}

/** An axis row of tick labels placed at their log-scale positions. */
function axis(kind, title, { min, max, ticks }, format) {
  const row = el('div', `wb-axis wb-axis-${kind}`);
  row.setAttribute('aria-hidden', 'true');
  row.append(el('span', 'wb-axis-title', title));
  const scale = el('span', 'wb-axis-scale');
  for (const tick of ticks) {
    const label = el('span', 'wb-axis-tick', format(tick));
    label.style.left = `${(logFraction(tick, min, max) * 100).toFixed(1)}%`;
    scale.append(label);
  }
  row.append(scale);
  return row;
}

export function mount(figure) {
  instances += 1;
  const name = `wb-ladder-${instances}`;
  const root = el('div', 'wb-ladder');

  const intro = el('p', 'wb-note', 'A100-class figures. Both scales are logarithmic: each tick is 10 or 100 times the one before. Pick a rung, or use the arrow keys, for details.');
  const axes = el('div', 'wb-axes');
  axes.setAttribute('aria-hidden', 'true');
  axes.append(
    el('span', 'wb-axis-spacer'),
    axis('latency', 'Latency, cycles', AXES.latency, cyclesLabel),
    axis('size', 'Size', AXES.size, bytesLabel),
  );

  const rungs = el('fieldset', 'wb-rungs');
  rungs.append(el('legend', 'wb-visually-hidden', 'Levels of memory, fastest first'));
  const inputs = RUNGS.map((rung, index) => {
    const label = el('label', 'wb-rung');
    const input = el('input', 'wb-rung-input');
    Object.assign(input, { type: 'radio', name, value: rung.id, id: `${name}-${rung.id}` });
    if (index === 0) input.checked = true;
    label.htmlFor = input.id;
    const title = el('span', 'wb-rung-name');
    title.append(input, rung.name);
    const bars = el('span', 'wb-rung-bars');
    bars.append(
      bar('latency', logFraction(rung.latencyCycles, AXES.latency.min, AXES.latency.max), rung.latencyText),
      bar('size', logFraction(rung.sizeBytes, AXES.size.min, AXES.size.max), rung.sizeShort),
    );
    label.append(title, bars);
    rungs.append(label);
    return input;
  });

  const details = el('div', 'wb-rung-details');
  details.setAttribute('aria-live', 'polite');
  const detailName = el('p', 'wb-level-name');
  const facts = el('dl', 'wb-facts');
  const detailText = el('p', 'wb-level-text');
  details.append(detailName, facts, detailText);

  root.append(intro, axes, rungs, details);
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);

  function show(index) {
    const rung = RUNGS[index];
    root.dataset.rung = rung.id;
    detailName.textContent = rung.name;
    const ns = formatNanoseconds(cyclesToNanoseconds(rung.latencyCycles));
    const times = timesRegisterLatency(rung);
    const latency =
      rung.id === 'host'
        ? `${rung.latencyText} (order of magnitude), plus several microseconds to set up each copy`
        : `${rung.latencyText} ≈ ${ns} at ${CLOCK_GHZ} GHz${times > 1 ? `, ${times.toLocaleString('en-US')}× a register` : ''}`;
    facts.replaceChildren();
    for (const [term, value] of [['Latency', latency], ['Size', rung.sizeText], ['Who can see it', rung.scope]]) {
      facts.append(el('dt', null, term), el('dd', null, value));
    }
    detailText.textContent = rung.detail;
  }

  inputs.forEach((input, index) => input.addEventListener('change', () => show(index)));
  show(0);
}

