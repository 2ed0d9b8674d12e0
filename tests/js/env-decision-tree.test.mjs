// Unit tests for the "what does your machine say?" tree
// (web/static/js/logic/env-decision-tree.js): every path of the lesson's table reaches the
// right layer, every option leads somewhere real, and pasted output is read correctly
// (the lesson's CPU-only example plus nvidia-smi's table gives the CPU-only wheel).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  QUESTIONS,
  DIAGNOSES,
  FIRST_QUESTION,
  walk,
  readOutput,
  isDiagnosis,
  CPU_ONLY_EXAMPLE,
} from '../../web/static/js/logic/env-decision-tree.js';

test('every option leads to a question or a diagnosis, and every diagnosis is reachable', () => {
  const reached = new Set();
  for (const question of Object.values(QUESTIONS)) {
    for (const option of question.options) {
      assert.ok(isDiagnosis(option.next) || QUESTIONS[option.next], `${option.id} → ${option.next}`);
      if (isDiagnosis(option.next)) reached.add(option.next);
    }
  }
  assert.deepEqual([...reached].sort(), Object.keys(DIAGNOSES).sort());
});

test('the lesson table, row by row', () => {
  const cases = [
    [{ smi: 'table', torchCuda: 'none' }, 'cpu-wheel'],
    [{ smi: 'table', torchCuda: 'version', available: 'false-old-driver' }, 'driver-too-old'],
    [{ smi: 'table', torchCuda: 'version', available: 'false-zero' }, 'hidden-gpus'],
    [{ smi: 'not-found', container: 'yes', containerTorch: 'false' }, 'container-no-gpu'],
    [{ smi: 'not-found', container: 'no' }, 'no-driver'],
    [{ smi: 'no-driver' }, 'driver-not-loaded'],
    [{ smi: 'mismatch' }, 'driver-mismatch'],
    [{ smi: 'table', torchCuda: 'version', available: 'true', runCheck: 'no-kernel-image' }, 'arch-unsupported'],
    [{ smi: 'table', torchCuda: 'version', available: 'true', runCheck: 'six' }, 'healthy'],
    [{ smi: 'not-found', container: 'yes', containerTorch: 'true' }, 'container-no-smi'],
    [{ smi: 'table', torchCuda: 'no-module' }, 'wrong-python'],
    [{ smi: 'mac' }, 'apple-mps'],
  ];
  for (const [answers, expected] of cases) {
    assert.equal(walk(answers).diagnosis, expected, JSON.stringify(answers));
  }
});

test('walk stops at the first unanswered question and ignores answers off the path', () => {
  assert.deepEqual(walk({}), { path: [], question: FIRST_QUESTION, diagnosis: null });
  const partial = walk({ smi: 'table', available: 'true' });
  assert.equal(partial.question, 'torchCuda');
  assert.deepEqual(partial.path, [{ question: 'smi', option: 'table' }]);
  const offPath = walk({ smi: 'mismatch', torchCuda: 'none' });
  assert.equal(offPath.diagnosis, 'driver-mismatch');
  assert.equal(offPath.path.length, 1);
  assert.equal(walk({ smi: 'nonsense' }).question, 'smi');
});

test('the lesson CPU-only example reads as a build without CUDA', () => {
  const { answers, findings } = readOutput(CPU_ONLY_EXAMPLE);
  assert.equal(answers.torchCuda, 'none');
  assert.equal(answers.available, 'false-zero');
  assert.equal(answers.smi, undefined, 'no nvidia-smi in the paste: the widget must ask');
  assert.ok(findings.some((f) => f.includes('+cpu')));
  assert.equal(walk({ ...answers, smi: 'table' }).diagnosis, 'cpu-wheel');
});

test('nvidia-smi output of each kind is recognised', () => {
  const table = '| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |';
  assert.equal(readOutput(table).answers.smi, 'table');
  assert.equal(readOutput('GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1234)').answers.smi, 'table');
  assert.equal(readOutput('bash: nvidia-smi: command not found').answers.smi, 'not-found');
  assert.equal(
    readOutput("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.").answers.smi,
    'no-driver',
  );
  assert.equal(readOutput('Failed to initialize NVML: Driver/library version mismatch').answers.smi, 'mismatch');
});

test('a healthy machine pasted in full reaches "healthy"', () => {
  const text = [
    '| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |',
    'torch version:      2.3.0+cu121',
    'built for CUDA:     12.1',
    'CUDA available:     True',
    'device count:       1',
    '6.0',
  ].join('\n');
  const { answers, findings } = readOutput(text);
  assert.deepEqual(answers, { smi: 'table', torchCuda: 'version', available: 'true', containerTorch: 'true', runCheck: 'six' });
  assert.ok(findings.includes('PyTorch was built for CUDA 12.1.'));
  assert.equal(walk(answers).diagnosis, 'healthy');
});

test('warnings and errors in the paste pick their branch', () => {
  const oldDriver = [
    'NVIDIA-SMI 470.82.01 Driver Version: 470.82.01',
    'UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040).',
    'built for CUDA:     12.1',
    'CUDA available:     False',
    'device count:       0',
  ].join('\n');
  assert.equal(walk(readOutput(oldDriver).answers).diagnosis, 'driver-too-old');
  const notCompiled = 'NVIDIA-SMI 550.54 Driver Version: 550.54\nAssertionError: Torch not compiled with CUDA enabled';
  assert.equal(walk(readOutput(notCompiled).answers).diagnosis, 'cpu-wheel');
  const noKernel = 'Driver Version: 550\nbuilt for CUDA: 11.8\nCUDA available: True\nRuntimeError: CUDA error: no kernel image is available for execution on the device';
  assert.equal(walk(readOutput(noKernel).answers).diagnosis, 'arch-unsupported');
  assert.equal(readOutput("ModuleNotFoundError: No module named 'torch'").answers.torchCuda, 'no-module');
});

test('the old-driver diagnosis teaches minor version compatibility, not "the build must not be newer"', () => {
  const { why, next } = DIAGNOSES['driver-too-old'];
  // Lesson 3 and its quiz: a CUDA 12.x build runs on any driver from 525 on, 13.x needs 580.
  assert.match(why, /525/);
  assert.match(why, /580/);
  assert.match(next, /525/);
  assert.doesNotMatch(why, /must not be newer/);
});
