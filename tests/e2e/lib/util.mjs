// Small shared helpers for the end-to-end harness: bounded waits, timing, text trimming.
// Every wait in the harness goes through withTimeout (or a Playwright timeout) so that no
// step can hang the run.

/** Resolves or rejects like `promise`, but rejects with a clear message after `ms`. */
export function withTimeout(promise, ms, label) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${label}: timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class TimeoutError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TimeoutError';
  }
}

/** A failed check whose (multi-line) message the harness wrote itself: report it whole. */
export class CheckFailure extends Error {
  constructor(message) {
    super(message);
    this.name = 'CheckFailure';
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Seconds elapsed since `start` (a performance.now() value), rounded to 0.01. */
export const secondsSince = (start) => Math.round((performance.now() - start) / 10) / 100;

/** One line of at most `max` characters, for tables and reasons. */
export function oneLine(text, max = 160) {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Reads a positive integer from the environment, or returns `fallback`. */
export function envInt(name, fallback) {
  const value = Number.parseInt(process.env[name] ?? '', 10);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/** Reads a comma-separated list from the environment (empty list when unset). */
export function envList(name) {
  return (process.env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
