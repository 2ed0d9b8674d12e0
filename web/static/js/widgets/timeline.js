// Timeline widget (lesson 5): a CPU lane of kernel launches and a GPU lane of the kernels
// running, for a loop of `steps` steps. An "add loss.item()" marker can be dragged onto the
// lanes (or moved with the arrow keys on its slider) to put a sync point after one step,
// or a checkbox puts one in every step. The readout compares what a host timer measures
// without synchronising and with torch.cuda.synchronize(). Numbers: ../logic/timeline.js.

import { el } from '../dom.js';
import {
  DEFAULT_CPU_MS,
  DEFAULT_GPU_MS,
  DEFAULT_STEPS,
  axisTicks,
  formatMs,
  markerSchedule,
  simulate,
  worstCaseMs,
} from '../logic/timeline.js';

let instances = 0;

/** A labelled range input with its value shown beside the label. */
function rangeField(id, labelText, { min, max, value, unit }) {
  const field = el('div', 'tw-field tw-range-field');
  const label = el('label', null, `${labelText}: `);
  label.htmlFor = id;
  const shown = el('span', 'tw-range-value');
  label.append(shown);
  const input = el('input');
  input.type = 'range';
  input.id = id;
  input.min = String(min);
  input.max = String(max);
  input.step = '1';
  input.value = String(value);
  field.append(label, input);
  const show = (text) => {
    shown.textContent = text;
    input.setAttribute('aria-valuetext', text);
  };
  show(unit(value));
  return { field, input, show };
}

export function mount(figure, params) {
  const uid = `tw-timeline-${(instances += 1)}`;
  const requested = Math.round(Number(params.steps));
  const steps = Number.isFinite(requested) && requested >= 1 ? Math.min(requested, 20) : DEFAULT_STEPS;

  const root = el('div', 'tw tw-timeline');

  const markerName = (k) => (k === 0 ? 'nowhere' : `after step ${k}`);
  const marker = rangeField(`${uid}-marker`, 'Add loss.item()', { min: 0, max: steps, value: 0, unit: markerName });
  const every = el('div', 'tw-field tw-check-field');
  const everyBox = el('input');
  everyBox.type = 'checkbox';
  everyBox.id = `${uid}-every`;
  const everyLabel = el('label', null, 'loss.item() in every step');
  everyLabel.htmlFor = everyBox.id;
  every.append(everyBox, everyLabel);
  const cpu = rangeField(`${uid}-cpu`, 'CPU time per step', { min: 1, max: 20, value: DEFAULT_CPU_MS, unit: (v) => `${v} ms` });
  const gpu = rangeField(`${uid}-gpu`, 'GPU time per step', { min: 1, max: 20, value: DEFAULT_GPU_MS, unit: (v) => `${v} ms` });

  const controls = el('div', 'tw-controls tw-timeline-controls');
  controls.append(marker.field, every, cpu.field, gpu.field);

  // The lanes: a plot drawn with positioned boxes, summarised for screen readers.
  const plot = el('div', 'tw-timeline-plot');
  plot.setAttribute('role', 'img');
  const lanes = {};
  for (const [key, name] of [
    ['cpu', 'CPU'],
    ['gpu', 'GPU'],
  ]) {
    const row = el('div', 'tw-timeline-row');
    const label = el('span', 'tw-timeline-lane-label', name);
    const lane = el('div', `tw-timeline-lane tw-timeline-lane-${key}`);
    row.append(label, lane);
    plot.append(row);
    lanes[key] = lane;
  }
  const axisRow = el('div', 'tw-timeline-row tw-timeline-axis-row');
  const axis = el('div', 'tw-timeline-axis');
  axisRow.append(el('span', 'tw-timeline-lane-label', 'ms'), axis);
  plot.append(axisRow);
  const handle = el('div', 'tw-timeline-handle');
  handle.append(el('span', 'tw-timeline-handle-label', '.item()'));
  lanes.cpu.parentElement.parentElement.append(handle);

  const legend = el('ul', 'tw-legend');
  for (const [cls, text] of [
    ['tw-swatch-launch', 'CPU launching a step'],
    ['tw-swatch-wait', 'CPU waiting at loss.item()'],
    ['tw-swatch-kernel', 'GPU running a step (numbered)'],
    ['tw-swatch-stop', 'where t1 (CPU lane) and t2 (GPU lane) stop'],
  ]) {
    const item = el('li');
    const swatch = el('span', `tw-swatch ${cls}`);
    swatch.setAttribute('aria-hidden', 'true');
    item.append(swatch, document.createTextNode(text));
    legend.append(item);
  }

  const code = el('pre', 'tw-code');
  code.tabIndex = 0;
  code.setAttribute('role', 'region');
  code.setAttribute('aria-label', 'The loop being timed');

  const readout = el('dl', 'tw-readout');
  const rows = {};
  for (const [key, term] of [
    ['noSync', 'Host timer, no sync (t1 − t0)'],
    ['sync', 'Host timer after synchronize() (t2 − t0)'],
    ['missed', 'Missed by the unsynchronised timer'],
    ['seen', 'Share the unsynchronised timer saw'],
    ['idle', 'GPU idle between steps'],
    ['perStep', 'Per step, on average'],
  ]) {
    const wrap = el('div', 'tw-readout-row');
    const dt = el('dt', null, term);
    const dd = el('dd');
    dd.dataset.value = key;
    wrap.append(dt, dd);
    readout.append(wrap);
    rows[key] = dd;
  }
  const live = el('p', 'tw-visually-hidden');
  live.setAttribute('aria-live', 'polite');

  root.append(controls, plot, legend, code, readout, live);

  let result;
  let maxMs;
  // Where a marker after step k sits: the moment loss.item() returns, when the GPU finishes
  // step k. With one marker there are no waits before it, so these points do not move as
  // the marker does, which keeps dragging stable. anchors[0] is "nowhere", the lane start.
  let anchors = [0];

  function settings() {
    return {
      position: Number(marker.input.value),
      everyStep: everyBox.checked,
      cpuMs: Number(cpu.input.value),
      gpuMs: Number(gpu.input.value),
    };
  }

  function pct(ms) {
    return `${(100 * ms) / maxMs}%`;
  }

  function block(className, start, end, text) {
    const node = el('div', className, text);
    node.style.left = pct(start);
    node.style.width = pct(end - start);
    return node;
  }

  function render() {
    const s = settings();
    marker.show(s.everyStep ? 'in every step' : markerName(s.position));
    marker.input.disabled = s.everyStep;
    cpu.show(`${s.cpuMs} ms`);
    gpu.show(`${s.gpuMs} ms`);
    result = simulate({ steps, cpuMs: s.cpuMs, gpuMs: s.gpuMs, syncAfter: markerSchedule(s.position, s.everyStep) });
    maxMs = worstCaseMs(steps, s.cpuMs, s.gpuMs);
    const free = simulate({ steps, cpuMs: s.cpuMs, gpuMs: s.gpuMs, syncAfter: () => false });
    anchors = [0, ...free.gpu.map((seg) => seg.end)];

    lanes.cpu.replaceChildren(
      ...result.cpu.map((seg) =>
        block(seg.kind === 'wait' ? 'tw-timeline-wait' : 'tw-timeline-launch', seg.start, seg.end),
      ),
    );
    lanes.gpu.replaceChildren(...result.gpu.map((seg) => block('tw-timeline-kernel', seg.start, seg.end, String(seg.step))));
    axis.replaceChildren(
      ...axisTicks(maxMs).map((t) => {
        const tick = el('span', 'tw-timeline-tick', String(t));
        tick.style.left = pct(t);
        if (t / maxMs > 0.9) tick.classList.add('tw-timeline-tick-end');
        return tick;
      }),
    );
    // End-of-run markers: where each timer stops.
    lanes.cpu.append(block('tw-timeline-stop', result.hostNoSyncMs, result.hostNoSyncMs));
    lanes.gpu.append(block('tw-timeline-stop', result.hostSyncMs, result.hostSyncMs));

    const waits = result.cpu.filter((seg) => seg.kind === 'wait');
    handle.hidden = s.everyStep;
    handle.classList.toggle('tw-timeline-handle-parked', s.position === 0);
    if (!s.everyStep) {
      const at = anchors[s.position];
      handle.style.left = `calc(var(--tw-lane-offset) + (100% - var(--tw-lane-offset)) * ${at / maxMs})`;
    }

    rows.noSync.textContent = formatMs(result.hostNoSyncMs);
    rows.sync.textContent = formatMs(result.hostSyncMs);
    rows.missed.textContent = formatMs(result.missedMs);
    rows.seen.textContent = `${Math.round((100 * result.hostNoSyncMs) / result.hostSyncMs)}%`;
    rows.idle.textContent = formatMs(result.gpuIdleMs);
    rows.perStep.textContent = formatMs(result.perStepMs);

    code.textContent = loopCode(s);
    const where = s.everyStep ? 'in every step' : s.position === 0 ? 'nowhere' : `after step ${s.position}`;
    plot.setAttribute(
      'aria-label',
      `Timeline of ${steps} steps. The CPU finishes launching at ${formatMs(result.hostNoSyncMs)}, ` +
        `waiting ${formatMs(result.cpuWaitMs)} in total; the GPU finishes at ${formatMs(result.hostSyncMs)}, ` +
        `idle ${formatMs(result.gpuIdleMs)} between steps.`,
    );
    live.textContent =
      `loss.item() ${where}: the host timer reads ${formatMs(result.hostNoSyncMs)} without sync ` +
      `and ${formatMs(result.hostSyncMs)} with it; the GPU sits idle ${formatMs(result.gpuIdleMs)}.`;
    if (waits.length) root.dataset.waits = String(waits.length);
    else delete root.dataset.waits;
  }

  function loopCode(s) {
    const sync = s.everyStep
      ? '    print(loss.item())  # sync: CPU waits'
      : s.position === 0
        ? '    # no .item(): the CPU never waits'
        : `    if step == ${s.position}:\n        print(loss.item())  # sync`;
    return [
      't0 = time.perf_counter()',
      `for step in range(1, ${steps + 1}):`,
      `    # ${s.cpuMs} ms to launch, ${s.gpuMs} ms of GPU work`,
      '    loss = train_step(batch)',
      sync,
      `t1 = time.perf_counter()  # ${formatMs(result.hostNoSyncMs)}`,
      'torch.cuda.synchronize()',
      `t2 = time.perf_counter()  # ${formatMs(result.hostSyncMs)}`,
    ].join('\n');
  }

  // Dragging: the marker snaps to the nearest anchor, the end of a step on the GPU (or the
  // lane start, meaning "nowhere"). The range input stays the accessible control and the
  // source of truth.
  function positionAt(clientX) {
    const box = lanes.cpu.getBoundingClientRect();
    const ms = ((clientX - box.left) / box.width) * maxMs;
    let best = 0;
    anchors.forEach((anchor, position) => {
      if (Math.abs(ms - anchor) < Math.abs(ms - anchors[best])) best = position;
    });
    return best;
  }

  function dragTo(clientX) {
    if (everyBox.checked) return;
    const position = positionAt(clientX);
    if (position !== Number(marker.input.value)) {
      marker.input.value = String(position);
      render();
    }
  }

  let dragging = false;
  plot.addEventListener('pointerdown', (event) => {
    if (everyBox.checked || event.button !== 0) return;
    dragging = true;
    plot.setPointerCapture(event.pointerId);
    handle.classList.add('tw-timeline-handle-active');
    dragTo(event.clientX);
  });
  plot.addEventListener('pointermove', (event) => {
    if (dragging) dragTo(event.clientX);
  });
  const stopDragging = () => {
    dragging = false;
    handle.classList.remove('tw-timeline-handle-active');
  };
  plot.addEventListener('pointerup', stopDragging);
  plot.addEventListener('pointercancel', stopDragging);

  for (const input of [marker.input, everyBox, cpu.input, gpu.input]) {
    input.addEventListener('input', render);
  }

  const fallback = figure.querySelector('.fallback');
  render();
  if (fallback) fallback.hidden = true;
  figure.append(root);
}
