// The prediction step of a live-experiment panel (predict, then measure): before Run
// the panel asks the one question content/predictions.toml gives for this experiment,
// backend and parameters (served in /api/device), with an input suited to it (a number
// with a log-scale slider, a power-of-two size, or a choice). "Just run it" skips it.
// After the run, the reveal marks the prediction beside the measurement on a log strip,
// states the error factor the server scored, and explains why the value is what it is,
// linking to the lesson paragraph. standardPanel (panel.js) mounts it.

import { el, richText, uniqueId } from './panel-view.js';
import {
  backendOf, pickQuestion, fillQuestion, STEPS, sliderToValue, valueToSlider, powersOfTwo,
  parsePrediction, formatValue, revealSentence,
} from '../logic/prediction.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  node.append(...children);
  return node;
}

/** The input for `question`: {element, read(): {value, error}, focus()}. */
export function inputFor(question, id, hintId, values) {
  if (question.input === 'choice') {
    const name = uniqueId('choice');
    const radios = question.choices.map((c) => el('input', { type: 'radio', name, value: String(c.value) }));
    const element = el('div', { class: 'exp-predict-choices', role: 'radiogroup', 'aria-labelledby': `${id}-label` },
      question.choices.map((c, i) => el('label', { class: 'exp-predict-choice' }, radios[i], ` ${c.label}`)));
    return {
      element,
      read: () => {
        const picked = radios.find((r) => r.checked);
        return picked ? { value: Number(picked.value), error: null } : { value: null, error: 'Pick your prediction, or press “Just run it”.' };
      },
      focus: () => radios[0].focus(),
      restore: (value) => { for (const r of radios) r.checked = Number(r.value) === value; },
    };
  }
  if (question.input === 'pow2') {
    const sizes = powersOfTwo(question.min, question.max, values.max_size ?? Infinity);
    const select = el('select', { id, 'aria-describedby': hintId },
      el('option', { value: '' }, 'Choose a size…'),
      sizes.map((n) => el('option', { value: String(n) }, `n = ${n}`)),
      el('option', { value: '0' }, 'never (not up to the largest size)'));
    return {
      element: select,
      read: () => (select.value === '' ? { value: null, error: 'Choose your prediction, or press “Just run it”.' } : { value: Number(select.value), error: null }),
      focus: () => select.focus(),
      restore: (value) => { if ([...select.options].some((o) => o.value === String(value))) select.value = String(value); },
    };
  }
  const number = el('input', { id, type: 'text', inputmode: 'decimal', autocomplete: 'off', 'aria-describedby': hintId, class: 'exp-predict-number' });
  const slider = el('input', {
    type: 'range', min: 0, max: STEPS, value: STEPS / 2, class: 'exp-predict-slider',
    'aria-label': `Prediction on a log scale from ${formatValue(question.min, question)} to ${formatValue(question.max, question)}`,
  });
  const sync = () => {
    const value = sliderToValue(slider.value, question.min, question.max);
    number.value = String(value);
    slider.setAttribute('aria-valuetext', formatValue(value, question));
  };
  slider.addEventListener('input', sync);
  number.addEventListener('input', () => {
    const { value } = parsePrediction(number.value);
    if (value !== null) {
      slider.value = String(valueToSlider(value, question.min, question.max));
      slider.setAttribute('aria-valuetext', formatValue(value, question));
    }
  });
  const element = el('div', { class: 'exp-predict-number-row' }, number, question.unit ? el('span', { class: 'exp-predict-unit' }, question.unit) : null, slider);
  const restore = (value) => {
    number.value = String(value);
    slider.value = String(valueToSlider(value, question.min, question.max));
  };
  return { element, read: () => parsePrediction(number.value), focus: () => number.focus(), restore };
}

/**
 * The step for a panel: null when this experiment asks nothing. `questions` are the
 * experiment's from /api/device; `values()` the current parameters (with `fixed`
 * ones); `labels()` how the form shows them.
 */
export function predictionStep({ questions, device, values, labels }) {
  if (!questions || !questions.length) return null;
  const element = el('fieldset', { class: 'exp-predict' });
  const error = el('p', { class: 'exp-predict-error', role: 'alert', hidden: true });
  let question = null;
  let input = null;
  let label = null;
  let shownFor = null;
  const render = () => {
    const current = values();
    question = pickQuestion(questions, backendOf(device), current);
    if (!question) {
      element.hidden = true;
      input = null;
      shownFor = null;
      return;
    }
    const text = richText(fillQuestion(question.question, current, labels()));
    // The same question with other parameters: new words, the learner's answer kept
    // (a power-of-two list is rebuilt for the new sweep, keeping the choice if it is
    // still offered).
    const sweep = question.input === 'pow2' ? current.max_size ?? null : null;
    if (shownFor && shownFor.key === question.quantity && shownFor.sweep === sweep) {
      label.replaceChildren(...text);
      return;
    }
    const kept = shownFor && shownFor.key === question.quantity ? input.read().value : null;
    const id = uniqueId('predict');
    const hintId = `${id}-hint`;
    input = inputFor(question, id, hintId, current);
    if (kept !== null && input.restore) input.restore(kept);
    shownFor = { key: question.quantity, sweep };
    const hint = question.input === 'choice'
      ? 'Commit to an answer first: the reveal after the run shows how it compares.'
      : `Your best guess${question.unit ? ` in ${question.unit}` : ''}; the reveal after the run shows how far off it was.`;
    label = el(question.input === 'choice' ? 'p' : 'label', { for: question.input === 'choice' ? null : id, id: `${id}-label`, class: 'exp-predict-question' }, ...text);
    element.hidden = false;
    element.replaceChildren(
      el('legend', { class: 'exp-predict-legend' }, 'Predict first'),
      label,
      input.element,
      el('span', { class: 'exp-hint', id: hintId }, hint),
      error,
    );
  };
  render();
  return {
    element,
    render,
    /** {value, question} to send, or {error} (shown, with focus on the input). */
    read() {
      if (!question || !input) return { value: null, question: null };
      const read = input.read();
      error.hidden = !read.error;
      error.textContent = read.error || '';
      if (read.error) {
        input.focus();
        return { error: read.error };
      }
      return { value: read.value, question };
    },
  };
}

/** A log strip with the prediction and the measurement marked; null when not drawable. */
function strip(score, question) {
  const { predicted, measured } = score;
  if (question.input === 'choice' || !(predicted > 0) || !(measured > 0)) return null;
  const lo = Math.floor(Math.log10(Math.min(predicted, measured)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(predicted, measured))));
  const x = (v) => 30 + ((Math.log10(v) - lo) / (hi - lo)) * 540;
  const ticks = [];
  for (let e = lo; e <= hi; e += 1) {
    ticks.push(svg('line', { x1: x(10 ** e), x2: x(10 ** e), y1: 44, y2: 50, class: 'exp-strip-tick' }));
    ticks.push(svg('text', { x: x(10 ** e), y: 64, 'text-anchor': 'middle', class: 'exp-strip-label' }, formatValue(10 ** e, { ...question, input: 'log' })));
  }
  const label = `Log scale: your prediction ${formatValue(predicted, question)}, measured ${formatValue(measured, question)}.`;
  return svg('svg', { viewBox: '0 0 600 70', class: 'exp-strip', role: 'img', 'aria-label': label },
    svg('line', { x1: 30, x2: 570, y1: 44, y2: 44, class: 'exp-strip-axis' }),
    ...ticks,
    svg('circle', { cx: x(measured), cy: 30, r: 7, class: 'exp-strip-measured' }),
    svg('path', { d: `M ${x(predicted)} 21 l 7 9 l -7 9 l -7 -9 z`, class: 'exp-strip-predicted' }),
    ...(Math.abs(x(predicted) - x(measured)) < 70
      ? [svg('text', { x: x(measured), y: 12, 'text-anchor': 'middle', class: 'exp-strip-text' }, 'you ≈ measured')]
      : [
        svg('text', { x: x(measured), y: 12, 'text-anchor': 'middle', class: 'exp-strip-text' }, 'measured'),
        svg('text', { x: x(predicted), y: 12, 'text-anchor': 'middle', class: 'exp-strip-text' }, 'you'),
      ]),
  );
}

/** The reveal after a run: the score, the strip, the explanation and its lesson link. */
export function revealView(score, question) {
  const tone = score.within_2x ? 'good' : 'warn';
  return el('section', { class: `exp-reveal exp-reveal-${tone}`, 'aria-label': 'Your prediction and the measurement', 'data-verdict': score.verdict },
    el('p', { class: 'exp-reveal-sentence' }, revealSentence(score, question)),
    strip(score, question),
    el('p', { class: 'exp-reveal-why' }, el('strong', {}, 'Why: '), ...richText(question.why)),
    el('p', { class: 'exp-reveal-link' }, el('a', { href: question.href }, 'Read the lesson paragraph that explains it →')),
  );
}
