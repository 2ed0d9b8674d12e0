// Quiz enhancement: without JavaScript the quiz is a plain form that posts and shows a
// results page. With it, the page counts answered questions and submits through the
// JSON API, showing the result in place without a reload. The server grades either way.

const form = document.querySelector('form.quiz-form');
if (form) {
  const quizId = form.dataset.quiz;
  const fieldsets = [...form.querySelectorAll('fieldset.question')];
  const progress = form.querySelector('.quiz-progress');
  const answeredOut = form.querySelector('[data-answered]');
  const resultBox = document.querySelector('.quiz-result');

  const isAnswered = (fs) => {
    if (fs.dataset.kind === 'numeric') return fs.querySelector('input').value.trim() !== '';
    return fs.querySelector('input:checked') !== null;
  };
  const updateProgress = () => {
    answeredOut.textContent = String(fieldsets.filter(isAnswered).length);
  };
  progress.hidden = false;
  form.addEventListener('input', updateProgress);
  form.addEventListener('change', updateProgress);
  updateProgress();

  const collect = () => {
    const answers = {};
    for (const fs of fieldsets) {
      const id = fs.id.replace(/^question-/, '');
      const inputs = [...fs.querySelectorAll('input')];
      if (fs.dataset.kind === 'numeric') {
        answers[id] = Number(inputs[0].value.trim().replace(',', '.'));
      } else if (fs.dataset.kind === 'multiple') {
        answers[id] = inputs.filter((i) => i.checked).map((i) => Number(i.value));
      } else {
        const picked = inputs.find((i) => i.checked);
        if (picked) answers[id] = Number(picked.value);
      }
    }
    return answers;
  };

  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  const showResult = (graded) => {
    resultBox.replaceChildren();
    const verdict = graded.passed
      ? `Passed. You scored ${graded.percent}% (${graded.correct} of ${graded.total}), which is more than 75%.`
      : `Not passed yet. You scored ${graded.percent}% (${graded.correct} of ${graded.total}); passing needs a score of more than 75%.`;
    resultBox.append(el('p', `verdict ${graded.passed ? 'verdict-pass' : 'verdict-fail'}`, verdict));
    graded.questions.forEach((q, i) => {
      const fs = fieldsets[i];
      fs.classList.remove('right', 'wrong');
      fs.classList.add(q.correct ? 'right' : 'wrong');
      fs.querySelector('.feedback')?.remove();
      const box = el('div', 'feedback');
      box.append(el('p', 'mark', q.correct ? 'Right' : `Wrong. Correct answer: ${q.expected}`));
      box.append(el('p', 'explanation', q.explanation));
      fs.append(box);
    });
    const again = el('button', 'button', 'Retake the quiz');
    again.type = 'button';
    again.addEventListener('click', () => window.location.reload());
    resultBox.append(again);
    resultBox.scrollIntoView({ behavior: matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth' });
  };

  form.addEventListener('submit', async (event) => {
    if (!form.reportValidity()) return;
    event.preventDefault();
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const response = await fetch(`/api/quizzes/${encodeURIComponent(quizId)}/attempts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ answers: collect() }),
      });
      const body = await response.json();
      if (!response.ok) {
        resultBox.replaceChildren(el('p', 'verdict verdict-fail', body.error?.message ?? `Error ${response.status}`));
      } else {
        showResult(body);
      }
    } catch (error) {
      resultBox.replaceChildren(el('p', 'verdict verdict-fail', `Could not reach the server: ${error.message}`));
    } finally {
      button.disabled = false;
    }
  });
}
