// Unit tests for the experiment job protocol helpers (web/static/js/logic/panel-job.js):
// error sentences, Retry-After, queue-wait estimates and the status line's wording.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backendPhrase, retryAfterSeconds, queueFullMessage, apiErrorMessage, estimateWaitSecs,
  jobStatusText, pollDelayMs,
} from '../../web/static/js/logic/panel-job.js';

const cpu = { kind: 'cpu', name: 'AMD EPYC' };
const gpu = { kind: 'cuda', name: 'NVIDIA H100' };

test('the backend is named honestly', () => {
  assert.equal(backendPhrase(cpu), "the server's CPU (AMD EPYC)");
  assert.equal(backendPhrase(gpu), "the server's GPU (NVIDIA H100)");
  assert.equal(backendPhrase(null), 'the server');
});

test('Retry-After as seconds or as a date', () => {
  assert.equal(retryAfterSeconds('12'), 12);
  assert.equal(retryAfterSeconds('0'), 1);
  assert.equal(retryAfterSeconds(null, 7), 7);
  assert.equal(retryAfterSeconds('soon', 3), 3);
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterSeconds('Thu, 01 Jan 2026 00:00:30 GMT', 5, now), 30);
  assert.match(queueFullMessage(9), /queue is full.*Try again in 9 s\./);
});

test("the server's JSON message is shown as is", () => {
  const body = JSON.stringify({ error: { status: 422, message: "max_size must be between 16 and 512 (this server's cap)" } });
  assert.equal(apiErrorMessage(422, body), "max_size must be between 16 and 512 (this server's cap)");
  assert.match(apiErrorMessage(500, '<html>'), /internal error \(500\)/);
  assert.match(apiErrorMessage(404, ''), /reload the page/);
  assert.match(apiErrorMessage(400, '{"error":{}}'), /refused the request \(400\)/);
});

test('the wait estimate follows the queue position', () => {
  const accepted = { position: 4, estimated_wait_secs: 8 };
  assert.equal(estimateWaitSecs(accepted, 4), 7);
  assert.equal(estimateWaitSecs(accepted, 1), 1);
  assert.equal(estimateWaitSecs({ position: 1, estimated_wait_secs: 0 }, 1), 0);
  assert.equal(estimateWaitSecs(undefined, 3), 0);
});

test('status lines for every job state', () => {
  const accepted = { position: 3, estimated_wait_secs: 6 };
  assert.equal(
    jobStatusText({ status: 'queued', position: 3 }, gpu, accepted),
    'Queued: position 3 in the queue, about 5 s to wait. Experiments run one at a time so they never share the device.',
  );
  assert.match(jobStatusText({ status: 'queued', position: 1 }, gpu, { position: 1, estimated_wait_secs: 0 }), /^Queued: next in line\./);
  assert.equal(jobStatusText({ status: 'running' }, cpu), "Running on the server's CPU (AMD EPYC)…");
  assert.equal(
    jobStatusText({ status: 'done', result: { provenance: { seconds: 0.0675 } } }, cpu),
    "Done: measured in 0.068 s on the server's CPU (AMD EPYC).",
  );
  assert.equal(jobStatusText({ status: 'failed', error: 'too slow' }, cpu), 'The experiment failed: too slow');
  assert.equal(jobStatusText({ status: 'other' }, cpu), '');
});

test('polls start quick and settle at one second', () => {
  assert.equal(pollDelayMs(0), 300);
  assert.ok(pollDelayMs(2) > pollDelayMs(1));
  assert.equal(pollDelayMs(100), 1000);
});

test("a 429 shows the server's own sentence: rate limit and full queue differ", async () => {
  const { tooManyMessage } = await import('../../web/static/js/logic/panel-job.js');
  const rate = JSON.stringify({ error: { status: 429, message: 'You have started 12 experiments in the last minute, the most one student may.' } });
  assert.equal(tooManyMessage(rate, 20), 'You have started 12 experiments in the last minute, the most one student may.');
  const full = JSON.stringify({ error: { status: 429, message: 'The experiment queue is full: the GPU is busy.' } });
  assert.match(tooManyMessage(full, 5), /queue is full/);
  assert.notEqual(tooManyMessage(rate, 5), tooManyMessage(full, 5));
  assert.match(tooManyMessage('not json', 7), /Try again in 7 s\./);
  assert.match(tooManyMessage('{"error":{"message":"  "}}', 3), /queue is full/);
});
