// Parallel race (lesson 1): the same N equal tasks on a few CPU cores and on many GPU
// cores, drawn as two grids of tasks that fill round by round on one shared clock, with
// the rounds and the speedup written out. It makes "throughput, not speed per core"
// visible: 1,024 tasks take 128 rounds on 8 cores and 4 on 256, and with 8 tasks or
// fewer the extra GPU cores sit idle. The arithmetic lives in logic/parallel-race.js.

import { clampInt, thousands } from '../logic/numbers.js';
import { el, reducedMotion } from '../dom.js';
import {
  LIMITS,
  CPU_CORE_SPEEDS,
  race,
  laneAt,
  verdict,
  animationMillis,
} from '../logic/parallel-race.js';

let instances = 0;

/** A labelled number input; returns the field wrapper and the input. */
function numberField(id, label, limits, value) {
  const field = el('div', 'wb-field');
  const labelNode = el('label', null, label);
  labelNode.htmlFor = id;
  const input = el('input', 'wb-input');
  Object.assign(input, { type: 'number', id, min: limits.min, max: limits.max, step: 1, value });
  input.inputMode = 'numeric';
  field.append(labelNode, input);
  return { field, input };
}

/** One lane: a heading, a round counter and a canvas of task cells. */
function buildLane(name) {
  const lane = el('div', 'wb-race-lane');
  const head = el('div', 'wb-race-lane-head');
  const title = el('span', 'wb-race-lane-name');
  const count = el('span', 'wb-race-lane-count');
  head.append(title, count);
  const canvas = el('canvas', 'wb-race-canvas');
  canvas.setAttribute('role', 'img');
  lane.append(head, canvas);
  return { lane, title, count, canvas, name };
}

/** Reads the theme colours from site.css's custom properties (they follow dark mode). */
function themeColours(node) {
  const style = getComputedStyle(node);
  const read = (name) => style.getPropertyValue(name).trim();
  return { waiting: read('--border'), running: read('--warn-border'), done: read('--accent') };
}

/** Draws `tasks` cells, the first `done` filled, the next `running` marked as in flight. */
function drawTasks(canvas, tasks, done, running, colours) {
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  if (width === 0 || height === 0) return;
  const ratio = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const columns = Math.max(1, Math.ceil(Math.sqrt((tasks * width) / height)));
  const rows = Math.ceil(tasks / columns);
  const cell = Math.min(22, width / columns, height / rows);
  const gap = cell >= 5 ? 1 : 0;
  for (let i = 0; i < tasks; i += 1) {
    const x = (i % columns) * cell;
    const y = Math.floor(i / columns) * cell;
    if (i < done) ctx.fillStyle = colours.done;
    else if (i < done + running) ctx.fillStyle = colours.running;
    else ctx.fillStyle = colours.waiting;
    ctx.fillRect(x, y, cell - gap, cell - gap);
  }
}

export function mount(figure, params) {
  instances += 1;
  const id = (suffix) => `wb-race-${instances}-${suffix}`;
  const state = {
    tasks: clampInt(params.tasks ?? 1024, LIMITS.tasks, 1024),
    cpuCores: clampInt(params.cpu_cores ?? 8, LIMITS.cpuCores, 8),
    gpuCores: clampInt(params.gpu_cores ?? 256, LIMITS.gpuCores, 256),
    cpuCoreSpeed: 1,
    time: 0, // simulated time shown, in GPU task-times
    frame: 0,
  };

  const root = el('div', 'wb-race');
  root.dataset.state = 'idle';

  const controls = el('div', 'wb-controls');
  const tasks = numberField(id('tasks'), 'Tasks', LIMITS.tasks, state.tasks);
  const cpu = numberField(id('cpu'), 'CPU cores', LIMITS.cpuCores, state.cpuCores);
  const gpu = numberField(id('gpu'), 'GPU cores', LIMITS.gpuCores, state.gpuCores);
  const speedField = el('div', 'wb-field wb-field-wide');
  const speedLabel = el('label', null, 'One CPU core finishes a task');
  speedLabel.htmlFor = id('speed');
  const speed = el('select', 'wb-input');
  speed.id = id('speed');
  for (const s of CPU_CORE_SPEEDS) {
    const option = el('option', null, s === 1 ? 'as fast as one GPU core' : `${s}× as fast as one GPU core`);
    option.value = String(s);
    speed.append(option);
  }
  speedField.append(speedLabel, speed);
  controls.append(tasks.field, cpu.field, gpu.field, speedField);

  const actions = el('div', 'wb-actions');
  const start = el('button', 'button', 'Start the race');
  start.type = 'button';
  actions.append(start);
  const clock = el('p', 'wb-race-clock');

  const lanes = el('div', 'wb-race-lanes');
  const cpuLane = buildLane('CPU');
  const gpuLane = buildLane('GPU');
  lanes.append(cpuLane.lane, gpuLane.lane);

  const legend = el('p', 'wb-legend');
  for (const [kind, text] of [['waiting', 'waiting'], ['running', 'running this round'], ['done', 'done']]) {
    const item = el('span', 'wb-legend-item');
    item.append(el('span', `wb-swatch wb-swatch-${kind}`), document.createTextNode(text));
    legend.append(item);
  }
  legend.append(el('span', 'wb-legend-item', 'one task-time: one task on one GPU core'));

  const summary = el('p', 'wb-result wb-race-summary');
  summary.setAttribute('aria-live', 'polite');
  const note = el('p', 'wb-note wb-race-note');

  root.append(controls, actions, clock, lanes, legend, summary, note);
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);

  let result = race(state);

  function describeLane(laneView, laneState, now) {
    const at = laneAt(laneState, now);
    const label = `${laneView.name}: ${thousands(laneState.cores)} core${laneState.cores === 1 ? '' : 's'}`;
    laneView.title.textContent = label;
    const rounds = `${thousands(laneState.rounds)} round${laneState.rounds === 1 ? '' : 's'}`;
    if (at.finished && root.dataset.state !== 'idle') laneView.count.textContent = `done after ${rounds}`;
    else if (root.dataset.state === 'idle') laneView.count.textContent = `${rounds} to run`;
    else laneView.count.textContent = `round ${thousands(at.roundsDone + 1)} of ${thousands(laneState.rounds)}`;
    laneView.canvas.setAttribute(
      'aria-label',
      `${label}; ${thousands(at.tasksDone)} of ${thousands(laneState.tasks)} tasks done`,
    );
    return at;
  }

  function draw() {
    const colours = themeColours(root);
    for (const [view, laneState] of [[cpuLane, result.cpu], [gpuLane, result.gpu]]) {
      const at = describeLane(view, laneState, state.time);
      const showRunning = root.dataset.state === 'running' ? at.tasksRunning : 0;
      drawTasks(view.canvas, laneState.tasks, at.tasksDone, showRunning, colours);
    }
    clock.textContent = `Clock: ${formatTime(state.time)} of ${formatTime(result.slowest)} task-times`;
  }

  function formatTime(t) {
    return Number.isInteger(t) ? thousands(t) : t.toLocaleString('en-US', { maximumFractionDigits: 1 });
  }

  function summarise() {
    const { cpu: c, gpu: g } = result;
    const cpuTime = state.cpuCoreSpeed === 1 ? '' : `, each ${state.cpuCoreSpeed}× shorter`;
    const rounds = (n) => `${thousands(n)} round${n === 1 ? '' : 's'}`;
    const cores = (n) => `${thousands(n)} core${n === 1 ? '' : 's'}`;
    summary.textContent =
      `CPU: ${thousands(c.tasks)} task${c.tasks === 1 ? '' : 's'} ÷ ${cores(c.cores)} = ${rounds(c.rounds)}${cpuTime}. ` +
      `GPU: ${thousands(g.tasks)} ÷ ${thousands(g.cores)} = ${rounds(g.rounds)}. ${verdict(result)}`;
    note.textContent =
      g.idleInLastRound > 0
        ? `In the GPU's last round only ${thousands(g.busyInLastRound)} of its ${thousands(g.cores)} cores ${g.busyInLastRound === 1 ? 'has' : 'have'} a task; ` +
          `${thousands(g.idleInLastRound)} ${g.idleInLastRound === 1 ? 'sits' : 'sit'} idle.`
        : `Every GPU core has a task in every round.`;
  }

  function stop() {
    cancelAnimationFrame(state.frame);
    state.frame = 0;
  }

  function reset() {
    stop();
    result = race(state);
    state.time = 0;
    root.dataset.state = 'idle';
    start.textContent = 'Start the race';
    summarise();
    draw();
  }

  function finish() {
    stop();
    state.time = result.slowest;
    root.dataset.state = 'done';
    start.textContent = 'Run again';
    draw();
    summarise();
    summary.textContent = `Finished. ${summary.textContent}`;
  }

  function run() {
    stop();
    result = race(state);
    if (reducedMotion()) {
      finish();
      return;
    }
    root.dataset.state = 'running';
    start.textContent = 'Restart';
    const duration = animationMillis(result);
    const began = performance.now();
    const tick = (now) => {
      const fraction = Math.min(1, (now - began) / duration);
      state.time = fraction * result.slowest;
      if (fraction >= 1) {
        finish();
        return;
      }
      draw();
      state.frame = requestAnimationFrame(tick);
    };
    state.frame = requestAnimationFrame(tick);
  }

  function bind(input, key, limits) {
    input.addEventListener('input', () => {
      const value = clampInt(input.value, limits, state[key]);
      if (value === state[key] && root.dataset.state === 'idle') return;
      state[key] = value;
      reset();
    });
    input.addEventListener('change', () => {
      input.value = String(state[key]);
    });
  }
  bind(tasks.input, 'tasks', LIMITS.tasks);
  bind(cpu.input, 'cpuCores', LIMITS.cpuCores);
  bind(gpu.input, 'gpuCores', LIMITS.gpuCores);
  speed.addEventListener('change', () => {
    state.cpuCoreSpeed = Number(speed.value);
    reset();
  });
  start.addEventListener('click', run);

  new ResizeObserver(() => draw()).observe(lanes);
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', draw);
  reset();
}
