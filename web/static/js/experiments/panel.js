// The shared skeleton of every live-experiment panel (lesson.js mounts one per
// `experiment` directive): it hides the no-JS fallback, shows the CPU banner when the
// server has no GPU, builds labelled controls bounded by the server's caps
// (GET /api/device → limits), runs a job (POST → 202 → poll GET /api/jobs/{id}) while
// the status line says where it stands, and turns 429 / 422 / 400 into the server's own
// sentence. The experiment modules draw only their results; the view helpers they use
// (tables, provenance, legend) live in panel-view.js and are re-exported here.

import { el, richText, uniqueId, cpuBanner } from './panel-view.js';
import { referenceAside, recordedBesideReveal } from './panel-reference.js';
import { predictionStep, revealView } from './panel-predict.js';
import { clampInt } from '../logic/numbers.js';
import { jobStatusText, pollDelayMs } from '../logic/panel-job.js';
import { requestJson, loadDevice } from './panel-request.js';

export * from './panel-view.js';
export { requestJson, loadDevice };

/**
 * The registered experiment `name` as /api/device describes it — `{name, path,
 * defaults, rules}`, the server's single source of its defaults and bounds — or null
 * when the server could not be reached.
 */
export function experimentSpec(info, name) {
  return ((info && info.experiments) || []).find((e) => e.name === name) || null;
}

/** `{min, max}` of a numeric parameter of `spec` on this server. */
export function boundsOf(spec, field) {
  const rule = spec.rules.find((r) => r.field === field && r.kind === 'range');
  return rule ? { min: rule.min, max: rule.max } : { min: -Infinity, max: Infinity };
}

/**
 * The starting value of `field`: the lesson directive's (`params`), else the
 * experiment's default, kept inside this server's bounds.
 */
export function startValue(spec, params, field) {
  return clampInt(params[field] ?? spec.defaults[field], boundsOf(spec, field), spec.defaults[field]);
}


/** Hides the fallback and appends the panel's root (with the CPU banner when needed). */
export function panelShell(figure, device, intro) {
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  const root = el('div', { class: 'exp-panel' }, intro ? el('p', { class: 'exp-intro' }, intro) : null, cpuBanner(device));
  figure.append(root);
  return root;
}

/**
 * Labelled controls and a Run button. `fields`: [{name, label, type: 'number'|'select',
 * min, max, step, value, options: [{value, label}], hint}]. `onRun(values)` is called
 * on submit with clamped numbers and typed option values; it may be async, and further
 * presses are ignored until it settles.
 */
export function controlsForm({ fields, runLabel = 'Run', onRun }) {
  const form = el('form', { class: 'exp-controls' });
  const inputs = {};
  for (const field of fields) {
    const id = uniqueId(field.name);
    const hintId = field.hint ? `${id}-hint` : null;
    let input;
    if (field.type === 'select') {
      input = el('select', { id, name: field.name, 'aria-describedby': hintId },
        field.options.map((o) => el('option', { value: String(o.value), selected: String(o.value) === String(field.value) }, o.label)));
    } else {
      input = el('input', {
        id, name: field.name, type: 'number', inputmode: 'numeric', required: true,
        min: field.min, max: field.max, step: field.step ?? 1, value: field.value, 'aria-describedby': hintId,
      });
    }
    inputs[field.name] = input;
    form.append(el('div', { class: 'exp-field' },
      el('label', { for: id }, field.label),
      input,
      field.hint ? el('span', { class: 'exp-hint', id: hintId }, field.hint) : null,
    ));
  }
  const button = el('button', { type: 'submit', class: 'button exp-run' }, runLabel);
  form.append(el('div', { class: 'exp-actions' }, button));
  let busy = false;
  const values = () => Object.fromEntries(fields.map((f) => {
    const input = inputs[f.name];
    if (f.type === 'select') {
      const option = f.options.find((o) => String(o.value) === input.value) || f.options[0];
      return [f.name, option.value];
    }
    const n = clampInt(input.value, { min: Number(input.min), max: Number(input.max) }, f.value);
    input.value = String(n);
    return [f.name, n];
  }));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (busy) return;
    busy = true;
    button.setAttribute('aria-disabled', 'true');
    button.textContent = 'Running…';
    try {
      await onRun(values());
    } finally {
      busy = false;
      button.removeAttribute('aria-disabled');
      button.textContent = runLabel;
    }
  });
  return { form, inputs, button, values };
}

/** The status line (aria-live polite), an indeterminate progress bar and a timer. */
export function statusArea(initial = 'Not run yet.') {
  const text = el('p', { class: 'exp-status-text', role: 'status', 'aria-live': 'polite' }, initial);
  const progress = el('progress', { class: 'exp-progress', 'aria-label': 'Experiment in progress', hidden: true });
  const elapsed = el('span', { class: 'exp-elapsed', 'aria-hidden': 'true' });
  const element = el('div', { class: 'exp-status' }, text, el('div', { class: 'exp-progress-row' }, progress, elapsed));
  let timer = null;
  let shown = initial;
  const set = (message, tone = 'plain') => {
    // `code spans` in a server message are set as code, never shown with backticks.
    if (shown !== message) text.replaceChildren(...richText(message));
    shown = message;
    text.className = `exp-status-text exp-status-${tone}`;
  };
  const busy = (on) => {
    progress.hidden = !on;
    clearInterval(timer);
    elapsed.textContent = '';
    if (on) {
      const start = Date.now();
      timer = setInterval(() => { elapsed.textContent = `${Math.round((Date.now() - start) / 1000)} s`; }, 1000);
    }
  };
  return { element, set, busy, error: (message) => set(message, 'error') };
}

/** The results area: reserves its height so the page does not jump when numbers arrive. */
export function resultsArea(size = 'chart', placeholder = 'No results yet: press Run to measure on this server.') {
  return el('div', { class: `exp-results exp-results-${size}` }, el('p', { class: 'exp-placeholder' }, placeholder));
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/**
 * Runs one experiment: POST `body` to `url`, then poll until done. Returns the result,
 * or null after showing why it failed in `status`. `results` is marked busy meanwhile.
 */
export async function runJob({ url, body, status, device, results }) {
  status.busy(true);
  if (results) results.setAttribute('aria-busy', 'true');
  status.set(jobStatusText({ status: 'sending' }, device));
  // The learner's prediction (standardPanel's step) travels with the job; the server
  // scores it as the result is made and stores it before the result is readable.
  const predicted = status.prediction;
  const target = predicted === null || predicted === undefined ? url : `${url}?predict=${encodeURIComponent(predicted)}`;
  try {
    const accepted = await requestJson('POST', target, body);
    if (!accepted.ok) {
      status.error(accepted.message);
      return null;
    }
    let state = { status: accepted.data.status || 'queued', position: accepted.data.position };
    const poll = accepted.data.poll || `/api/jobs/${accepted.data.job_id}`;
    for (let attempt = 0; ; attempt += 1) {
      if (state.status === 'done') {
        status.set(jobStatusText(state, device, accepted.data), 'done');
        status.finished = state.result;
        return state.result;
      }
      if (state.status === 'failed') {
        status.error(jobStatusText(state, device, accepted.data));
        return null;
      }
      status.set(jobStatusText(state, device, accepted.data));
      await sleep(pollDelayMs(attempt));
      const next = await requestJson('GET', poll);
      if (!next.ok) {
        status.error(next.status === 404
          ? 'The server no longer knows this job (it may have restarted). Press Run again.'
          : next.message);
        return null;
      }
      state = next.data;
    }
  } finally {
    status.busy(false);
    if (results) results.removeAttribute('aria-busy');
  }
}

/**
 * The usual panel: shell, controls (with the prediction step when the experiment asks
 * one), status, the reveal and results, in that order. `fixed`: parameters the lesson
 * sets that have no control (break-it's `case`), for choosing the question.
 */
export function standardPanel(figure, device, { intro, fields, runLabel, resultsSize, onRun, experiment, fixed = {} }) {
  const root = panelShell(figure, device, intro);
  const status = statusArea();
  const results = resultsArea(resultsSize);
  const reveal = el('div', { class: 'exp-reveal-host', 'aria-live': 'polite' });
  let step = null;
  let skipping = false;
  const controls = controlsForm({
    fields,
    runLabel,
    onRun: async (values) => {
      status.prediction = null;
      status.finished = null;
      let question = null;
      if (step && !skipping) {
        const read = step.read();
        if (read.error) return;
        status.prediction = read.value;
        question = read.question;
      }
      skipping = false;
      reveal.replaceChildren();
      try {
        await onRun(values, { status, results });
      } catch (error) {
        // A result the panel cannot draw should say so, not fail silently.
        status.error(`The result arrived but could not be shown: ${error.message}`);
      }
      const scored = status.finished && status.finished.prediction;
      if (question && scored) {
        reveal.replaceChildren(revealView(scored, question));
        // On the CPU backend, what a recorded GPU run measured for the same question.
        if (device && device.kind === 'cpu') reveal.append(recordedBesideReveal(experiment, question.quantity));
      }
    },
  });
  root.append(controls.form, status.element, reveal, results);
  // On the CPU backend, what a GPU shows sits beside the run (labelled, with sources).
  if (experiment && device && device.kind === 'cpu') root.append(referenceAside(experiment));
  if (experiment) {
    loadDevice().then((info) => {
      const spec = experimentSpec(info, experiment);
      const current = () => ({ ...fixed, ...controls.values() });
      const labels = () => Object.fromEntries(Object.entries(controls.inputs)
        .filter(([, input]) => input.tagName === 'SELECT' && input.selectedOptions[0])
        .map(([name, input]) => [name, input.selectedOptions[0].textContent]));
      step = predictionStep({ questions: spec && spec.predictions, device, values: current, labels });
      if (!step) return;
      const actions = controls.button.parentElement;
      controls.form.insertBefore(step.element, actions);
      const skip = el('button', { type: 'button', class: 'exp-button-secondary exp-skip' }, 'Just run it');
      skip.addEventListener('click', () => {
        if (controls.button.getAttribute('aria-disabled')) return;
        skipping = true;
        controls.form.requestSubmit();
      });
      actions.append(skip);
      // The question names the current parameters: re-ask when they change.
      for (const input of Object.values(controls.inputs)) input.addEventListener('change', () => step.render());
    });
  }
  return { root, status, results, controls };
}
