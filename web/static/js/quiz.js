// Quiz enhancement: without JavaScript the quiz is a plain form that posts and shows a
// results page (or the quiz again, with a message beside each answer to look at). With
// it, the page counts answered questions, names any left blank beside the question and
// scrolls it into view below the sticky counter, and submits through the JSON API: the
// status line updates, the submit button stays disabled, focus moves to the result,
// and each question marks the learner's choice and the right one, with a summary of
// missed questions linking to the section that teaches each. The server grades either
// way, and reads numbers as typed ("1,048,576", "14.9 GiB").

// The instructor's class round, shown at the top of the page while one is open.
import './class-round.js';
import { el, reducedMotion, richText } from './dom.js';
import {
  collectAnswers, missedQuestions, questionCount, unansweredMessage, verdictText,
} from './logic/quiz-answers.js';

const form = document.querySelector('form.quiz-form');
if (form) enhance(form);

function enhance(form) {
  form.noValidate = true;
  const quizId = form.dataset.quiz;
  const fieldsets = [...form.querySelectorAll('fieldset.question')];
  const byId = new Map(fieldsets.map((fs) => [fs.id.replace(/^question-/, ''), fs]));
  const progress = form.querySelector('.quiz-progress');
  const answeredOut = form.querySelector('[data-answered]');
  const resultBox = document.querySelector('.quiz-result');
  const nextBox = document.querySelector('.quiz-next');
  const stateLine = document.querySelector('[data-quiz-state]');
  const button = form.querySelector('button[type=submit]');
  const behavior = () => (reducedMotion() ? 'auto' : 'smooth');

  const read = (fs) => {
    const inputs = [...fs.querySelectorAll('input')];
    return {
      id: fs.id.replace(/^question-/, ''),
      number: Number(fs.dataset.number),
      kind: fs.dataset.kind,
      text: fs.dataset.kind === 'numeric' ? inputs[0].value : '',
      picked: inputs.filter((i) => i.checked).map((i) => Number(i.value)),
    };
  };
  const updateProgress = () => {
    const { unanswered } = collectAnswers(fieldsets.map(read));
    answeredOut.textContent = String(fieldsets.length - unanswered.length);
  };
  progress.hidden = false;
  form.addEventListener('input', updateProgress);
  form.addEventListener('change', (event) => {
    updateProgress();
    const fs = event.target.closest('fieldset.question');
    if (fs && fs.classList.contains('has-error')) clearError(fs);
  });
  updateProgress();

  function clearError(fs) {
    fs.classList.remove('has-error');
    fs.querySelector('.field-error')?.remove();
    for (const input of fs.querySelectorAll('input')) {
      input.removeAttribute('aria-invalid');
      input.removeAttribute('aria-describedby');
    }
  }

  function clearErrors() {
    fieldsets.forEach(clearError);
    document.getElementById('form-errors')?.remove();
  }

  /** Scrolls `fs` to just below the sticky counter (its scroll-margin) and focuses it. */
  function goTo(fs) {
    fs.scrollIntoView({ block: 'start', behavior: behavior() });
    fs.querySelector('input')?.focus({ preventScroll: true });
  }

  /** Marks each problem's question and lists them all above the form. */
  function showErrors(problems) {
    clearErrors();
    for (const problem of problems) {
      const fs = problem.question && byId.get(problem.question);
      if (!fs) continue;
      const id = `error-${problem.question}`;
      fs.classList.add('has-error');
      fs.querySelector('legend').after(el('p', { class: 'field-error', id }, problem.message));
      for (const input of fs.querySelectorAll('input')) {
        input.setAttribute('aria-invalid', 'true');
        input.setAttribute('aria-describedby', id);
      }
    }
    const summary = el('div', { class: 'form-errors', id: 'form-errors', role: 'alert' },
      el('h2', {}, problems.length === 1 ? 'One answer needs another look' : `${problems.length} answers need another look`),
      el('ul', {}, problems.map((p) => el('li', {},
        p.question && byId.has(p.question) ? el('a', { href: `#question-${p.question}` }, p.message) : richText(p.message)))),
    );
    summary.addEventListener('click', (event) => {
      const link = event.target.closest('a[href^="#question-"]');
      if (!link) return;
      event.preventDefault();
      goTo(document.querySelector(link.getAttribute('href')));
    });
    form.before(summary);
    const first = problems.map((p) => p.question && byId.get(p.question)).find(Boolean);
    if (first) goTo(first);
    else summary.scrollIntoView({ block: 'start', behavior: behavior() });
  }

  function badge(kind, text) {
    return el('span', { class: `badge badge-${kind}` }, text);
  }

  /** Marks one question's options and adds its feedback. */
  function markQuestion(q) {
    const fs = byId.get(q.id);
    if (!fs) return;
    fs.classList.remove('right', 'wrong');
    fs.classList.add(q.correct ? 'right' : 'wrong');
    fs.querySelector('.feedback')?.remove();
    for (const label of fs.querySelectorAll('label.option')) {
      const input = label.querySelector('input');
      const choice = (q.choices || [])[Number(input.value)];
      if (!choice) continue;
      label.classList.toggle('chosen', choice.chosen);
      label.classList.toggle('key', choice.correct);
      if (choice.chosen) label.append(' ', badge('chosen', 'Your answer'));
      if (choice.correct) label.append(' ', badge('key', 'Correct answer'));
    }
    const box = el('div', { class: 'feedback' },
      el('p', { class: 'mark' }, q.correct ? 'Right' : 'Wrong'));
    if (q.kind === 'numeric') {
      box.append(el('p', {}, `Your answer: ${q.given_text}`, q.correct ? '' : ` · Correct answer: ${q.expected_list.join(', ')}`));
    }
    box.append(el('p', { class: 'explanation' }, richText(q.explanation)));
    if (!q.correct && q.teaches) {
      box.append(el('p', { class: 'teaches' }, 'Reread: ', el('a', { href: q.teaches.href }, q.teaches.title), ` (${q.teaches.lesson})`));
    }
    fs.append(box);
  }

  function steps(result) {
    return el('p', { class: 'actions' }, (result.next || []).map((step) =>
      [el('a', { class: step.primary ? 'button' : 'button button-quiet', href: step.href }, step.label), ' ']));
  }

  function showResult(result) {
    if (stateLine && result.state) {
      stateLine.textContent = result.state.label;
      stateLine.className = `quiz-state state-${result.state.class}`;
    }
    result.questions.forEach(markQuestion);
    for (const input of form.querySelectorAll('input')) input.disabled = true;
    const verdict = verdictText(result);
    const missed = missedQuestions(result);
    resultBox.replaceChildren(
      el('h2', { id: 'result-heading' }, 'Your result'),
      el('p', { class: `verdict ${result.passed ? 'verdict-pass' : 'verdict-fail'}` }, el('strong', {}, verdict.lead), verdict.rest),
      missed.length ? el('section', { class: 'missed', 'aria-labelledby': 'missed-heading' },
        el('h3', { id: 'missed-heading' }, `${questionCount(missed.length)} to look at again`),
        el('ul', {}, missed.map((m) => el('li', {},
          el('a', { href: `#question-${m.id}` }, `Question ${m.number}`),
          m.teaches ? [': reread ', el('a', { href: m.teaches.href }, m.teaches.title), ` (${m.teaches.lesson})`] : null)))) : null,
      steps(result),
    );
    resultBox.setAttribute('aria-labelledby', 'result-heading');
    resultBox.hidden = false;
    if (nextBox) {
      nextBox.replaceChildren(steps(result));
      nextBox.hidden = false;
    }
    resultBox.focus({ preventScroll: true });
    resultBox.scrollIntoView({ block: 'start', behavior: behavior() });
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (button.disabled) return;
    const { answers, unanswered } = collectAnswers(fieldsets.map(read));
    if (unanswered.length) {
      showErrors(unanswered.map((q) => ({ question: q.id, message: unansweredMessage(read(byId.get(q.id))) })));
      return;
    }
    clearErrors();
    button.disabled = true;
    button.textContent = 'Submitting…';
    let done = false;
    try {
      const response = await fetch(`/api/quizzes/${encodeURIComponent(quizId)}/attempts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ answers }),
      });
      const body = await response.json().catch(() => ({}));
      if (response.ok) {
        showResult(body);
        done = true;
      } else {
        const problems = body.error?.problems?.length
          ? body.error.problems
          : [{ message: body.error?.message ?? `The server refused the answers (HTTP ${response.status}).` }];
        showErrors(problems);
      }
    } catch (error) {
      showErrors([{ message: `Could not reach the server (${error.message}). Your answers are still here; try again.` }]);
    } finally {
      // After a graded attempt the form is spent: the result offers a retake.
      button.textContent = done ? 'Submitted' : 'Submit answers';
      button.disabled = done;
    }
  });
}
