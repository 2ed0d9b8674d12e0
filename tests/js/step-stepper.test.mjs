// Unit tests of the step stepper's data (lesson 6): the order of the lines, the five
// stages of the lesson's table, who waits, and the bytes of every tensor shown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STAGES, STEPS, TENSORS, changes, firstStepOf, formatShape, totalBytes } from '../../web/static/js/logic/step-stepper.js';

test('the five stages appear in the lesson table order', () => {
  assert.deepEqual(STAGES, ['Batch read', 'Device copy', 'Forward', 'Backward', 'Logging']);
  const seen = [...new Set(STEPS.map((s) => s.stage))];
  assert.deepEqual(seen, STAGES);
});

test('the lines follow the complete step: zero_grad, forward, loss, backward, step, log', () => {
  const code = STEPS.flatMap((s) => s.code).join('\n');
  const order = ['torch.randn(4, 8)', '.to(device)', 'zero_grad()', 'model(features)', 'cross_entropy', 'backward()', 'optimizer.step()', '.item()'];
  let at = -1;
  for (const piece of order) {
    const next = code.indexOf(piece);
    assert.ok(next > at, `${piece} comes after the previous line`);
    at = next;
  }
  assert.match(code, /labels = torch\.tensor\(\[0, 2, 1, 0\]\)/);
});

test('tensor sizes are elements × bytes per element', () => {
  assert.equal(TENSORS.weight.bytes, 96); // 3 × 8 × 4
  assert.equal(TENSORS.bias.bytes, 12);
  assert.equal(TENSORS.weight.bytes + TENSORS.bias.bytes, 27 * 4); // the lesson's 27 parameters
  assert.equal(TENSORS.features.bytes, 128);
  assert.equal(TENSORS.labels.bytes, 32); // int64
  assert.equal(TENSORS.logits.bytes, 48);
  assert.equal(TENSORS.loss.bytes, 4);
  assert.equal(formatShape([]), '()');
  assert.equal(formatShape([3]), '(3,)');
});

test('zero_grad frees the old gradients and backward creates new ones', () => {
  const zero = STEPS.findIndex((s) => s.code[0] === 'optimizer.zero_grad()');
  assert.deepEqual(changes(zero, 'device').removed.sort(), ['biasGrad', 'weightGrad']);
  const backward = STEPS.findIndex((s) => s.code[0] === 'loss.backward()');
  const diff = changes(backward, 'device');
  assert.deepEqual(diff.added.sort(), ['biasGrad', 'weightGrad']);
  assert.deepEqual(diff.removed, ['logSoftmax']);
  const step = STEPS.findIndex((s) => s.code[0] === 'optimizer.step()');
  assert.deepEqual(changes(step, 'device'), { added: [], removed: [] }); // SGD: in place, no state
});

test('the device copy moves the batch off the host', () => {
  const copy = firstStepOf('Device copy');
  assert.deepEqual(changes(copy, 'host').removed, ['hostFeatures', 'hostLabels']);
  assert.deepEqual(changes(copy, 'device').added, ['features', 'labels']);
  assert.equal(totalBytes(changes(copy, 'device').added), 160);
});

test('only the device copy and logging make the CPU wait', () => {
  const waiting = STEPS.filter((s) => s.cpu.state === 'waiting').map((s) => s.stage);
  assert.deepEqual(waiting, ['Device copy', 'Logging']);
  assert.equal(STEPS[0].gpu.state, 'idle');
  assert.equal(STEPS.at(-1).stage, 'Logging');
});
