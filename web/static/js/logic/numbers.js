// Numbers as every widget and panel shows and reads them: whole numbers with thousands
// separators, and integers read from a form control and kept inside their bounds.
// Pure functions, no DOM, so node tests can check them.

/** Whole numbers with thousands separators: 4096 → "4,096". */
export function thousands(n) {
  return Math.round(n).toLocaleString('en-US');
}

/**
 * An integer read from a form value, forced into [min, max]. An empty or non-numeric
 * value gives `fallback` (itself kept in range; `min` when not given).
 */
export function clampInt(value, { min, max }, fallback = min) {
  const n = Math.round(Number(value));
  const chosen = value === '' || value === null || value === undefined || !Number.isFinite(n) ? fallback : n;
  return Math.min(max, Math.max(min, chosen));
}
