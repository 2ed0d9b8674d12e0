// Unit tests for web/static/js/logic/inline-code.js: code spans in server and course
// text become separate runs, so no raw backtick reaches a panel or a quiz.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitInlineCode, stripCodeMarks } from '../../web/static/js/logic/inline-code.js';

test('code spans become their own runs', () => {
  assert.deepEqual(splitInlineCode('the first broken layer is `nvml`.'), [
    { text: 'the first broken layer is ', code: false },
    { text: 'nvml', code: true },
    { text: '.', code: false },
  ]);
  assert.deepEqual(splitInlineCode('`a` and `b`'), [
    { text: 'a', code: true },
    { text: ' and ', code: false },
    { text: 'b', code: true },
  ]);
});

test('text without a pair of backticks is left alone', () => {
  assert.deepEqual(splitInlineCode('plain'), [{ text: 'plain', code: false }]);
  assert.deepEqual(splitInlineCode('a lone ` tick'), [{ text: 'a lone ` tick', code: false }]);
  assert.deepEqual(splitInlineCode('empty `` pair'), [{ text: 'empty `` pair', code: false }]);
  assert.deepEqual(splitInlineCode(''), []);
  assert.deepEqual(splitInlineCode(null), []);
});

test('stripping keeps the words and drops the marks', () => {
  assert.equal(stripCodeMarks('run `gpulab selftest` for the report'), 'run gpulab selftest for the report');
});
