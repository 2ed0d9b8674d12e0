// Thread hierarchy visualiser (lesson 2): a kernel launch as grid → blocks → warps →
// threads. The student clicks (or arrows through) a block, a warp of that block and a
// thread of that warp, reads what each level shares, and sees the thread's global index
// i = blockIdx.x × blockDim.x + threadIdx.x, its warp ⌊threadIdx.x / 32⌋ and lane
// threadIdx.x mod 32 worked out, plus whether the i < n guard lets it touch an element.
// A "quiz me" switch hides the answers until the student types their own index.
// The arithmetic lives in logic/thread-hierarchy.js.

import { clampInt, thousands } from '../logic/numbers.js';
import { el } from '../dom.js';
import {
  WARP_SIZE,
  LIMITS,
  BLOCK_SIZES,
  LEVELS,
  describe,
  workedSteps,
  defaultElements,
  warpsPerBlock,
  threadsInWarp,
  warpOf,
} from '../logic/thread-hierarchy.js';

let instances = 0;

function field(id, text, input) {
  const wrapper = el('div', 'wb-field');
  const label = el('label', null, text);
  label.htmlFor = id;
  input.id = id;
  wrapper.append(label, input);
  return wrapper;
}

function numberInput(limits, value) {
  const input = el('input', 'wb-input');
  Object.assign(input, { type: 'number', min: limits.min, max: limits.max, step: 1, value });
  input.inputMode = 'numeric';
  return input;
}

/**
 * A row of toggle buttons with one tab stop: arrows, Home and End move the choice (as in
 * a radio group); a click or Enter picks one. `onPick(index)` is called on every change.
 */
function buttonRow(className, labelText, onPick) {
  const group = el('div', `wb-pick-row ${className}`);
  group.setAttribute('role', 'group');
  group.setAttribute('aria-label', labelText);
  group.addEventListener('keydown', (event) => {
    const buttons = [...group.querySelectorAll('button')];
    const current = buttons.indexOf(document.activeElement);
    if (current < 0) return;
    const moves = { ArrowRight: current + 1, ArrowDown: current + 1, ArrowLeft: current - 1, ArrowUp: current - 1, Home: 0, End: buttons.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = Math.min(buttons.length - 1, Math.max(0, moves[event.key]));
    onPick(next);
  });
  return group;
}

function fillRow(group, items, selected, onPick) {
  group.replaceChildren();
  items.forEach((item, index) => {
    const button = el('button', 'wb-pick', item.text);
    button.type = 'button';
    if (item.label) button.setAttribute('aria-label', item.label);
    button.setAttribute('aria-pressed', String(index === selected));
    button.tabIndex = index === selected ? 0 : -1;
    button.addEventListener('click', () => onPick(index));
    group.append(button);
  });
}

export function mount(figure, params) {
  instances += 1;
  const id = (suffix) => `wb-threads-${instances}-${suffix}`;
  const gridBlocks = clampInt(params.grid_blocks ?? 4, LIMITS.gridBlocks, 4);
  const blockThreads = clampInt(params.block_threads ?? 256, LIMITS.blockThreads, 256);
  const state = {
    gridBlocks,
    blockDim: blockThreads,
    elements: defaultElements(gridBlocks, blockThreads),
    blockIdx: Math.min(2, gridBlocks - 1),
    threadIdx: Math.min(37, blockThreads - 1),
    level: 'thread',
    quiz: false,
    revealed: false,
  };

  const root = el('div', 'wb-threads');

  const controls = el('div', 'wb-controls');
  const gridInput = numberInput(LIMITS.gridBlocks, state.gridBlocks);
  const blockSelect = el('select', 'wb-input');
  const sizes = BLOCK_SIZES.includes(state.blockDim) ? BLOCK_SIZES : [...BLOCK_SIZES, state.blockDim].sort((a, b) => a - b);
  for (const size of sizes) {
    const option = el('option', null, thousands(size));
    option.value = String(size);
    blockSelect.append(option);
  }
  blockSelect.value = String(state.blockDim);
  const elementsInput = numberInput(LIMITS.elements, state.elements);
  controls.append(
    field(id('grid'), 'Blocks in the grid (gridDim.x)', gridInput),
    field(id('block'), 'Threads per block (blockDim.x)', blockSelect),
    field(id('elements'), 'Elements in the tensor (n)', elementsInput),
  );

  const picker = el('div', 'wb-picker');
  const gridButton = el('button', 'wb-pick wb-pick-grid');
  gridButton.type = 'button';
  const blockRow = buttonRow('wb-pick-blocks', 'Blocks of the grid', (i) => pick('block', i));
  const warpRow = buttonRow('wb-pick-warps', 'Warps of the chosen block', (i) => pick('warp', i));
  const laneRow = buttonRow('wb-pick-lanes', 'Threads of the chosen warp', (i) => pick('thread', i));
  const rowLabel = (text) => el('p', 'wb-pick-label', text);
  const blockLabel = rowLabel('');
  const warpLabel = rowLabel('');
  const laneLabel = rowLabel('');
  picker.append(gridButton, blockLabel, blockRow, warpLabel, warpRow, laneLabel, laneRow);

  const levelPanel = el('div', 'wb-level-panel');
  const levelName = el('p', 'wb-level-name');
  const levelText = el('p', 'wb-level-text');
  levelPanel.append(levelName, levelText);

  const indexFields = el('div', 'wb-controls');
  const blockIdxInput = numberInput({ min: 0, max: state.gridBlocks - 1 }, state.blockIdx);
  const threadIdxInput = numberInput({ min: 0, max: state.blockDim - 1 }, state.threadIdx);
  indexFields.append(
    field(id('block-idx'), 'blockIdx.x', blockIdxInput),
    field(id('thread-idx'), 'threadIdx.x', threadIdxInput),
  );

  const quizRow = el('div', 'wb-quiz');
  const quizToggle = el('input');
  quizToggle.type = 'checkbox';
  quizToggle.id = id('quiz');
  const quizLabel = el('label', null, 'Quiz me: hide the answers until I work out i');
  quizLabel.htmlFor = id('quiz');
  const quizToggleWrap = el('div', 'wb-check');
  quizToggleWrap.append(quizToggle, quizLabel);
  const guessField = el('div', 'wb-guess');
  const guessInput = el('input', 'wb-input');
  Object.assign(guessInput, { type: 'number', min: 0, step: 1 });
  guessInput.inputMode = 'numeric';
  const guessButton = el('button', 'wb-button-secondary', 'Check');
  guessButton.type = 'button';
  guessField.append(field(id('guess'), 'Your global index i', guessInput), guessButton);
  const guessFeedback = el('p', 'wb-guess-feedback');
  guessFeedback.setAttribute('aria-live', 'polite');
  quizRow.append(quizToggleWrap, guessField, guessFeedback);

  const result = el('div', 'wb-result wb-threads-result');
  result.setAttribute('aria-live', 'polite');
  const headline = el('p', 'wb-big');
  const stepsBox = el('pre', 'wb-steps');
  const totals = el('p', 'wb-note');
  result.append(headline, stepsBox);

  root.append(controls, picker, levelPanel, indexFields, quizRow, result, totals);
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);

  function pick(level, index) {
    state.level = level;
    if (level === 'block') state.blockIdx = index;
    if (level === 'warp') {
      const lane = state.threadIdx % WARP_SIZE;
      state.threadIdx = Math.min(state.blockDim - 1, index * WARP_SIZE + lane);
    }
    if (level === 'thread') state.threadIdx = warpOf(state.threadIdx) * WARP_SIZE + index;
    state.revealed = false;
    render(level);
  }

  gridButton.addEventListener('click', () => {
    state.level = 'grid';
    render('grid');
  });

  /** Rebuilds the three button rows; `focusRow` names the row the student just used. */
  function renderPicker(focusRow) {
    const warp = warpOf(state.threadIdx);
    gridButton.textContent = `Grid: ${thousands(state.gridBlocks)} block${state.gridBlocks === 1 ? '' : 's'} × ${thousands(state.blockDim)} threads`;
    gridButton.setAttribute('aria-pressed', String(state.level === 'grid'));
    blockLabel.textContent = `Blocks (blockIdx.x), block ${state.blockIdx} chosen:`;
    fillRow(
      blockRow,
      Array.from({ length: state.gridBlocks }, (_, b) => ({ text: String(b), label: `Block ${b}` })),
      state.blockIdx,
      (i) => pick('block', i),
    );
    const warps = warpsPerBlock(state.blockDim);
    warpLabel.textContent = `Warps of block ${state.blockIdx}, warp ${warp} chosen:`;
    fillRow(
      warpRow,
      Array.from({ length: warps }, (_, w) => ({
        text: String(w),
        label: `Warp ${w}: threads ${w * WARP_SIZE} to ${w * WARP_SIZE + threadsInWarp(w, state.blockDim) - 1}`,
      })),
      warp,
      (i) => pick('warp', i),
    );
    const lanes = threadsInWarp(warp, state.blockDim);
    laneLabel.textContent = `Threads (threadIdx.x) of warp ${warp}, thread ${state.threadIdx} chosen:`;
    fillRow(
      laneRow,
      Array.from({ length: lanes }, (_, lane) => {
        const t = warp * WARP_SIZE + lane;
        return { text: String(t), label: `Thread ${t}, lane ${lane}` };
      }),
      state.threadIdx % WARP_SIZE,
      (i) => pick('thread', i),
    );
    for (const row of [blockRow, warpRow, laneRow]) row.classList.toggle('wb-pick-row-active', false);
    const activeRow = { block: blockRow, warp: warpRow, thread: laneRow }[state.level];
    if (activeRow) activeRow.classList.add('wb-pick-row-active');
    // The rows were rebuilt, so the button the student used is gone: focus its successor.
    const focusIn = { block: blockRow, warp: warpRow, thread: laneRow }[focusRow];
    if (focusIn) focusIn.querySelector('[tabindex="0"]')?.focus();
  }

  function renderLevel() {
    const level = LEVELS.find((l) => l.id === state.level);
    const which = {
      grid: `the whole launch, ${thousands(state.gridBlocks * state.blockDim)} threads`,
      block: `block ${state.blockIdx}`,
      warp: `warp ${warpOf(state.threadIdx)} of block ${state.blockIdx}`,
      thread: `thread ${state.threadIdx} of block ${state.blockIdx}`,
    }[state.level];
    levelName.textContent = `${level.name}: ${which}`;
    levelText.textContent = `${level.what[0].toUpperCase()}${level.what.slice(1)}. ${level.sentence}`;
  }

  function renderResult() {
    const info = describe(state);
    const steps = workedSteps(state);
    const hide = state.quiz && !state.revealed;
    headline.textContent = hide
      ? `Block ${state.blockIdx}, thread ${state.threadIdx}: i = ?`
      : `Block ${state.blockIdx}, thread ${state.threadIdx}: i = ${thousands(info.i)}, warp ${info.warp}, lane ${info.lane}`;
    stepsBox.textContent = hide
      ? 'i = blockIdx.x × blockDim.x + threadIdx.x = ?\nwarp = ⌊threadIdx.x / 32⌋ = ?\nlane = threadIdx.x mod 32 = ?'
      : [steps.index, steps.warp, steps.lane, steps.guard].join('\n');
    totals.textContent =
      `${thousands(state.gridBlocks)} blocks × ${thousands(state.blockDim)} threads = ${thousands(info.totalThreads)} threads ` +
      `in ${thousands(info.totalWarps)} warps (${thousands(info.warpsPerBlock)} per block) for n = ${thousands(state.elements)} elements` +
      (info.idleThreads > 0 ? `: the last ${thousands(info.idleThreads)} threads fail the guard and do nothing.` : '') +
      (info.uncovered > 0
        ? `: too few threads, so elements ${thousands(info.totalThreads)} to ${thousands(state.elements - 1)} get none. ` +
          `Covering n needs ⌈${thousands(state.elements)} / ${thousands(state.blockDim)}⌉ = ${thousands(info.blocksNeeded)} blocks.`
        : '') +
      (info.idleThreads === 0 && info.uncovered === 0 ? ': one thread per element, none idle.' : '');
    guessField.hidden = !state.quiz;
    if (!state.quiz) guessFeedback.textContent = '';
  }

  function render(focusRow) {
    blockIdxInput.max = String(state.gridBlocks - 1);
    threadIdxInput.max = String(state.blockDim - 1);
    if (document.activeElement !== blockIdxInput) blockIdxInput.value = String(state.blockIdx);
    if (document.activeElement !== threadIdxInput) threadIdxInput.value = String(state.threadIdx);
    renderPicker(focusRow);
    renderLevel();
    renderResult();
  }

  gridInput.addEventListener('input', () => {
    state.gridBlocks = clampInt(gridInput.value, LIMITS.gridBlocks, state.gridBlocks);
    state.blockIdx = Math.min(state.blockIdx, state.gridBlocks - 1);
    render();
  });
  blockSelect.addEventListener('change', () => {
    state.blockDim = Number(blockSelect.value);
    state.threadIdx = Math.min(state.threadIdx, state.blockDim - 1);
    render();
  });
  elementsInput.addEventListener('input', () => {
    state.elements = clampInt(elementsInput.value, LIMITS.elements, state.elements);
    render();
  });
  blockIdxInput.addEventListener('input', () => {
    state.blockIdx = clampInt(blockIdxInput.value, { min: 0, max: state.gridBlocks - 1 }, state.blockIdx);
    state.level = 'block';
    state.revealed = false;
    render();
  });
  threadIdxInput.addEventListener('input', () => {
    state.threadIdx = clampInt(threadIdxInput.value, { min: 0, max: state.blockDim - 1 }, state.threadIdx);
    state.level = 'thread';
    state.revealed = false;
    render();
  });
  for (const [input, key] of [[gridInput, 'gridBlocks'], [elementsInput, 'elements'], [blockIdxInput, 'blockIdx'], [threadIdxInput, 'threadIdx']]) {
    input.addEventListener('change', () => {
      input.value = String(state[key]);
    });
  }
  quizToggle.addEventListener('change', () => {
    state.quiz = quizToggle.checked;
    state.revealed = false;
    guessInput.value = '';
    render();
  });
  function check() {
    const info = describe(state);
    const guess = Number(guessInput.value);
    if (guessInput.value === '' || !Number.isFinite(guess)) {
      guessFeedback.textContent = 'Type a number first.';
      return;
    }
    if (guess === info.i) {
      state.revealed = true;
      guessFeedback.textContent = `Right: ${state.blockIdx} × ${state.blockDim} + ${state.threadIdx} = ${thousands(info.i)}.`;
    } else {
      guessFeedback.textContent = `Not ${thousands(guess)}. Multiply the block number by the threads per block, then add the thread number.`;
    }
    renderResult();
  }
  guessButton.addEventListener('click', check);
  guessInput.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') check();
  });

  render();
}
