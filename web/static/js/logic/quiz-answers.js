// The quiz page's pure parts: reading the form's answers into the JSON the server
// grades (numbers go as typed, so the server's one parser reads "1,048,576" or
// "14.9 GiB"), finding the questions still unanswered, and the words of the result.
// No DOM here, so tests/js/quiz-answers.test.mjs can pin them.

/**
 * `questions`: [{id, number, kind, text, picked: [indexes]}] as read from the form.
 * Returns {answers, unanswered: [{id, number}]}: a multiple-choice question with no box
 * ticked counts as unanswered (the learner most likely skipped it).
 */
export function collectAnswers(questions) {
  const answers = {};
  const unanswered = [];
  for (const q of questions) {
    if (q.kind === 'numeric') {
      const text = String(q.text ?? '').trim();
      if (text === '') unanswered.push({ id: q.id, number: q.number });
      else answers[q.id] = text;
    } else if (q.kind === 'multiple') {
      if (q.picked.length === 0) unanswered.push({ id: q.id, number: q.number });
      answers[q.id] = q.picked;
    } else if (q.picked.length === 0) {
      unanswered.push({ id: q.id, number: q.number });
    } else {
      answers[q.id] = q.picked[0];
    }
  }
  return { answers, unanswered };
}

/** The sentence shown beside a question left blank. */
export function unansweredMessage(question) {
  return question.kind === 'multiple'
    ? `Question ${question.number}: tick at least one option.`
    : `Question ${question.number}: it is not answered yet.`;
}

/** The verdict line, the same words as the results page the server renders. */
export function verdictText(graded) {
  const score = `You scored ${graded.percent}% (${graded.correct} of ${graded.total})`;
  return graded.passed
    ? { lead: 'Passed.', rest: ` ${score}, which is more than 75%.` }
    : { lead: 'Not passed yet.', rest: ` ${score}; passing needs a score of more than 75%.` };
}

/** The missed questions, in order: [{id, number, teaches}] (teaches may be null). */
export function missedQuestions(graded) {
  return (graded.questions || [])
    .filter((q) => !q.correct)
    .map((q) => ({ id: q.id, number: q.number, teaches: q.teaches || null }));
}

/** "One question" or "3 questions", for the summary's heading. */
export function questionCount(n) {
  return n === 1 ? 'One question' : `${n} questions`;
}
