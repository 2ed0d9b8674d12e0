// The two requests every page with a panel or a class round makes: one JSON request
// that never throws (a failure carries the sentence to show), and GET /api/device once
// per page, shared by every panel and the class round.

import { apiErrorMessage, retryAfterSeconds, tooManyMessage } from '../logic/panel-job.js';

/**
 * One JSON request: {ok, status, data, message}. Never throws: a failure carries the
 * sentence to show (the server's message, the 429 wait, or why the server was unreachable).
 */
export async function requestJson(method, url, body) {
  let response;
  try {
    response = await fetch(url, {
      method,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    return { ok: false, status: 0, data: null, message: `Could not reach the server (${error.message}). Check the connection and try again.` };
  }
  const text = await response.text();
  if (response.status === 429) {
    // The server says which limit it is (the shared queue is full, or this student's
    // rate is used up): show its sentence, not a guess.
    const seconds = retryAfterSeconds(response.headers.get('retry-after'));
    return { ok: false, status: 429, data: null, message: tooManyMessage(text, seconds), retryAfter: seconds };
  }
  if (!response.ok) return { ok: false, status: response.status, data: null, message: apiErrorMessage(response.status, text) };
  try {
    return { ok: true, status: response.status, data: JSON.parse(text), message: '' };
  } catch {
    return { ok: false, status: response.status, data: null, message: 'The server answered with something that is not JSON.' };
  }
}

let devicePromise = null;

/** GET /api/device once per page: {device, queue_depth, limits}; null if unreachable. */
export function loadDevice() {
  if (!devicePromise) {
    devicePromise = requestJson('GET', '/api/device').then((r) => (r.ok ? r.data : null));
  }
  return devicePromise;
}
