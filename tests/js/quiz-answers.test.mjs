// Unit tests for web/static/js/logic/quiz-answers.js: what the quiz sends, which
// questions count as unanswered, and the result's words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  collectAnswers, missedQuestions, questionCount, unansweredMessage, verdictText,
} from '../../web/static/js/logic/quiz-answers.js';

test('numbers are sent as typed and blanks are listed by number', () => {
  const { answers, unanswered } = collectAnswers([
    { id: 'macs', number: 1, kind: 'numeric', text: ' 1,048,576 multiply-adds ', picked: [] },
    { id: 'warp', number: 2, kind: 'single', text: '', picked: [] },
    { id: 'sync', number: 3, kind: 'multiple', text: '', picked: [0, 2] },
    { id: 'none', number: 4, kind: 'multiple', text: '', picked: [] },
    { id: 'blank', number: 5, kind: 'numeric', text: '   ', picked: [] },
    { id: 'one', number: 6, kind: 'single', text: '', picked: [3] },
  ]);
  assert.deepEqual(answers, { macs: '1,048,576 multiply-adds', sync: [0, 2], none: [], one: 3 });
  assert.deepEqual(unanswered.map((q) => q.number), [2, 4, 5]);
  assert.equal(unansweredMessage({ number: 4, kind: 'multiple' }), 'Question 4: tick at least one option.');
  assert.equal(unansweredMessage({ number: 2, kind: 'single' }), 'Question 2: it is not answered yet.');
});

test('the verdict and the missed list read like the results page', () => {
  const graded = {
    correct: 22, total: 24, percent: 91.7, passed: true,
    questions: [
      { id: 'a', number: 1, correct: true },
      { id: 'b', number: 2, correct: false, teaches: { href: '/lessons/x#y', title: 'Y' } },
      { id: 'c', number: 3, correct: false },
    ],
  };
  const verdict = verdictText(graded);
  assert.equal(verdict.lead + verdict.rest, 'Passed. You scored 91.7% (22 of 24), which is more than 75%.');
  assert.match(verdictText({ ...graded, passed: false }).rest, /passing needs/);
  assert.deepEqual(missedQuestions(graded), [
    { id: 'b', number: 2, teaches: { href: '/lessons/x#y', title: 'Y' } },
    { id: 'c', number: 3, teaches: null },
  ]);
  assert.equal(questionCount(1), 'One question');
  assert.equal(questionCount(3), '3 questions');
});
