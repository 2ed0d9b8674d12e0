// The spread of a measured sweep (matmul crossover, and any sweep whose points are
// server Summaries {median,min,max,q1,q3,outliers,stable,samples}): the interquartile
// band the chart draws around each median, and the sentences that say which points had
// stray samples (outside Tukey's fences) or did not settle within their time budget.
// Older results without quartiles fall back to min–max. Pure: tests/js/sweep-spread.test.mjs.

import { formatPercent } from './panel-format.js';

/** The band [low, high] of one Summary: its quartiles, else its min and max; null if none. */
export function bandOf(s) {
  if (!s || !Number.isFinite(s.median)) return null;
  if (Number.isFinite(s.q1) && Number.isFinite(s.q3)) return { low: s.q1, high: s.q3, kind: 'IQR' };
  if (Number.isFinite(s.min) && Number.isFinite(s.max)) return { low: s.min, high: s.max, kind: 'min–max' };
  return null;
}

/** For `rows` and a Summary field `key`: the band's low and high per row (null gaps). */
export function bandColumns(rows, key) {
  const bands = (rows || []).map((r) => bandOf(r[key]));
  return { low: bands.map((b) => (b ? b.low : null)), high: bands.map((b) => (b ? b.high : null)) };
}

/**
 * Findings about the spread of `rows` for each of `kinds` ({key, short}), with `side(n)`
 * naming a size: per kind, one sentence listing the points with outliers and one listing
 * the points that did not settle; or one sentence saying every point settled.
 * Returns [{text, tone, sizes, key}].
 */
export function spreadFindings(rows, kinds, side = String) {
  const out = [];
  let points = 0;
  for (const kind of kinds) {
    const stray = [];
    const noisy = [];
    for (const row of rows || []) {
      const s = row[kind.key];
      if (!s || !Number.isFinite(s.median)) continue;
      points += 1;
      const band = bandOf(s);
      if (s.outliers > 0) stray.push({ size: row.size, text: `${side(row.size)} (${s.outliers} of ${s.samples} samples)` });
      if (s.stable === false && band && s.median > 0) {
        noisy.push({ size: row.size, text: `${side(row.size)} (middle half spread over ${formatPercent((band.high - band.low) / s.median, 2)} of the median after ${s.samples} samples)` });
      }
    }
    if (stray.length) {
      out.push({
        text: `Outliers (${kind.short}): at ${stray.map((p) => p.text).join(', ')}, samples fell outside the fences (1.5 IQR beyond the quartiles). The median ignores them; the min–max does not.`,
        tone: 'warn', sizes: stray.map((p) => p.size), key: kind.key,
      });
    }
    if (noisy.length) {
      out.push({
        text: `Noisy points (${kind.short}): ${noisy.map((p) => p.text).join(', ')} did not settle within the time budget. Read them loosely, or run again.`,
        tone: 'warn', sizes: noisy.map((p) => p.size), key: kind.key,
      });
    }
  }
  if (points > 0 && out.length === 0) {
    const withQuartiles = (rows || []).some((r) => kinds.some((k) => r[k.key] && Number.isFinite(r[k.key].q1)));
    out.push({
      text: withQuartiles
        ? 'Every point settled: its middle half of samples lies within 10% of its median, and none had outliers.'
        : 'This result carries no quartiles, so only the min–max spread is shown.',
      tone: withQuartiles ? 'good' : 'plain', sizes: [], key: null,
    });
  }
  return out;
}
