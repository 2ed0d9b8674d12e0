// A small reader for the Prometheus text format served at /metrics: enough to pull a
// gauge, sum a counter over label values, and check the figures the load and crash tests
// assert (jobs running at once never above --gpu-concurrency, no 5xx counted).

/** Parses exposition text into `[{ name, labels, value }]` (comments skipped). */
export function parse(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

/** The first sample named `name` whose labels include `match`, or undefined. */
export function value(samples, name, match = {}) {
  return samples.find((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))?.value;
}

/** Sum of every sample named `name` whose labels satisfy `predicate`. */
export function sum(samples, name, predicate = () => true) {
  return samples.filter((s) => s.name === name && predicate(s.labels)).reduce((t, s) => t + s.value, 0);
}

/** GET /metrics with `client`; resolves to samples, or null when there is no endpoint. */
export async function scrape(client, group = 'metrics') {
  const r = await client.get('/metrics', { group, timeoutMs: 10_000 });
  if (r.status !== 200) return null;
  return parse(r.text);
}
