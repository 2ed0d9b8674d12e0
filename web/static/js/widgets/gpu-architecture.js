// GPU architecture explorer (lesson 2): build a GPU from SMs, see the CUDA-core total
// (SMs × cores per SM), and press Play to watch a kernel's blocks being handed to SMs in
// waves, the blocks that do not fit waiting for a later wave. Presets load real chips
// (A100, H100 SXM, GTX 1650) so the student sees the same launch take 19 waves on 108 SMs
// and 147 on 14. The arithmetic and the scheduling model live in logic/gpu-architecture.js.

import { clampInt, thousands } from '../logic/numbers.js';
import { el, reducedMotion } from '../dom.js';
import {
  LIMITS,
  PRESETS,
  DEFAULT_BLOCKS,
  THREADS_PER_BLOCK,
  totalCores,
  plan,
  frameAt,
  animationMillis,
} from '../logic/gpu-architecture.js';

let instances = 0;

const plural = (n, word) => `${thousands(n)} ${word}${n === 1 ? '' : 's'}`;

/** A slider and an exact number box for one integer, both labelled. */
function pairField(id, text, limits, value) {
  const field = el('div', 'wb-field wb-pair');
  const rangeLabel = el('label', null, text);
  rangeLabel.htmlFor = `${id}-range`;
  const inputs = el('div', 'wb-pair-inputs');
  const range = el('input', 'wb-range');
  Object.assign(range, { type: 'range', id: `${id}-range`, min: limits.min, max: limits.max, step: 1, value });
  const numberLabel = el('label', 'wb-visually-hidden', `${text}, exact value`);
  numberLabel.htmlFor = `${id}-number`;
  const number = el('input', 'wb-input wb-input-short');
  Object.assign(number, { type: 'number', id: `${id}-number`, min: limits.min, max: limits.max, step: 1, value });
  number.inputMode = 'numeric';
  inputs.append(range, numberLabel, number);
  field.append(rangeLabel, inputs);
  return { field, range, number };
}

export function mount(figure, params) {
  instances += 1;
  const id = (suffix) => `wb-arch-${instances}-${suffix}`;
  const state = {
    sms: clampInt(params.sms ?? 108, LIMITS.sms, 108),
    coresPerSm: clampInt(params.cores_per_sm ?? 64, LIMITS.coresPerSm, 64),
    blocks: DEFAULT_BLOCKS,
    steps: 0, // core steps shown so far
    frame: 0,
  };

  const root = el('div', 'wb-arch');
  root.dataset.state = 'idle';

  const presets = el('div', 'wb-presets');
  presets.setAttribute('role', 'group');
  presets.setAttribute('aria-label', 'Load a real GPU');
  presets.append(el('span', 'wb-presets-label', 'Load:'));
  const presetButtons = PRESETS.map((preset) => {
    const button = el('button', 'wb-button-secondary', `${preset.label} (${preset.sms} × ${preset.coresPerSm})`);
    button.type = 'button';
    button.dataset.preset = preset.id;
    presets.append(button);
    return { button, preset };
  });

  const controls = el('div', 'wb-controls wb-controls-pairs');
  const sms = pairField(id('sms'), 'Streaming multiprocessors (SMs)', LIMITS.sms, state.sms);
  const cores = pairField(id('cores'), 'FP32 cores per SM', LIMITS.coresPerSm, state.coresPerSm);
  const blocksField = el('div', 'wb-field');
  const blocksLabel = el('label', null, `Blocks of ${THREADS_PER_BLOCK} threads to run`);
  blocksLabel.htmlFor = id('blocks');
  const blocks = el('input', 'wb-input');
  Object.assign(blocks, { type: 'number', id: id('blocks'), min: LIMITS.blocks.min, max: LIMITS.blocks.max, step: 1, value: state.blocks });
  blocks.inputMode = 'numeric';
  blocksField.append(blocksLabel, blocks);
  controls.append(sms.field, cores.field, blocksField);

  const total = el('p', 'wb-big');
  total.setAttribute('aria-live', 'polite');
  const planText = el('p', 'wb-result');
  const launchNote = el('p', 'wb-note');

  const actions = el('div', 'wb-actions');
  const play = el('button', 'button', 'Play');
  play.type = 'button';
  const reset = el('button', 'wb-button-secondary', 'Reset');
  reset.type = 'button';
  actions.append(play, reset);
  const progress = el('p', 'wb-arch-progress');

  const queue = el('div', 'wb-queue');
  queue.setAttribute('aria-hidden', 'true');
  const queueDone = el('span', 'wb-queue-done');
  const queueRunning = el('span', 'wb-queue-running');
  queue.append(queueDone, queueRunning);

  const counts = el('p', 'wb-arch-counts');
  const grid = el('div', 'wb-sm-grid');
  grid.setAttribute('role', 'img');
  const legend = el('p', 'wb-legend');
  legend.setAttribute('aria-hidden', 'true');
  for (const [kind, text] of [['waiting', 'idle SM'], ['running', 'SM running a block'], ['done', 'done']]) {
    const item = el('span', 'wb-legend-item');
    item.append(el('span', `wb-swatch wb-swatch-${kind}`), document.createTextNode(text));
    legend.append(item);
  }
  const status = el('p', 'wb-visually-hidden');
  status.setAttribute('aria-live', 'polite');

  root.append(presets, controls, total, planText, launchNote, actions, progress, queue, counts, grid, legend, status);
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);

  let launch = plan(state);
  let cells = [];

  function buildGrid() {
    grid.replaceChildren();
    cells = [];
    for (let i = 0; i < launch.sms; i += 1) {
      const cell = el('span', 'wb-sm');
      const fill = el('span', 'wb-sm-fill');
      cell.append(fill);
      grid.append(cell);
      cells.push({ cell, fill });
    }
    grid.setAttribute('aria-label', `${plural(launch.sms, 'SM')}, each drawn as a square`);
  }

  function describePlan() {
    total.textContent = `${plural(state.sms, 'SM')} × ${thousands(state.coresPerSm)} cores = ${thousands(totalCores(state.sms, state.coresPerSm))} CUDA cores`;
    const last =
      launch.waves === 1
        ? `one wave of ${plural(launch.blocks, 'block')}`
        : launch.lastWaveBlocks === launch.sms
          ? `${thousands(launch.waves)} full waves`
          : `${thousands(launch.fullWaves)} full wave${launch.fullWaves === 1 ? '' : 's'} and a last one of ${plural(launch.lastWaveBlocks, 'block')}`;
    const idle = launch.idleSmsInLastWave > 0 ? `, which leaves ${plural(launch.idleSmsInLastWave, 'SM')} idle` : '';
    planText.textContent =
      `${plural(launch.blocks, 'block')} ÷ ${plural(launch.sms, 'SM')} → ${plural(launch.waves, 'wave')}: ${last}${idle}. ` +
      `Each block's ${THREADS_PER_BLOCK} threads share its SM's ${thousands(launch.coresPerSm)} cores, ⌈${THREADS_PER_BLOCK} / ${thousands(launch.coresPerSm)}⌉ = ${plural(launch.stepsPerBlock, 'step')} per wave, ` +
      `so ${thousands(launch.waves)} × ${thousands(launch.stepsPerBlock)} = ${plural(launch.totalSteps, 'core step')} in all.`;
    const model =
      'An SM takes the next waiting block when it frees up, and a block never moves once it starts. ' +
      'Simplified: here each SM runs one block at a time; real SMs keep several resident.';
    launchNote.textContent =
      state.blocks === DEFAULT_BLOCKS
        ? `2,048 blocks is the lesson's relu on a (1024, 512) tensor: 524,288 threads, ${THREADS_PER_BLOCK} per block. ${model}`
        : model;
  }

  function draw() {
    const frame = frameAt(launch, state.steps);
    const share = frame.finished ? 0 : (frame.stepInBlock + 0.5) / launch.stepsPerBlock;
    cells.forEach(({ cell, fill }, sm) => {
      let kind = 'idle';
      if (frame.finished) kind = 'done';
      else if (root.dataset.state !== 'idle' && sm < frame.running) kind = 'busy';
      cell.dataset.kind = kind;
      fill.style.height = kind === 'busy' ? `${Math.round(share * 100)}%` : kind === 'done' ? '100%' : '0%';
    });
    const started = root.dataset.state !== 'idle';
    const running = started ? frame.running : 0;
    const waiting = launch.blocks - frame.done - running;
    queueDone.style.width = `${(frame.done / launch.blocks) * 100}%`;
    queueRunning.style.width = `${(running / launch.blocks) * 100}%`;
    counts.textContent = `Blocks waiting ${thousands(waiting)} · running ${thousands(running)} · done ${thousands(frame.done)}`;
    progress.textContent = frame.finished
      ? `All ${thousands(launch.waves)} waves done`
      : started
        ? `Wave ${thousands(frame.wave)} of ${thousands(launch.waves)}`
        : `${plural(launch.waves, 'wave')} to run`;
  }

  function stop() {
    cancelAnimationFrame(state.frame);
    state.frame = 0;
  }

  function restart() {
    stop();
    launch = plan(state);
    state.steps = 0;
    root.dataset.state = 'idle';
    play.textContent = 'Play';
    buildGrid();
    describePlan();
    status.textContent = '';
    draw();
  }

  function finish() {
    stop();
    state.steps = launch.totalSteps;
    root.dataset.state = 'done';
    play.textContent = 'Play again';
    draw();
    status.textContent = `Done: ${thousands(launch.blocks)} blocks ran in ${plural(launch.waves, 'wave')} on ${plural(launch.sms, 'SM')}.`;
  }

  function animate() {
    root.dataset.state = 'running';
    play.textContent = 'Pause';
    status.textContent = `Playing: ${plural(launch.waves, 'wave')}.`;
    const msPerStep = animationMillis(launch) / launch.totalSteps;
    const began = performance.now() - state.steps * msPerStep;
    const tick = (now) => {
      state.steps = Math.min(launch.totalSteps, Math.floor((now - began) / msPerStep));
      if (state.steps >= launch.totalSteps) {
        finish();
        return;
      }
      draw();
      state.frame = requestAnimationFrame(tick);
    };
    state.frame = requestAnimationFrame(tick);
  }

  play.addEventListener('click', () => {
    if (root.dataset.state === 'running') {
      stop();
      root.dataset.state = 'paused';
      play.textContent = 'Resume';
      const frame = frameAt(launch, state.steps);
      status.textContent = `Paused in wave ${thousands(frame.wave)} of ${thousands(launch.waves)}.`;
      return;
    }
    if (root.dataset.state === 'done') state.steps = 0;
    if (reducedMotion()) {
      finish();
      return;
    }
    animate();
  });
  reset.addEventListener('click', restart);

  function setValue(key, value, pair) {
    state[key] = value;
    if (pair) {
      pair.range.value = String(value);
      if (document.activeElement !== pair.number) pair.number.value = String(value);
    }
    restart();
  }
  for (const [pair, key, limits] of [[sms, 'sms', LIMITS.sms], [cores, 'coresPerSm', LIMITS.coresPerSm]]) {
    pair.range.addEventListener('input', () => setValue(key, Number(pair.range.value), pair));
    pair.number.addEventListener('input', () => setValue(key, clampInt(pair.number.value, limits, state[key]), pair));
    pair.number.addEventListener('change', () => {
      pair.number.value = String(state[key]);
    });
  }
  blocks.addEventListener('input', () => setValue('blocks', clampInt(blocks.value, LIMITS.blocks, state.blocks)));
  blocks.addEventListener('change', () => {
    blocks.value = String(state.blocks);
  });
  for (const { button, preset } of presetButtons) {
    button.addEventListener('click', () => {
      state.sms = preset.sms;
      state.coresPerSm = preset.coresPerSm;
      for (const [pair, key] of [[sms, 'sms'], [cores, 'coresPerSm']]) {
        pair.range.value = String(state[key]);
        pair.number.value = String(state[key]);
      }
      restart();
    });
  }

  restart();
}
