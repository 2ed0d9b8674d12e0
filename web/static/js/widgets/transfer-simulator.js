// Device transfer simulator (lesson 4): tensors drawn in a host-memory box and a device-
// memory box joined by a bus. Pressing a tensor moves it across; a console pane prints the
// PyTorch line and the copy time from its size and the link's bandwidth, and running an
// operation that mixes devices prints PyTorch's error. The numbers come from
// ../logic/transfer-simulator.js; this file only draws them.

import { thousands } from '../logic/numbers.js';
import { el } from '../dom.js';
import {
  DEFAULT_BANDWIDTH_GBPS,
  HBM_GBPS,
  OPERATIONS,
  TENSORS,
  copySeconds,
  createState,
  decimalSize,
  formatSeconds,
  formatShape,
  hbmSeconds,
  linkChoices,
  move,
  runOperation,
  tensorBytes,
} from '../logic/transfer-simulator.js';

const MAX_CONSOLE_LINES = 40;
let instances = 0;

export function mount(figure, params) {
  const uid = `tw-xfer-${(instances += 1)}`;
  const requested = Number(params.bandwidth_gbps);
  const startGbps = Number.isFinite(requested) && requested > 0 ? requested : DEFAULT_BANDWIDTH_GBPS;
  let state = createState(startGbps);

  const root = el('div', 'tw tw-xfer');

  // The link: which bus the copies cross.
  const controls = el('div', 'tw-controls tw-xfer-controls');
  const linkField = el('div', 'tw-field');
  const linkLabel = el('label', null, 'Link between host and GPU');
  linkLabel.htmlFor = `${uid}-link`;
  const linkSelect = el('select');
  linkSelect.id = `${uid}-link`;
  for (const link of linkChoices(startGbps)) {
    const option = el('option', null, link.label);
    option.value = String(link.gbps);
    option.selected = link.gbps === startGbps;
    linkSelect.append(option);
  }
  linkField.append(linkLabel, linkSelect);
  controls.append(linkField);

  // The two memories and the bus between them.
  const stage = el('div', 'tw-xfer-stage');
  const boxes = {};
  const lists = {};
  for (const [place, title, hint] of [
    ['cpu', 'Host memory (CPU)', 'device: cpu'],
    ['cuda', 'Device memory (GPU)', 'device: cuda:0'],
  ]) {
    const box = el('div', `tw-xfer-box tw-xfer-${place}`);
    box.setAttribute('role', 'group');
    box.setAttribute('aria-labelledby', `${uid}-${place}-title`);
    const heading = el('p', 'tw-xfer-title', title);
    heading.id = `${uid}-${place}-title`;
    const sub = el('p', 'tw-xfer-hint', hint);
    const list = el('ul', 'tw-xfer-list');
    box.append(heading, sub, list);
    boxes[place] = box;
    lists[place] = list;
  }
  const bus = el('div', 'tw-xfer-bus');
  const busLabel = el('p', 'tw-xfer-bus-label');
  const busLine = el('div', 'tw-xfer-bus-line');
  busLine.setAttribute('aria-hidden', 'true');
  bus.append(busLine, busLabel);
  stage.append(boxes.cpu, bus, boxes.cuda);

  const buttons = {};
  for (const tensor of TENSORS) {
    const item = el('li');
    const button = el('button', 'tw-xfer-tensor');
    button.type = 'button';
    button.dataset.tensor = tensor.name;
    const name = el('span', 'tw-xfer-name', tensor.name);
    const shape = el('span', 'tw-xfer-shape', `${tensor.what} ${formatShape(tensor.shape)} ${tensor.dtype}`);
    const cost = el('span', 'tw-xfer-cost');
    const action = el('span', 'tw-xfer-action');
    button.append(name, shape, cost, action);
    item.append(button);
    button.addEventListener('click', () => {
      const result = move(state, tensor.name);
      state = result.state;
      log(result.lines);
      const bytes = tensorBytes(tensor);
      const to = state.places[tensor.name] === 'cuda' ? 'host → device' : 'device → host';
      lastCopy.textContent =
        `Last copy: ${tensor.name}, ${thousands(bytes)} bytes (${decimalSize(bytes)}), ${to}, ` +
        `≈ ${formatSeconds(result.seconds)} at ${state.gbps} GB/s. ` +
        `Reading the same bytes inside GPU memory at ${thousands(HBM_GBPS)} GB/s takes ${formatSeconds(hbmSeconds(bytes))}.`;
      pulseBus();
      render();
      button.focus();
    });
    buttons[tensor.name] = { item, button, cost, action };
  }

  // Operations, reset, and what happened.
  const opsBar = el('div', 'tw-xfer-ops');
  const opsLabel = el('p', 'tw-xfer-ops-label', 'Run an operation:');
  opsLabel.id = `${uid}-ops`;
  const opsGroup = el('div', 'tw-button-row');
  opsGroup.setAttribute('role', 'group');
  opsGroup.setAttribute('aria-labelledby', `${uid}-ops`);
  for (const op of OPERATIONS) {
    const button = el('button', 'tw-button tw-code-button', op.code);
    button.type = 'button';
    button.dataset.op = op.id;
    button.addEventListener('click', () => {
      const result = runOperation(state, op.id);
      log(result.lines);
    });
    opsGroup.append(button);
  }
  const reset = el('button', 'tw-button tw-button-quiet', 'Start over');
  reset.type = 'button';
  reset.addEventListener('click', () => {
    state = createState(Number(linkSelect.value));
    consolePane.replaceChildren();
    logIntro();
    lastCopy.textContent = 'No copies yet.';
    render();
  });
  opsGroup.append(reset);
  opsBar.append(opsLabel, opsGroup);

  const consoleTitle = el('p', 'tw-console-title', 'Console');
  consoleTitle.id = `${uid}-console`;
  const consolePane = el('div', 'tw-console');
  consolePane.setAttribute('role', 'log');
  consolePane.setAttribute('aria-labelledby', `${uid}-console`);
  consolePane.tabIndex = 0;

  const lastCopy = el('p', 'tw-xfer-last', 'No copies yet.');
  const totals = el('p', 'tw-xfer-totals');
  totals.setAttribute('aria-live', 'polite');

  const status = el('div', 'tw-xfer-status');
  status.append(lastCopy, totals);
  root.append(controls, stage, opsBar, consoleTitle, consolePane, status);

  linkSelect.addEventListener('change', () => {
    state = { ...state, gbps: Number(linkSelect.value) };
    render();
  });

  function log(lines) {
    for (const line of lines) {
      const row = el('div', `tw-console-line tw-console-${line.kind}`);
      row.textContent = line.kind === 'code' ? `>>> ${line.text}` : line.text;
      consolePane.append(row);
    }
    while (consolePane.childElementCount > MAX_CONSOLE_LINES) consolePane.firstElementChild.remove();
    consolePane.scrollTop = consolePane.scrollHeight;
  }

  function logIntro() {
    log([{ kind: 'comment', text: '# x, w and b were created in host memory; press one to move it.' }]);
  }

  let pulseTimer = 0;
  function pulseBus() {
    bus.classList.remove('tw-xfer-bus-busy');
    // Restart the highlight; reduced-motion users get the colour change without movement.
    void bus.offsetWidth;
    bus.classList.add('tw-xfer-bus-busy');
    clearTimeout(pulseTimer);
    pulseTimer = setTimeout(() => bus.classList.remove('tw-xfer-bus-busy'), 700);
  }

  function render() {
    for (const tensor of TENSORS) {
      const { item, button, cost, action } = buttons[tensor.name];
      const place = state.places[tensor.name];
      if (item.parentElement !== lists[place]) lists[place].append(item);
      const bytes = tensorBytes(tensor);
      const seconds = copySeconds(bytes, state.gbps);
      cost.textContent = `${decimalSize(bytes)} · ${formatSeconds(seconds)} to copy`;
      const target = place === 'cpu' ? 'GPU' : 'CPU';
      action.textContent = `Move to ${target}`;
      button.dataset.place = place;
    }
    for (const place of ['cpu', 'cuda']) {
      boxes[place].classList.toggle('tw-xfer-empty', lists[place].childElementCount === 0);
    }
    busLabel.textContent = `Bus: ${state.gbps} GB/s`;
    totals.textContent =
      state.copies === 0
        ? 'Bus traffic so far: none.'
        : `Bus traffic so far: ${state.copies} ${state.copies === 1 ? 'copy' : 'copies'}, ` +
          `${thousands(state.bytesMoved)} bytes, ≈ ${formatSeconds(state.secondsOnBus)} on the bus.`;
  }

  // Reserve room for all three tensors in either box, so moving one never shifts the page.
  function reserveHeight() {
    for (const list of Object.values(lists)) list.style.minHeight = '';
    for (const { item } of Object.values(buttons)) lists.cuda.append(item);
    const tallest = lists.cuda.offsetHeight;
    const focused = document.activeElement;
    render();
    if (focused instanceof HTMLElement && root.contains(focused)) focused.focus();
    for (const list of Object.values(lists)) list.style.minHeight = `${tallest}px`;
  }

  logIntro();
  render();
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);
  reserveHeight();
  let lastWidth = root.offsetWidth;
  let resizeTimer = 0;
  new ResizeObserver(() => {
    if (root.offsetWidth === lastWidth) return;
    lastWidth = root.offsetWidth;
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(reserveHeight, 150);
  }).observe(root);
}
