// Latency and count bookkeeping for the load and crash tests: samples per route group,
// percentiles by nearest rank, status counts, and a plain-text table. Kept apart from the
// HTTP code so the numbers in the report are computed one way everywhere.

/** Nearest-rank percentile of an ascending array (p in 0..100); NaN when empty. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Summary of a list of millisecond samples. */
export function summarise(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, x) => s + x, 0);
  return {
    count: sorted.length,
    mean_ms: sorted.length ? round(sum / sorted.length) : null,
    p50_ms: round(percentile(sorted, 50)),
    p90_ms: round(percentile(sorted, 90)),
    p99_ms: round(percentile(sorted, 99)),
    max_ms: round(sorted.at(-1) ?? NaN),
  };
}

function round(x) {
  return Number.isFinite(x) ? Math.round(x * 10) / 10 : null;
}

/** Every response and failure of a run, grouped by route group. */
export class Recorder {
  constructor() {
    this.groups = new Map(); // group -> { latencies: [], statuses: Map<status, n> }
    this.networkErrors = []; // { group, method, path, error }
    this.serverErrors = []; // { group, method, path, status, body }
    this.unexpected = []; // { group, method, path, status, body }
    this.total = 0;
  }

  group(name) {
    let g = this.groups.get(name);
    if (!g) {
      g = { latencies: [], statuses: new Map() };
      this.groups.set(name, g);
    }
    return g;
  }

  /** One answered request. */
  response(group, ms, status) {
    const g = this.group(group);
    g.latencies.push(ms);
    g.statuses.set(status, (g.statuses.get(status) ?? 0) + 1);
    this.total += 1;
  }

  /** One request that got no HTTP answer (reset, refused, timed out). */
  failure(group, method, path, error) {
    this.group(group);
    this.total += 1;
    if (this.networkErrors.length < 200) this.networkErrors.push({ group, method, path, error: String(error) });
    else this.networkErrors.push(null);
  }

  count(group, status) {
    return this.groups.get(group)?.statuses.get(status) ?? 0;
  }

  /** Responses with `predicate(status)` over every group. */
  countWhere(predicate) {
    let n = 0;
    for (const g of this.groups.values()) for (const [s, c] of g.statuses) if (predicate(s)) n += c;
    return n;
  }

  /** Per-group summary, for the report. */
  summary() {
    const out = {};
    for (const [name, g] of [...this.groups].sort()) {
      out[name] = { ...summarise(g.latencies), statuses: Object.fromEntries([...g.statuses].sort()) };
    }
    return out;
  }
}

/** A fixed-width text table: `rows` are arrays of cells, the first row the header. */
export function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? '').length)));
  return rows
    .map((r, ri) => {
      const line = r.map((c, i) => (i === 0 ? String(c ?? '').padEnd(widths[i]) : String(c ?? '').padStart(widths[i]))).join('  ');
      return ri === 0 ? `${line}\n${widths.map((w) => '-'.repeat(w)).join('  ')}` : line;
    })
    .join('\n');
}
