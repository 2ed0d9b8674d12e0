// The experiment job protocol, as pure functions: what the student reads while a job
// is queued, running, done or failed; how an error response becomes one sentence; how
// long to wait between polls. The server side is server/routes/experiments.rs
// (202 {job_id, status, position, estimated_wait_secs, poll}; 429 with Retry-After;
// 400/422 with {"error": {"status", "message"}}) and server/gpu/queue.rs (job states).
// No DOM here, so tests/js/panel-job.test.mjs can pin the wording and the arithmetic.

import { formatSig } from './panel-format.js';

/** "the server's GPU (NVIDIA H100)" or "the server's CPU (AMD EPYC)". */
export function backendPhrase(device) {
  if (!device) return "the server";
  const what = device.kind === 'cuda' ? 'GPU' : 'CPU';
  return device.name ? `the server's ${what} (${device.name})` : `the server's ${what}`;
}

/**
 * Seconds from a Retry-After header: either delta-seconds or an HTTP date. `now` is in
 * milliseconds (Date.now()); unreadable headers give `fallback`.
 */
export function retryAfterSeconds(header, fallback = 5, now = Date.now()) {
  if (header === null || header === undefined || String(header).trim() === '') return fallback;
  const text = String(header).trim();
  if (/^\d+$/.test(text)) return Math.max(1, Number(text));
  const date = Date.parse(text);
  if (Number.isFinite(date)) return Math.max(1, Math.ceil((date - now) / 1000));
  return fallback;
}

/** The friendly sentence for a 429. */
export function queueFullMessage(seconds) {
  return `The experiment queue is full: the server is busy with other students' experiments. Try again in ${seconds} s.`;
}

/**
 * The sentence for a 429: the server's own message (it says which limit was reached:
 * the shared queue, or this student's rate), else the queue-full sentence.
 */
export function tooManyMessage(bodyText, seconds) {
  try {
    const body = JSON.parse(bodyText);
    const message = body && body.error && body.error.message;
    if (typeof message === 'string' && message.trim()) return message.trim();
  } catch {
    // Not JSON: fall back to the generic sentence.
  }
  return queueFullMessage(seconds);
}

/**
 * One sentence for a failed request: the server's own message when the body is its
 * JSON error, otherwise a sentence chosen by status.
 */
export function apiErrorMessage(status, bodyText) {
  try {
    const body = JSON.parse(bodyText);
    const message = body && body.error && body.error.message;
    if (typeof message === 'string' && message.trim()) return message.trim();
  } catch {
    // Not JSON: fall through to a sentence by status.
  }
  if (status === 404) return 'The server does not know this experiment (404). It may be older than this page: reload the page.';
  if (status === 429) return queueFullMessage(5);
  if (status >= 500) return `The server hit an internal error (${status}). Try again in a moment.`;
  return `The server refused the request (${status}).`;
}

/**
 * Seconds a queued job should still wait: the 202's estimate was for the position it
 * got then, so scale it by where the job stands now.
 */
export function estimateWaitSecs(accepted, position) {
  const first = Math.max(1, Number(accepted && accepted.position) || 1);
  const estimate = Math.max(0, Number(accepted && accepted.estimated_wait_secs) || 0);
  const perJob = estimate / first;
  return Math.max(0, Math.round(perJob * Math.max(0, position - 1) + perJob * 0.5));
}

/** What the status line says for a job state (`state.status` from the server). */
export function jobStatusText(state, device, accepted) {
  switch (state && state.status) {
    case 'sending':
      return 'Sending the experiment to the server…';
    case 'queued': {
      const position = Number(state.position) || 1;
      const wait = estimateWaitSecs(accepted, position);
      const where = position <= 1 ? 'next in line' : `position ${position} in the queue`;
      const eta = wait >= 1 ? `, about ${wait} s to wait` : '';
      return `Queued: ${where}${eta}. Experiments run one at a time so they never share the device.`;
    }
    case 'running':
      return `Running on ${backendPhrase(device)}…`;
    case 'done': {
      const seconds = state.result && state.result.provenance && state.result.provenance.seconds;
      const took = Number.isFinite(seconds) ? ` in ${formatSig(seconds, 2)} s` : '';
      return `Done: measured${took} on ${backendPhrase(device)}.`;
    }
    case 'failed':
      return `The experiment failed: ${state.error || 'no reason given'}`;
    default:
      return '';
  }
}

/** Milliseconds before poll number `attempt` (0-based): quick at first, then 1 s. */
export function pollDelayMs(attempt) {
  return Math.min(1000, 300 + 150 * attempt);
}
