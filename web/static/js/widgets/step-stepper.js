// Step stepper (lesson 6): walks the lesson's complete training step one line at a time,
// under the five rows of its table (batch read, device copy, forward, backward, logging).
// For each line it highlights the code, says what the CPU and the GPU are doing (busy,
// waiting or idle) and lists the tensors alive in host and device memory afterwards, with
// what appeared and what was freed. The data lives in ../logic/step-stepper.js.

import { el } from '../dom.js';
import { STAGES, STEPS, TENSORS, changes, firstStepOf, formatShape } from '../logic/step-stepper.js';

let instances = 0;

const SETUP = ['model = torch.nn.Linear(8, 3).to(device)', 'optimizer = torch.optim.SGD(model.parameters(), lr=0.1)'];
const STATE_WORDS = { busy: 'Busy', waiting: 'Waiting', idle: 'Idle' };

function button(text, className = 'tw-button') {
  const node = el('button', className, text);
  node.type = 'button';
  return node;
}

export function mount(figure) {
  const uid = `tw-stepper-${(instances += 1)}`;
  let index = 0;

  const root = el('div', 'tw tw-stepper');

  // The five rows of the lesson's table; each jumps to its first line.
  const stageList = el('ol', 'tw-stepper-stages');
  stageList.setAttribute('aria-label', 'Stages of a training step');
  const stageButtons = STAGES.map((stage) => {
    const item = el('li');
    const jump = button(stage, 'tw-stepper-stage');
    jump.addEventListener('click', () => go(firstStepOf(stage)));
    item.append(jump);
    stageList.append(item);
    return jump;
  });

  // The step's code, one element per line, the current line(s) marked.
  const code = el('pre', 'tw-code tw-stepper-code');
  code.tabIndex = 0;
  code.setAttribute('role', 'region');
  code.setAttribute('aria-label', 'The training step in code');
  for (const line of SETUP) code.append(el('span', 'tw-code-line tw-code-context', line));
  const lineNodes = STEPS.map((step) =>
    step.code.map((line) => {
      const node = el('span', 'tw-code-line', line);
      code.append(node);
      return node;
    }),
  );

  const position = el('p', 'tw-stepper-position');
  position.id = `${uid}-position`;

  const sides = el('div', 'tw-stepper-sides');
  const side = {};
  for (const [key, name] of [
    ['cpu', 'CPU'],
    ['gpu', 'GPU'],
  ]) {
    const card = el('div', 'tw-stepper-card');
    const head = el('p', 'tw-stepper-card-head');
    const title = el('span', 'tw-stepper-card-title', name);
    const badge = el('span', 'tw-badge');
    head.append(title, badge);
    const text = el('p', 'tw-stepper-card-text');
    card.append(head, text);
    sides.append(card);
    side[key] = { card, badge, text };
  }

  const memory = el('div', 'tw-stepper-memory');
  const memoryLists = {};
  for (const [key, name] of [
    ['host', 'Host memory (CPU)'],
    ['device', 'Device memory (GPU)'],
  ]) {
    const column = el('div', 'tw-stepper-memory-column');
    const heading = el('p', 'tw-stepper-memory-title', `${name} after this line`);
    heading.id = `${uid}-${key}`;
    const list = el('ul', 'tw-stepper-tensors');
    list.setAttribute('aria-labelledby', heading.id);
    column.append(heading, list);
    memory.append(column);
    memoryLists[key] = list;
  }
  const sizesNote = el(
    'p',
    'tw-hint',
    'Sizes are each tensor’s own bytes (elements × 4 for float32, × 8 for int64); PyTorch’s allocator rounds every block up to 512 bytes.',
  );
  const note = el('p', 'tw-stepper-note');

  const nav = el('div', 'tw-button-row tw-stepper-nav');
  const previous = button('← Previous line');
  const next = button('Next line →');
  const restart = button('Start over', 'tw-button tw-button-quiet');
  previous.addEventListener('click', () => go(index - 1));
  next.addEventListener('click', () => go(index + 1));
  restart.addEventListener('click', () => go(0));
  nav.append(previous, next, restart);

  const live = el('p', 'tw-visually-hidden');
  live.setAttribute('aria-live', 'polite');

  const body = el('div', 'tw-stepper-body');
  body.append(position, sides, note, memory);
  root.append(stageList, code, nav, body, sizesNote, live);

  function tensorItem(id, status) {
    const tensor = TENSORS[id];
    const item = el('li', `tw-tensor tw-tensor-${status}`);
    const name = el('code', null, tensor.label);
    const detail = el('span', 'tw-tensor-detail', ` ${formatShape(tensor.shape)} ${tensor.dtype}, ${tensor.bytes} B`);
    item.append(name, detail);
    if (status !== 'kept') item.append(el('span', 'tw-tag', status === 'new' ? 'new' : 'freed'));
    return item;
  }

  function fillList(key) {
    const step = STEPS[index];
    const { added, removed } = changes(index, key);
    const items = step[key].map((id) => tensorItem(id, added.includes(id) ? 'new' : 'kept'));
    items.push(...removed.map((id) => tensorItem(id, 'freed')));
    if (items.length === 0) items.push(el('li', 'tw-tensor tw-tensor-none', 'no tensors of this step'));
    memoryLists[key].replaceChildren(...items);
  }

  let announce = false;

  function render() {
    const step = STEPS[index];
    stageButtons.forEach((jump, i) => {
      const current = STAGES[i] === step.stage;
      jump.classList.toggle('tw-current', current);
      if (current) jump.setAttribute('aria-current', 'step');
      else jump.removeAttribute('aria-current');
    });
    lineNodes.forEach((nodes, i) => {
      for (const node of nodes) {
        node.classList.toggle('tw-code-current', i === index);
        node.classList.toggle('tw-code-done', i < index);
      }
    });
    position.textContent = `Line ${index + 1} of ${STEPS.length} · ${step.stage}: ${step.title}`;
    for (const key of ['cpu', 'gpu']) {
      const { card, badge, text } = side[key];
      badge.textContent = STATE_WORDS[step[key].state];
      card.dataset.state = step[key].state;
      text.textContent = step[key].text;
    }
    fillList('host');
    fillList('device');
    note.textContent = step.note;
    previous.disabled = index === 0;
    next.disabled = index === STEPS.length - 1;
    root.dataset.index = String(index);
    if (!announce) return;
    live.textContent =
      `Line ${index + 1} of ${STEPS.length}, ${step.stage}: ${step.code.join('; ')}. ` +
      `CPU ${STATE_WORDS[step.cpu.state].toLowerCase()}: ${step.cpu.text} GPU ${STATE_WORDS[step.gpu.state].toLowerCase()}: ${step.gpu.text}`;
  }

  function go(target) {
    const clamped = Math.max(0, Math.min(STEPS.length - 1, target));
    const focused = document.activeElement;
    index = clamped;
    announce = true;
    render();
    // Keep focus on a usable control when the pressed one becomes disabled.
    if (focused === next && next.disabled) previous.focus();
    if (focused === previous && previous.disabled) next.focus();
  }

  // Reserve the tallest state's height, so stepping never moves the page below.
  function reserveHeight() {
    body.style.minHeight = '';
    const keep = index;
    const keepAnnounce = announce;
    announce = false;
    let tallest = 0;
    for (let i = 0; i < STEPS.length; i += 1) {
      index = i;
      render();
      tallest = Math.max(tallest, body.offsetHeight);
    }
    index = keep;
    render();
    announce = keepAnnounce;
    body.style.minHeight = `${tallest}px`;
  }

  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);
  render();
  reserveHeight();
  let resizeTimer = 0;
  let lastWidth = root.offsetWidth;
  new ResizeObserver(() => {
    if (root.offsetWidth === lastWidth) return;
    lastWidth = root.offsetWidth;
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(reserveHeight, 150);
  }).observe(root);
}
