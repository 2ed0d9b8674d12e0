#!/usr/bin/env node
// Load test: a class of N students (default 200) using GPU Lab for D seconds (default 60)
// against a real `gpulab` binary this script starts on 127.0.0.1 with a fresh database
// and small experiment caps. Each virtual student keeps its cookie, reads pages and their
// static assets (revalidating by ETag like a browser), takes quizzes through the JSON API
// and the no-JavaScript form, checks its progress, and now and then queues a small
// experiment and polls it, waiting out any 429's Retry-After. An instructor watches the
// gradebook; a sampler reads /metrics every second.
//
// Afterwards it stops the server with SIGTERM and asserts: every acknowledged attempt is
// in the SQLite file (0 lost), 0 responses >= 500 and 0 requests without an answer, no
// status a well-behaved student should never see, gpulab_jobs_running_peak never above
// --gpu-concurrency, a clean exit and no "panicked" in the log. It prints a table
// (requests/s, p50/p99 per route group, queue waits, 429s) and writes
// target/load-report.json. Exit status 0 only when every check passed.
//
// Why: the course is used by a whole class at once on one machine; this is the evidence
// that it holds, that nothing acknowledged is lost, and that the GPU is never shared.
//
//   node tests/load/load.mjs                              # 200 students x 60 s
//   node tests/load/load.mjs --students 20 --duration 10  # CI size (tests/load/run-ci.sh)
//
// Flags (environment variable in brackets): --students [LOAD_STUDENTS], --duration secs
// [LOAD_DURATION_SECS], --concurrency [LOAD_GPU_CONCURRENCY] (passed as --gpu-concurrency),
// --experiment-share 0..1 [LOAD_EXPERIMENT_SHARE], --think-min-ms/--think-max-ms
// [LOAD_THINK_MIN_MS/LOAD_THINK_MAX_MS], --seed [LOAD_SEED], --report [LOAD_REPORT],
// --bin [GPULAB_BIN] (default target/release/gpulab, else target/debug/gpulab).
// Other GPULAB_* variables (e.g. GPULAB_EXPERIMENTS_PER_MINUTE) reach the server as usual.

import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { Client, sleep } from './lib/client.mjs';
import { attemptKey, compareAttempts, integrity } from './lib/db.mjs';
import * as metrics from './lib/metrics.mjs';
import { formAnswers, jsonAnswers, rng } from './lib/quiz.mjs';
import { ROOT, binary, knownFlags, serveHelp, startServer, tempDir } from './lib/server.mjs';
import { Recorder, summarise, table } from './lib/stats.mjs';

const env = process.env;
const { values: opt } = parseArgs({
  options: {
    students: { type: 'string', default: env.LOAD_STUDENTS ?? '200' },
    duration: { type: 'string', default: env.LOAD_DURATION_SECS ?? '60' },
    concurrency: { type: 'string', default: env.LOAD_GPU_CONCURRENCY ?? '1' },
    'experiment-share': { type: 'string', default: env.LOAD_EXPERIMENT_SHARE ?? '0.08' },
    'think-min-ms': { type: 'string', default: env.LOAD_THINK_MIN_MS ?? '100' },
    'think-max-ms': { type: 'string', default: env.LOAD_THINK_MAX_MS ?? '1000' },
    seed: { type: 'string', default: env.LOAD_SEED ?? String(Date.now() % 1e9) },
    report: { type: 'string', default: env.LOAD_REPORT ?? 'target/load-report.json' },
    bin: { type: 'string', default: env.GPULAB_BIN },
    help: { type: 'boolean', default: false },
  },
});
if (opt.help) {
  console.log('usage: node tests/load/load.mjs [--students N] [--duration SECS] [--concurrency N] [--experiment-share F] [--think-min-ms MS] [--think-max-ms MS] [--seed N] [--report FILE] [--bin PATH]');
  process.exit(0);
}
const STUDENTS = positive('students');
const DURATION_S = positive('duration');
const CONCURRENCY = positive('concurrency');
const EXPERIMENT_SHARE = Number(opt['experiment-share']);
const THINK_MIN = Number(opt['think-min-ms']);
const THINK_MAX = Math.max(THINK_MIN, Number(opt['think-max-ms']));
const SEED = Number(opt.seed) >>> 0;
const JOB_TIMEOUT_S = 30;
const DRAIN_TIMEOUT_S = 15;
/** After the run, students finish what they are doing (polls included) for at most this long. */
const WIND_DOWN_MS = 60_000;
const INSTRUCTOR_TOKEN = 'load-test-instructor-token-0123456789';

function positive(name) {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} must be a whole number >= 1, not ${opt[name]}`);
    process.exit(2);
  }
  return n;
}

// Statuses a well-behaved student may see per route group; anything else is a finding.
const EXPECTED = {
  page: [200],
  static: [200, 304],
  quiz_get: [200],
  quiz_submit: [200],
  form_submit: [200],
  progress: [200],
  name: [303],
  experiment_submit: [202, 429],
  job_poll: [200],
  instructor: [200],
  health: [200],
  metrics: [200],
};

// Small experiments, within the caps the server is started with below.
const EXPERIMENTS = [
  ['transfer', (r) => ({ max_bytes: [65536, 262144, 1048576][Math.floor(r() * 3)] })],
  ['matmul', (r) => ({ max_size: r() < 0.5 ? 64 : 128 })],
  ['timing', () => ({})],
  ['training', (r) => ({ batch: 16, hidden: 16, steps: 20 + Math.floor(r() * 31), log_every: 5 })],
  ['precision', () => ({ size: 64 })],
  ['break-it', (r) => ({ case: r() < 0.5 ? 'batch-on-host' : 'log-every-step' })],
];

async function main() {
  const bin = binary(opt.bin);
  const help = serveHelp(bin);
  const dir = tempDir('gpulab-load-');
  const database = path.join(dir, 'load.db');
  const { args, skipped } = knownFlags(help, [
    ['--gpu-concurrency', CONCURRENCY],
    ['--queue-length', 16],
    ['--job-timeout-secs', JOB_TIMEOUT_S],
    ['--drain-timeout-secs', DRAIN_TIMEOUT_S],
    ['--max-transfer-bytes', 1 << 20],
    ['--max-matmul-size', 128],
    ['--max-train-steps', 50],
    ['--max-hidden', 32],
    // Every virtual student comes from 127.0.0.1: configured as README's class-mode
    // section says for a class behind one NAT address.
    ['--writes-per-minute-per-address', 100000],
    ['--pending-per-address', 16],
    ['--playground-mib-per-address', 4096],
    // Virtual students think for a second or two, not minutes: more attempts per minute.
    ['--attempts-per-minute', 600],
  ]);
  console.log(`load: ${STUDENTS} students x ${DURATION_S} s against ${path.relative(ROOT, bin) || bin} (seed ${SEED})`);
  console.log(`load: server flags ${args.join(' ')}${skipped.length ? ` (this build lacks ${skipped.join(', ')})` : ''}`);
  const server = await startServer({
    bin,
    database,
    args,
    env: { GPULAB_INSTRUCTOR_TOKEN: INSTRUCTOR_TOKEN },
    logPath: path.join(dir, 'server.log'),
  });
  console.log(`load: serving on ${server.base}, database ${database}`);

  const rec = new Recorder();
  const run = new Run(server.base, rec);
  try {
    await run.discover();
    await run.go();
  } finally {
    run.stopSampler();
  }
  const after = await run.finalScrape();
  const exit = await server.stop('SIGTERM', (DRAIN_TIMEOUT_S + 15) * 1000);
  const durability = compareAttempts(run.ackByQuiz, run.ackByScore, database);
  const db = integrity(database);
  const report = run.report({ server, exit, durability, db, after, args, bin, database });
  const reportPath = path.resolve(ROOT, opt.report);
  mkdirSync(path.dirname(reportPath), { recursive: true });
  writeFileSync(reportPath, JSON.stringify(report, null, 2));
  printReport(report);
  const failed = report.checks.filter((c) => !c.ok);
  // Keep the database and the server log only when something failed (or LOAD_KEEP=1).
  if (failed.length === 0 && !env.LOAD_KEEP) rmSync(dir, { recursive: true, force: true });
  else console.log(`load: kept the database and server log in ${dir}`);
  console.log(`\nload: report written to ${path.relative(process.cwd(), reportPath)}`);
  console.log(failed.length ? `load: FAILED ${failed.length} check(s): ${failed.map((c) => c.name).join(', ')}` : 'load: every check passed');
  process.exitCode = failed.length ? 1 : 0;
}

class Run {
  constructor(base, rec) {
    this.base = base;
    this.rec = rec;
    this.ackByQuiz = new Map();
    this.ackByScore = new Map();
    this.acks = 0;
    this.unexpected = [];
    this.readYourWrites = [];
    this.rejections = { queue_full: 0, rate_limited: 0, other: 0 };
    this.retryAfter = [];
    this.waitStart = [];
    this.waitDone = [];
    this.jobs = { submitted: 0, done: 0, failed: 0, unfinished: 0, errors: [] };
    this.samples = { maxRunning: 0, maxDepth: 0, maxPeak: 0, scrapes: 0, missing: 0 };
  }

  /** Lesson slugs and quiz ids from the home page. */
  async discover() {
    const c = new Client(this.base, null);
    const home = await c.get('/');
    if (home.status !== 200) throw new Error(`home page answered ${home.status}`);
    this.lessons = [...new Set([...home.text.matchAll(/href="\/lessons\/([a-z0-9-]+)"/g)].map((m) => m[1]))];
    if (this.lessons.length === 0) throw new Error('no lessons linked from the home page');
    this.quizzes = [...this.lessons, 'final-exam'];
    this.publicQuizzes = new Map();
    for (const id of this.quizzes) {
      const q = await c.get(`/api/quizzes/${id}`);
      if (q.status === 200) this.publicQuizzes.set(id, q.json);
    }
    this.quizzes = this.quizzes.filter((id) => this.publicQuizzes.has(id));
  }

  expect(group, r, method, p) {
    if (r.status === 0) return false;
    if (!(EXPECTED[group] ?? [200]).includes(r.status)) {
      if (this.unexpected.length < 100) this.unexpected.push({ group, method, path: p, status: r.status, body: r.text?.slice(0, 300) });
      else this.unexpected.push(null);
      return false;
    }
    return true;
  }

  async go() {
    this.started = performance.now();
    this.deadline = this.started + DURATION_S * 1000;
    this.hardStop = this.deadline + WIND_DOWN_MS;
    this.startSampler();
    const ramp = Math.min(5_000, (DURATION_S * 1000) / 4);
    const students = [...Array(STUDENTS).keys()].map((i) => this.student(i, (ramp * i) / STUDENTS));
    const instructor = this.instructor();
    const all = Promise.all([...students, instructor]);
    const bounded = await Promise.race([all.then(() => true), sleep(this.hardStop - performance.now() + 5_000).then(() => false)]);
    this.finished = performance.now();
    this.windDownTimedOut = !bounded;
  }

  startSampler() {
    const c = new Client(this.base, null);
    this.sampler = setInterval(async () => {
      const s = await metrics.scrape(c).catch(() => null);
      if (!s) {
        this.samples.missing += 1;
        return;
      }
      this.samples.scrapes += 1;
      this.samples.maxRunning = Math.max(this.samples.maxRunning, metrics.value(s, 'gpulab_jobs_running') ?? 0);
      this.samples.maxDepth = Math.max(this.samples.maxDepth, metrics.value(s, 'gpulab_queue_depth') ?? 0);
      this.samples.maxPeak = Math.max(this.samples.maxPeak, metrics.value(s, 'gpulab_jobs_running_peak') ?? 0);
    }, 1_000);
  }

  stopSampler() {
    clearInterval(this.sampler);
  }

  async finalScrape() {
    const c = new Client(this.base, this.rec);
    const health = await c.get('/healthz', { group: 'health' });
    const ready = await c.get('/readyz', { group: 'health' });
    this.expect('health', health, 'GET', '/healthz');
    this.expect('health', ready, 'GET', '/readyz');
    const samples = await metrics.scrape(new Client(this.base, null));
    return { health: health.status, ready: ready.status, samples };
  }

  think(random, scale = 1) {
    return sleep((THINK_MIN + random() * (THINK_MAX - THINK_MIN)) * scale);
  }

  /** The instructor keeps the gradebook open and reloads it every few seconds. */
  async instructor() {
    const c = new Client(this.base, this.rec);
    const headers = { authorization: `Bearer ${INSTRUCTOR_TOKEN}` };
    while (performance.now() < this.deadline) {
      for (const p of ['/instructor', '/instructor/grades.csv']) {
        const r = await c.get(p, { group: 'instructor', headers });
        this.expect('instructor', r, 'GET', p);
      }
      await sleep(3_000);
    }
  }

  async student(i, delay) {
    const random = rng(SEED + i * 7919);
    const c = new Client(this.base, this.rec);
    const me = { acked: 0, nextExperimentAt: 0, assets: new Map(), named: false };
    await sleep(delay);
    await this.page(c, me, '/');
    while (performance.now() < this.deadline) {
      const roll = random();
      if (roll < EXPERIMENT_SHARE && performance.now() >= me.nextExperimentAt) await this.experiment(c, me, random);
      else if (roll < 0.4) await this.page(c, me, `/lessons/${pick(this.lessons, random)}`);
      else if (roll < 0.65) await this.jsonQuiz(c, me, random);
      else if (roll < 0.72) await this.formQuiz(c, me, random);
      else if (roll < 0.8) await this.progress(c, me);
      else if (roll < 0.83 && !me.named) await this.name(c, me, i);
      else if (roll < 0.9) await this.page(c, me, '/about');
      else await this.page(c, me, '/');
      await this.think(random);
    }
  }

  /** A page and the static files it links, fetched the way a browser with a cache would. */
  async page(c, me, p) {
    const r = await c.get(p, { group: 'page' });
    if (!this.expect('page', r, 'GET', p)) return;
    const assets = new Set([...r.text.matchAll(/(?:href|src)="(\/static\/[^"]+)"/g)].map((m) => m[1].replaceAll('&amp;', '&')));
    for (const a of assets) {
      const known = me.assets.get(a);
      if (known && a.includes('?v=')) continue; // immutable: served from the browser cache
      const headers = known ? { 'if-none-match': known } : {};
      const s = await c.get(a, { group: 'static', headers, read: true });
      if (this.expect('static', s, 'GET', a) && s.headers.get('etag')) me.assets.set(a, s.headers.get('etag'));
    }
  }

  acknowledge(c, me, quiz, graded) {
    me.acked += 1;
    this.acks += 1;
    const byQuiz = attemptKey(c.id, quiz);
    this.ackByQuiz.set(byQuiz, (this.ackByQuiz.get(byQuiz) ?? 0) + 1);
    if (graded) {
      const byScore = attemptKey(c.id, quiz, graded.correct, graded.total);
      this.ackByScore.set(byScore, (this.ackByScore.get(byScore) ?? 0) + 1);
    }
  }

  async jsonQuiz(c, me, random) {
    const id = pick(this.quizzes, random);
    const q = await c.get(`/api/quizzes/${id}`, { group: 'quiz_get' });
    if (!this.expect('quiz_get', q, 'GET', `/api/quizzes/${id}`) || !q.json) return;
    await this.think(random, 0.5);
    const p = `/api/quizzes/${id}/attempts`;
    const r = await c.post(p, { group: 'quiz_submit', json: { answers: jsonAnswers(q.json, random) } });
    if (!this.expect('quiz_submit', r, 'POST', p)) return;
    if (r.json && Number.isInteger(r.json.correct) && Number.isInteger(r.json.total)) this.acknowledge(c, me, id, r.json);
    else this.unexpected.push({ group: 'quiz_submit', method: 'POST', path: p, status: r.status, body: 'a 200 without a graded result' });
  }

  async formQuiz(c, me, random) {
    const id = pick(this.quizzes, random);
    const p = id === 'final-exam' ? '/final-exam' : `/lessons/${id}/quiz`;
    const page = await c.get(p, { group: 'page' });
    if (!this.expect('page', page, 'GET', p)) return;
    await this.think(random, 0.5);
    const r = await c.post(p, { group: 'form_submit', form: formAnswers(this.publicQuizzes.get(id), random) });
    if (this.expect('form_submit', r, 'POST', p)) this.acknowledge(c, me, id, null);
  }

  /** Read-your-writes: the progress API lists at least every attempt acknowledged so far. */
  async progress(c, me) {
    const acked = me.acked;
    const r = await c.get('/api/me/progress', { group: 'progress' });
    if (!this.expect('progress', r, 'GET', '/api/me/progress')) return;
    const stored = r.json?.attempts?.length ?? -1;
    if (stored < acked && this.readYourWrites.length < 20) this.readYourWrites.push({ student: c.id, acked, stored });
  }

  async name(c, me, i) {
    const r = await c.post('/me/name', { group: 'name', form: [['display_name', `Student ${i} <b>&amp;</b>`]] });
    if (this.expect('name', r, 'POST', '/me/name')) me.named = true;
  }

  async experiment(c, me, random) {
    const [kind, params] = pick(EXPERIMENTS, random);
    const p = `/api/experiments/${kind}`;
    const submitted = performance.now();
    const r = await c.post(p, { group: 'experiment_submit', json: params(random) });
    if (!this.expect('experiment_submit', r, 'POST', p)) return;
    if (r.status === 429) {
      const retry = Number(r.headers.get('retry-after'));
      const message = r.json?.error?.message ?? '';
      const reason = /queue is full/.test(message) ? 'queue_full' : /last minute|per minute|rate/i.test(message) ? 'rate_limited' : 'other';
      this.rejections[reason] += 1;
      if (Number.isFinite(retry) && retry >= 0) {
        this.retryAfter.push(retry);
        me.nextExperimentAt = performance.now() + retry * 1000;
      } else {
        this.unexpected.push({ group: 'experiment_submit', method: 'POST', path: p, status: 429, body: 'no numeric Retry-After' });
        me.nextExperimentAt = performance.now() + 5_000;
      }
      return;
    }
    this.jobs.submitted += 1;
    const id = r.json?.job_id;
    const poll = r.json?.poll ?? `/api/jobs/${id}`;
    let startedAt = null;
    while (performance.now() < this.hardStop) {
      await sleep(250 + random() * 250);
      const j = await c.get(poll, { group: 'job_poll' });
      if (!this.expect('job_poll', j, 'GET', poll)) continue;
      const status = j.json?.status;
      if ((status === 'running' || status === 'done' || status === 'failed') && startedAt === null) {
        startedAt = performance.now();
        this.waitStart.push(startedAt - submitted);
      }
      if (status === 'done' || status === 'failed') {
        this.waitDone.push(performance.now() - submitted);
        this.jobs[status] += 1;
        if (status === 'failed' && this.jobs.errors.length < 10) this.jobs.errors.push({ kind, error: j.json?.error });
        return;
      }
    }
    this.jobs.unfinished += 1;
  }

  report({ server, exit, durability, db, after, args, bin, database }) {
    const seconds = (this.finished - this.started) / 1000;
    const groups = this.rec.summary();
    const s = after.samples;
    const peak = s ? metrics.value(s, 'gpulab_jobs_running_peak') : undefined;
    const http5xx = s ? metrics.sum(s, 'gpulab_http_requests_total', (l) => Number(l.status) >= 500) : undefined;
    const jobsTotal = s
      ? Object.fromEntries(['done', 'failed', 'rejected'].map((o) => [o, metrics.value(s, 'gpulab_jobs_total', { outcome: o }) ?? null]))
      : null;
    const serverErrors = this.rec.countWhere((st) => st >= 500);
    const networkErrors = this.rec.networkErrors.length;
    const checks = [
      check('0 responses >= 500', serverErrors === 0, `${serverErrors}`),
      check('0 requests without an answer', networkErrors === 0, `${networkErrors}`),
      check('0 unexpected statuses', this.unexpected.length === 0, `${this.unexpected.length}`),
      check('0 acknowledged attempts lost', durability.lost === 0, `${durability.acknowledged} acknowledged, ${durability.stored} stored, ${durability.lost} lost`),
      check('stored scores match the acknowledged ones', durability.misrecorded === 0, `${durability.misrecorded}`),
      check('progress API shows every acknowledged attempt', this.readYourWrites.length === 0, `${this.readYourWrites.length} students saw fewer`),
      check('database integrity_check ok, every attempt has all its answers', db.integrity === 'ok' && db.attemptsWithMissingAnswers === 0, `${db.integrity}, ${db.attemptsWithMissingAnswers} partial`),
      check('some quiz attempts were acknowledged', durability.acknowledged > 0, `${durability.acknowledged}`),
      check('/metrics served', s !== null && this.samples.missing === 0, s ? `${this.samples.scrapes} samples, ${this.samples.missing} missing` : 'no /metrics'),
      check(`gpulab_jobs_running_peak <= --gpu-concurrency (${CONCURRENCY})`, peak !== undefined && peak <= CONCURRENCY && this.samples.maxRunning <= CONCURRENCY, `peak ${peak}, most seen running ${this.samples.maxRunning}`),
      check('gpulab_http_requests_total counts no 5xx', http5xx === 0, `${http5xx}`),
      check('jobs: none failed, all finished', this.jobs.failed === 0 && this.jobs.unfinished === 0, `${this.jobs.done} done, ${this.jobs.failed} failed, ${this.jobs.unfinished} unfinished`),
      check('/healthz and /readyz answered 200', after.health === 200 && after.ready === 200, `${after.health}, ${after.ready}`),
      check('SIGTERM: exit 0 within the drain deadline', exit.code === 0 && !exit.timedOut, `code ${exit.code}, signal ${exit.signal}, ${exit.seconds?.toFixed(2)} s`),
      check('no "panicked" in the server log', !server.panicked(), server.panicked() ? server.stderr.match(/.*panicked.*/)?.[0] : 'clean'),
      check('students wound down in time', !this.windDownTimedOut, this.windDownTimedOut ? 'cut off' : 'yes'),
    ];
    return {
      config: { students: STUDENTS, duration_secs: DURATION_S, gpu_concurrency: CONCURRENCY, experiment_share: EXPERIMENT_SHARE, think_ms: [THINK_MIN, THINK_MAX], seed: SEED, binary: bin, server_args: args, database },
      elapsed_secs: round(seconds),
      requests: this.rec.total,
      requests_per_sec: round(this.rec.total / seconds),
      groups,
      rejections_429: this.rejections,
      retry_after_secs: summarise(this.retryAfter.map((x) => x * 1000)),
      queue_wait: { submit_to_started: summarise(this.waitStart), submit_to_finished: summarise(this.waitDone) },
      jobs: this.jobs,
      metrics: { running_peak: peak ?? null, most_seen_running: this.samples.maxRunning, deepest_queue_seen: this.samples.maxDepth, jobs_total: jobsTotal, http_5xx_counted: http5xx ?? null },
      durability,
      database: db,
      server_exit: { code: exit.code, signal: exit.signal, timed_out: exit.timedOut, seconds: round(exit.seconds ?? NaN) },
      unexpected: this.unexpected.filter(Boolean).slice(0, 30),
      server_errors: this.rec.serverErrors.slice(0, 30),
      network_errors: this.rec.networkErrors.filter(Boolean).slice(0, 30),
      read_your_writes: this.readYourWrites,
      checks,
    };
  }
}

function check(name, ok, detail) {
  return { name, ok: Boolean(ok), detail };
}

function pick(items, random) {
  return items[Math.floor(random() * items.length)];
}

function round(x) {
  return Math.round(x * 10) / 10;
}

function printReport(r) {
  const ms = (x) => (x === null || x === undefined ? '-' : x.toFixed(1));
  const rows = [['route group', 'requests', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'statuses']];
  for (const [name, g] of Object.entries(r.groups)) {
    rows.push([name, g.count, (g.count / r.elapsed_secs).toFixed(1), ms(g.p50_ms), ms(g.p90_ms), ms(g.p99_ms), ms(g.max_ms), Object.entries(g.statuses).map(([s, n]) => `${s}:${n}`).join(' ')]);
  }
  rows.push(['ALL', r.requests, r.requests_per_sec.toFixed(1), '', '', '', '', '']);
  console.log(`\n${r.config.students} students x ${r.config.duration_secs} s (${r.elapsed_secs} s with wind-down), ${r.requests} requests, ${r.requests_per_sec} req/s`);
  console.log(table(rows));
  const w = r.queue_wait;
  console.log(
    `\nqueue wait  submit->started p50 ${ms(w.submit_to_started.p50_ms)} ms p99 ${ms(w.submit_to_started.p99_ms)} ms (${w.submit_to_started.count} jobs); submit->finished p50 ${ms(w.submit_to_finished.p50_ms)} ms p99 ${ms(w.submit_to_finished.p99_ms)} ms`,
  );
  console.log(`jobs        ${r.jobs.submitted} accepted: ${r.jobs.done} done, ${r.jobs.failed} failed, ${r.jobs.unfinished} unfinished`);
  console.log(`429s        queue full ${r.rejections_429.queue_full}, rate limited ${r.rejections_429.rate_limited}, other ${r.rejections_429.other}; Retry-After p50 ${ms(r.retry_after_secs.p50_ms / 1000)} s`);
  console.log(`metrics     running peak ${r.metrics.running_peak} (most seen running ${r.metrics.most_seen_running}), deepest queue seen ${r.metrics.deepest_queue_seen}, jobs_total ${JSON.stringify(r.metrics.jobs_total)}`);
  console.log(`durability  ${r.durability.acknowledged} attempts acknowledged, ${r.durability.stored} stored, ${r.durability.lost} lost; integrity ${r.database.integrity}`);
  console.log('\nchecks');
  for (const c of r.checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  for (const [title, list] of [['unexpected statuses', r.unexpected], ['server errors', r.server_errors], ['requests without an answer', r.network_errors]]) {
    if (list.length) console.log(`\n${title} (first ${Math.min(5, list.length)}):\n${list.slice(0, 5).map((x) => `  ${JSON.stringify(x)}`).join('\n')}`);
  }
}

main().catch((e) => {
  console.error(`load: ${e.stack ?? e}`);
  process.exit(1);
});
