// Symptom triage (lesson 9): pick a symptom, answer its two questions, and get the likely
// cause, the checks to run in order, the fixes in order, the row of the lesson's symptom
// table it lands on, and links to the lesson sections that explain it. Radio groups in
// fieldsets keep it keyboard- and screen-reader-friendly. Data: ../logic/symptom-triage.js.

import { el } from '../dom.js';
import { SYMPTOMS, diagnose, findSymptom } from '../logic/symptom-triage.js';

let instances = 0;

/** A fieldset of radio buttons; `onPick(value)` runs when one is chosen. */
function radioGroup(name, legendText, options, checked, onPick) {
  const fieldset = el('fieldset', 'tw-fieldset');
  fieldset.append(el('legend', null, legendText));
  options.forEach((option, i) => {
    const wrap = el('div', 'tw-radio');
    const input = el('input');
    input.type = 'radio';
    input.name = name;
    input.id = `${name}-${i}`;
    input.value = option.value;
    input.checked = option.value === checked;
    input.addEventListener('change', () => onPick(option.value));
    const label = el('label', null, option.label);
    label.htmlFor = input.id;
    wrap.append(input, label);
    fieldset.append(wrap);
  });
  return fieldset;
}

export function mount(figure) {
  const uid = `tw-triage-${(instances += 1)}`;
  let symptomId = null;
  let answers = {};

  const root = el('div', 'tw tw-triage');
  const symptoms = radioGroup(
    `${uid}-symptom`,
    '1. What do you see?',
    SYMPTOMS.map((s) => ({ value: s.id, label: s.label })),
    null,
    (value) => {
      symptomId = value;
      answers = {};
      renderQuestions();
      renderResult();
    },
  );
  symptoms.classList.add('tw-triage-symptoms');
  const questions = el('div', 'tw-triage-questions');
  const live = el('p', 'tw-triage-live');
  live.setAttribute('aria-live', 'polite');
  const result = el('div', 'tw-triage-result');
  const restart = el('button', 'tw-button tw-button-quiet', 'Start over');
  restart.type = 'button';
  restart.addEventListener('click', () => {
    symptomId = null;
    answers = {};
    for (const input of symptoms.querySelectorAll('input')) input.checked = false;
    renderQuestions();
    renderResult();
    symptoms.querySelector('input').focus();
  });

  const layout = el('div', 'tw-triage-layout');
  const left = el('div', 'tw-triage-ask');
  left.append(symptoms, questions, restart);
  const right = el('div', 'tw-triage-answer');
  right.append(live, result);
  layout.append(left, right);
  root.append(layout);

  function renderQuestions() {
    const symptom = findSymptom(symptomId);
    if (!symptom) {
      questions.replaceChildren(el('p', 'tw-hint tw-triage-placeholder', 'Its two questions appear here.'));
      return;
    }
    questions.replaceChildren(
      ...symptom.questions.map((q, i) =>
        radioGroup(`${uid}-${symptom.id}-${q.id}`, `${i + 2}. ${q.text}`, q.options, answers[q.id], (value) => {
          answers = { ...answers, [q.id]: value };
          renderResult();
        }),
      ),
    );
  }

  function renderResult() {
    const symptom = findSymptom(symptomId);
    const diagnosis = symptom ? diagnose(symptom.id, answers) : null;
    root.dataset.diagnosed = diagnosis ? 'true' : 'false';
    if (!diagnosis) {
      live.textContent = symptom ? 'Answer both questions to see the likely cause.' : 'Pick a symptom, then answer its two questions.';
      result.replaceChildren();
      return;
    }
    live.replaceChildren(el('strong', null, 'Likely cause: '), diagnosis.cause);
    const parts = [];
    parts.push(
      el(
        'p',
        'tw-triage-row',
        diagnosis.row
          ? `Table row: “${diagnosis.row}”.`
          : 'Not one of the four rows in the table above; the sections below cover it.',
      ),
    );
    for (const [title, items] of [
      ['Check, in this order', diagnosis.checks],
      ['Then fix, in this order', diagnosis.fixes],
    ]) {
      parts.push(el('p', 'tw-triage-heading', title));
      const list = el('ol', 'tw-triage-list');
      for (const item of items) list.append(el('li', null, item));
      parts.push(list);
    }
    parts.push(el('p', 'tw-triage-heading', 'Read more'));
    const links = el('ul', 'tw-triage-links');
    for (const link of diagnosis.links) {
      const item = el('li');
      const a = el('a', null, link.text);
      a.href = link.href;
      item.append(a);
      links.append(item);
    }
    parts.push(links);
    result.replaceChildren(...parts);
  }

  // Reserve the tallest question block, and in the two-column layout the tallest answer,
  // so choices do not move the page below. (In one column the answer grows below the
  // questions when it appears; reserving its tallest form there would leave a screenful
  // of blank space on a phone.)
  function reserveHeight() {
    const keep = { symptomId, answers };
    const focusedId = root.contains(document.activeElement) ? document.activeElement.id : '';
    live.removeAttribute('aria-live');
    questions.style.minHeight = '';
    right.style.minHeight = '';
    let tallestQuestions = 0;
    let tallestAnswer = 0;
    for (const symptom of SYMPTOMS) {
      symptomId = symptom.id;
      const [first, second] = symptom.questions;
      for (const a of first.options) {
        for (const b of second.options) {
          answers = { [first.id]: a.value, [second.id]: b.value };
          renderQuestions();
          renderResult();
          tallestQuestions = Math.max(tallestQuestions, questions.offsetHeight);
          tallestAnswer = Math.max(tallestAnswer, right.offsetHeight);
        }
      }
    }
    ({ symptomId, answers } = keep);
    renderQuestions();
    renderResult();
    const twoColumns = getComputedStyle(layout).gridTemplateColumns.trim().split(/\s+/).length > 1;
    questions.style.minHeight = `${tallestQuestions}px`;
    right.style.minHeight = twoColumns ? `${tallestAnswer}px` : '';
    if (focusedId) document.getElementById(focusedId)?.focus();
    live.setAttribute('aria-live', 'polite');
  }

  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);
  renderQuestions();
  renderResult();
  reserveHeight();
  let lastWidth = root.offsetWidth;
  let timer = 0;
  new ResizeObserver(() => {
    if (root.offsetWidth === lastWidth) return;
    lastWidth = root.offsetWidth;
    clearTimeout(timer);
    timer = setTimeout(reserveHeight, 150);
  }).observe(root);
}
