// Unit tests for the prediction step's logic (web/static/js/logic/prediction.js): the
// question picked by backend and parameter (the server's prediction::pick rule), the
// filled-in question, the log slider, the power-of-two list, what a learner may type,
// and the reveal's wording of the server's score (format_factor in prediction.rs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backendOf, pickQuestion, fillQuestion, sliderToValue, valueToSlider, STEPS, powersOfTwo,
  parsePrediction, formatFactor, formatValue, revealSentence,
} from '../../web/static/js/logic/prediction.js';

const questions = [
  { quantity: 'break-it.fails', on: 'any', when: ['case', 'batch-on-host'], input: 'choice', choices: [{ value: 1, label: 'It fails' }, { value: 0, label: 'It runs' }], unit: '' },
  { quantity: 'break-it.log_slowdown', on: 'any', when: ['case', 'log-every-step'], input: 'log', unit: '×' },
  { quantity: 'matmul.crossover_size', on: 'gpu', when: null, input: 'pow2', unit: 'n' },
  { quantity: 'matmul.cpu_gflops', on: 'cpu', when: null, input: 'log', unit: 'GFLOP/s' },
];

test('the question is picked by backend and by parameter, first match wins', () => {
  assert.equal(backendOf({ kind: 'cuda' }), 'gpu');
  assert.equal(backendOf({ kind: 'cpu' }), 'cpu');
  assert.equal(backendOf(null), 'cpu');
  assert.equal(pickQuestion(questions, 'cpu', { case: 'log-every-step' }).quantity, 'break-it.log_slowdown');
  assert.equal(pickQuestion(questions, 'gpu', { case: 'batch-on-host' }).quantity, 'break-it.fails');
  assert.equal(pickQuestion(questions.slice(2), 'gpu', {}).quantity, 'matmul.crossover_size');
  assert.equal(pickQuestion(questions.slice(2), 'cpu', {}).quantity, 'matmul.cpu_gflops');
  assert.equal(pickQuestion(questions.slice(0, 2), 'cpu', { case: 'other' }), null);
  assert.equal(pickQuestion(undefined, 'cpu', {}), null);
});

test('placeholders take the shown label, else the value; unknown ones stay', () => {
  assert.equal(fillQuestion('Copies of {max_bytes} over {n} {x}', { max_bytes: 268435456, n: 4 }, { max_bytes: '256 MiB' }), 'Copies of 256 MiB over 4 {x}');
});

test('the log slider maps both ways and stays in range', () => {
  assert.equal(sliderToValue(0, 0.1, 1000), 0.1);
  assert.equal(sliderToValue(STEPS, 0.1, 1000), 1000);
  assert.equal(sliderToValue(STEPS / 2, 1, 100), 10);
  assert.equal(sliderToValue(-5, 1, 100), 1);
  assert.equal(valueToSlider(10, 1, 100), STEPS / 2);
  assert.equal(valueToSlider(1e9, 1, 100), STEPS);
  assert.equal(valueToSlider(0, 1, 100), 0);
});

test('power-of-two sizes stop at the sweep', () => {
  assert.deepEqual(powersOfTwo(16, 8192, 256), [16, 32, 64, 128, 256]);
  assert.deepEqual(powersOfTwo(20, 100), [32, 64]);
});

test('typed predictions accept separators and units, and refuse the rest', () => {
  assert.equal(parsePrediction(' 1,048,576 ').value, 1048576);
  assert.equal(parsePrediction('12.5 GB/s').value, 12.5);
  assert.equal(parsePrediction('3×').value, 3);
  assert.equal(parsePrediction('0').value, 0);
  assert.match(parsePrediction('').error, /Just run it/);
  assert.match(parsePrediction('-2').error, /not a number from 0/);
  assert.match(parsePrediction('fast').error, /not a number/);
  assert.match(parsePrediction('1e13').error, /not a number from 0/);
});

test('factors and values read as the server writes them', () => {
  assert.equal(formatFactor(2.3), '2.3×');
  assert.equal(formatFactor(14.4), '14×');
  assert.equal(formatFactor(1.05), '1.05×');
  assert.equal(formatValue(0, questions[2]), 'never');
  assert.equal(formatValue(512, questions[2]), 'n = 512');
  assert.equal(formatValue(1, questions[0]), 'It fails');
  assert.equal(formatValue(12.345, questions[3]), '12.3 GFLOP/s');
  assert.equal(formatValue(2.5, questions[1]), '2.5×');
  assert.equal(
    revealSentence({ predicted: 23, measured: 10, verdict: '2.3× too high' }, questions[3]),
    'You predicted 23 GFLOP/s; this server measured 10 GFLOP/s: 2.3× too high.',
  );
});
