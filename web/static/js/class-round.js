// The class round on every page: when the instructor opens a prediction round
// (GET /api/round, polled every 2 s while a round is open and every 15 s otherwise),
// an aside at the top of the page asks its question and sends the student's prediction
// (POST /api/round/prediction). When the instructor has run it once on the shared GPU,
// every page reveals the measurement with the student's score and the explanation,
// together. Without JavaScript the aside stays hidden: the course works without rounds.

import { el, richText, uniqueId } from './experiments/panel-view.js';
import { inputFor, revealView } from './experiments/panel-predict.js';
import { recordedBesideReveal } from './experiments/panel-reference.js';
import { loadDevice } from './experiments/panel-request.js';
import { fillQuestion, formatValue } from './logic/prediction.js';
import { formatBytes } from './logic/panel-format.js';

const host = document.getElementById('class-round');
const OPEN_POLL_MS = 2000;
const IDLE_POLL_MS = 15000;

/** On a CPU server, what a recorded GPU run measured for the round's question. */
function recordedFor(round) {
  const slot = el('div');
  loadDevice().then((info) => {
    if (info && info.device && info.device.kind === 'cpu') {
      slot.replaceWith(recordedBesideReveal(round.experiment, round.question.quantity));
    }
  });
  return slot;
}

let shown = '';
let dismissed = null;

function labels(params) {
  return Object.fromEntries(Object.entries(params || {})
    .filter(([key]) => key.endsWith('_bytes'))
    .map(([key, value]) => [key, formatBytes(value)]));
}

async function send(round, input, note, button) {
  const read = input.read();
  if (read.error) {
    note.textContent = read.error;
    input.focus();
    return;
  }
  button.setAttribute('aria-disabled', 'true');
  let message;
  try {
    const response = await fetch('/api/round/prediction', {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({ round: round.id, predicted: read.value }),
    });
    const body = await response.json().catch(() => ({}));
    message = response.ok
      ? `Saved: your prediction is ${formatValue(read.value, round.question)}. You can change it until the instructor runs it.`
      : (body.error && body.error.message) || body.message || `The server refused it (HTTP ${response.status}).`;
  } catch (error) {
    message = `Could not reach the server (${error.message}).`;
  }
  button.removeAttribute('aria-disabled');
  note.textContent = message;
}

function render(round) {
  const key = round ? `${round.id}:${round.status}` : '';
  if (key === shown) return;
  shown = key;
  if (!round || dismissed === round.id) {
    host.hidden = true;
    host.replaceChildren();
    return;
  }
  const question = fillQuestion(round.question.question, round.params, labels(round.params));
  const title = el('p', { class: 'class-round-title' }, el('strong', {}, 'Class round'), ` · ${round.title}`);
  const close = el('button', { type: 'button', class: 'exp-button-secondary exp-button-small' }, 'Hide');
  close.addEventListener('click', () => { dismissed = round.id; render(null); });
  host.hidden = false;
  if (round.status === 'open') {
    const id = uniqueId('round');
    const input = inputFor(round.question, id, `${id}-hint`, round.params);
    if (round.yours !== null && input.restore) input.restore(round.yours);
    const note = el('p', { class: 'class-round-note', id: `${id}-hint`, role: 'status' },
      round.yours === null ? 'Predict before your instructor runs it on the shared GPU.' : `Your prediction: ${formatValue(round.yours, round.question)}. You can change it until the instructor runs it.`);
    const button = el('button', { type: 'submit', class: 'button' }, 'Send my prediction');
    const form = el('form', { class: 'class-round-form' },
      el(round.question.input === 'choice' ? 'p' : 'label', { for: round.question.input === 'choice' ? null : id, id: `${id}-label`, class: 'exp-predict-question' }, ...richText(question)),
      input.element, el('div', { class: 'exp-actions' }, button), note);
    form.addEventListener('submit', (event) => { event.preventDefault(); send(round, input, note, button); });
    host.replaceChildren(title, form);
  } else if (round.status === 'running') {
    host.replaceChildren(title, el('p', {}, ...richText(question)), el('p', { role: 'status' }, 'Your instructor is running it on the shared GPU now; the result appears here for everyone at once.'));
  } else if (round.status === 'revealed' && round.score) {
    host.replaceChildren(title, el('p', {}, ...richText(question)), revealView(round.score, round.question), recordedFor(round), close);
  } else if (round.status === 'revealed') {
    host.replaceChildren(title, el('p', {}, ...richText(question)), el('p', { role: 'status' }, `Measured on the shared GPU: ${formatValue(round.measured, round.question)}. You did not predict this one.`), close);
  } else {
    host.replaceChildren(title, el('p', { role: 'status' }, `The run failed: ${round.error || 'no reason given'}.`), close);
  }
}

async function poll() {
  let round = null;
  try {
    const response = await fetch('/api/round', { headers: { accept: 'application/json' } });
    if (response.ok) ({ round } = await response.json());
  } catch {
    round = null;
  }
  render(round);
  const active = round && (round.status === 'open' || round.status === 'running');
  setTimeout(poll, active ? OPEN_POLL_MS : IDLE_POLL_MS);
}

if (host) poll();
