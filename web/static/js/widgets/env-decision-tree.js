// "What does your machine say?" (lesson 3): the lesson's environment checks as a decision
// tree. The student either pastes what nvidia-smi and check_env.py printed (the widget
// reads it and answers what it can) or clicks what their machine printed, one question at
// a time; the walk ends at the first broken layer (driver, container, PyTorch build,
// process) with the reason and the next step. Each answer can be changed. The tree, the
// diagnoses and the output reader live in logic/env-decision-tree.js.

import { el } from '../dom.js';
import {
  QUESTIONS,
  DIAGNOSES,
  CPU_ONLY_EXAMPLE,
  walk,
  readOutput,
  optionOf,
} from '../logic/env-decision-tree.js';

let instances = 0;

function button(text, className) {
  const node = el('button', className, text);
  node.type = 'button';
  return node;
}

/** An option's text, in code style when it is literal terminal output. */
function optionContent(option) {
  return option.code ? el('code', null, option.label) : document.createTextNode(option.label);
}

export function mount(figure) {
  instances += 1;
  const id = (suffix) => `wb-env-${instances}-${suffix}`;
  let answers = {};

  const root = el('div', 'wb-env');

  const paste = el('div', 'wb-env-paste');
  const pasteLabel = el('label', null, 'Paste what nvidia-smi and check_env.py printed (optional)');
  pasteLabel.htmlFor = id('paste');
  const textarea = el('textarea', 'wb-input wb-env-textarea');
  textarea.id = id('paste');
  textarea.rows = 5;
  textarea.spellcheck = false;
  textarea.setAttribute('autocomplete', 'off');
  const pasteActions = el('div', 'wb-actions');
  const read = button('Read my output', 'button');
  const example = button('Use the lesson’s CPU-only example', 'wb-button-secondary');
  pasteActions.append(read, example);
  const findings = el('div', 'wb-env-findings');
  findings.setAttribute('aria-live', 'polite');
  paste.append(pasteLabel, textarea, pasteActions, findings);

  const stepByStep = el('p', 'wb-env-or', 'Or answer step by step:');
  const path = el('ol', 'wb-env-path');
  path.setAttribute('aria-label', 'Your answers so far');
  const step = el('div', 'wb-env-step');
  const result = el('div', 'wb-env-result');
  result.setAttribute('aria-live', 'polite');
  result.tabIndex = -1;
  const startOver = button('Start over', 'wb-button-secondary');

  root.append(paste, stepByStep, path, step, result, startOver);
  const fallback = figure.querySelector('.fallback');
  if (fallback) fallback.hidden = true;
  figure.append(root);

  function renderPath(taken) {
    path.replaceChildren();
    path.hidden = taken.length === 0;
    for (const { question, option } of taken) {
      const item = el('li', 'wb-env-answer');
      const text = el('span', 'wb-env-answer-text');
      text.append(el('span', 'wb-env-answer-q', QUESTIONS[question].prompt), ' ');
      const chosen = el('strong');
      chosen.append(optionContent(optionOf(question, option)));
      text.append(chosen);
      const change = button('Change', 'wb-button-link');
      change.setAttribute('aria-label', `Change the answer to: ${QUESTIONS[question].prompt}`);
      change.addEventListener('click', () => {
        // Forget this answer and every later one on the path, then ask again from here.
        const index = taken.findIndex((t) => t.question === question);
        for (const later of taken.slice(index)) delete answers[later.question];
        render({ focus: 'question' });
      });
      item.append(text, change);
      path.append(item);
    }
  }

  function renderQuestion(questionId) {
    step.replaceChildren();
    step.hidden = !questionId;
    if (!questionId) return;
    const question = QUESTIONS[questionId];
    const prompt = el('p', 'wb-env-prompt', question.prompt);
    prompt.id = id(`q-${questionId}`);
    prompt.tabIndex = -1;
    step.append(prompt);
    if (question.command) {
      const run = el('p', 'wb-note');
      run.append('Run: ', el('code', null, question.command));
      step.append(run);
    }
    const options = el('div', 'wb-env-options');
    options.setAttribute('role', 'group');
    options.setAttribute('aria-labelledby', prompt.id);
    for (const option of question.options) {
      const choice = button('', 'wb-env-option');
      choice.append(optionContent(option));
      choice.dataset.option = option.id;
      choice.addEventListener('click', () => {
        answers[questionId] = option.id;
        render({ focus: 'next' });
      });
      options.append(choice);
    }
    step.append(options);
  }

  function renderDiagnosis(diagnosisId) {
    result.replaceChildren();
    result.hidden = !diagnosisId;
    root.dataset.diagnosis = diagnosisId || '';
    if (!diagnosisId) return;
    const diagnosis = DIAGNOSES[diagnosisId];
    result.classList.toggle('wb-env-healthy', diagnosis.healthy);
    result.append(
      el('p', 'wb-env-layer', `${diagnosis.healthy ? 'Result' : 'Broken layer'}: ${diagnosis.layer}`),
      el('p', null, diagnosis.why),
    );
    const next = el('p');
    next.append(el('strong', null, 'Next step: '), diagnosis.next);
    result.append(next);
  }

  function render({ focus } = {}) {
    const state = walk(answers);
    renderPath(state.path);
    renderQuestion(state.question);
    renderDiagnosis(state.diagnosis);
    if (focus === 'next' || focus === 'question') {
      if (state.question) step.querySelector('.wb-env-option')?.focus();
      else result.focus();
    }
  }

  function readPaste() {
    const { answers: found, findings: notes } = readOutput(textarea.value);
    answers = found;
    findings.replaceChildren();
    if (notes.length === 0) {
      findings.append(el('p', 'wb-note', 'Nothing in the paste looks like nvidia-smi or check_env.py output; answer the questions below instead.'));
    } else {
      findings.append(el('p', 'wb-env-findings-title', 'From your paste:'));
      const list = el('ul');
      for (const note of notes) list.append(el('li', null, note));
      findings.append(list);
      const state = walk(answers);
      if (state.question) {
        findings.append(el('p', 'wb-note', 'The paste does not answer every question; pick the rest below.'));
      }
    }
    render({ focus: 'next' });
  }

  read.addEventListener('click', readPaste);
  example.addEventListener('click', () => {
    textarea.value = CPU_ONLY_EXAMPLE;
    readPaste();
  });
  startOver.addEventListener('click', () => {
    answers = {};
    textarea.value = '';
    findings.replaceChildren();
    render({ focus: 'question' });
  });

  render();
}
