#!/usr/bin/env node
// Scale-out test: one class served by two web nodes and three workers that share a
// throwaway PostgreSQL server (tests/pg/cluster.sh), all real `gpulab` processes on
// 127.0.0.1. S virtual students (default 40; 200 with CLUSTER_FULL=1) use it for T seconds
// (default 15; 60 with CLUSTER_FULL=1), half of them on each web node (a student keeps its
// node and its cookie; every third one also polls its jobs through the OTHER node with
// the same cookie, to prove any web node answers). Each loops: queue a small experiment
// (some with ?predict=), poll it until done, and now and then submit a quiz attempt.
//
// Then the fault phase: a long training job is queued, and once it runs the worker
// running it is SIGKILLed, then web node 2 is SIGKILLed too. Students keep going for a few
// seconds; those of the killed node count their refused connections and move to the
// surviving node (a load balancer would do the same). Afterwards, with every job drained,
// it reads the database and asserts:
//
//   1. 0 responses >= 500 and 0 requests without an answer from live nodes (refused or
//      reset connections to the killed node after its kill are counted apart);
//   2. every job acknowledged with 202 is in `jobs` and ended done or failed; every done
//      job ran once (tries = 1) except the killed worker's job, which ran twice (tries = 2)
//      on another worker and finished done (or failed with the "stopped twice" message)
//      within lease + its run time + a margin of the kill; the run history has one row per
//      finished run;
//   3. every result a student received is its own job's (jobs.owner = its cookie id, the
//      stored result, provenance.worker = jobs.worker), and another student's cookie gets
//      404 for it on either node (numbers that differ from the stored ones only in their
//      last bits are counted apart, not failed: the web node re-parses the stored JSON);
//   4. no worker ran two jobs at once ([started_at, finished_at] never overlap per worker);
//   5. every quiz attempt acknowledged with 2xx is in `attempts` (per student, with all its
//      answers), including those the killed node acknowledged; every prediction
//      acknowledged is in `predictions` once its job is done;
//   6. each of w1, w2, w3 finished at least one job (one class queue, all workers);
//   and no "panicked" in any process's log, no status a well-behaved student should not
//   see, and polls through the other node answered.
//
// It prints a table of figures and writes target/cluster-report.json; exit status 0 only
// when every check passed. Every process and the PostgreSQL server are stopped on the way
// out, on failure and on SIGINT/SIGTERM too.
//
//   node tests/cluster/cluster.mjs                  # CI size: 40 students x 15 s
//   CLUSTER_FULL=1 node tests/cluster/cluster.mjs   # 200 students x 60 s
//
// Environment: CLUSTER_STUDENTS, CLUSTER_DURATION_SECS, CLUSTER_FAULT_SECS (how long the
// students go on after the kills, default 6), CLUSTER_SEED, CLUSTER_REPORT, CLUSTER_KEEP=1
// (keep the logs even when every check passed), CLUSTER_DEBUG=1 (say what the drain waits
// for), GPULAB_BIN (default target/release/gpulab, else target/debug/gpulab). Needs psql
// and a PostgreSQL server (bash tests/setup.sh).

import { execFile, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { Client, sleep } from '../load/lib/client.mjs';
import { jsonAnswers, rng } from '../load/lib/quiz.mjs';
import { ROOT, Server, binary, knownFlags, serveHelp, startServer, tempDir } from '../load/lib/server.mjs';
import { Recorder, summarise, table } from '../load/lib/stats.mjs';

const env = process.env;
const FULL = env.CLUSTER_FULL === '1';
const STUDENTS = whole('CLUSTER_STUDENTS', FULL ? 200 : 40);
const DURATION_S = whole('CLUSTER_DURATION_SECS', FULL ? 60 : 15);
const FAULT_S = whole('CLUSTER_FAULT_SECS', 6);
const SEED = Number(env.CLUSTER_SEED ?? Date.now() % 1e9) >>> 0;
const REPORT = env.CLUSTER_REPORT ?? 'target/cluster-report.json';
const LEASE_S = 4;
const WORKER_NAMES = ['w1', 'w2', 'w3'];
/** The web node killed in the fault phase (index into the nodes); the other survives. */
const KILLED_NODE = 1;
const SURVIVOR = 0;
/** Students stop polling an unfinished job this long after the fault phase ends. */
const WIND_DOWN_MS = 25_000;
const REQUEST_TIMEOUT_MS = 15_000;
/** A debug build's web node spends ~25 s of CPU loading the course: on a busy 2-core box, more. */
const START_MS = 240_000;
/** Share of experiments sent with ?predict=, and of loops that also submit a quiz attempt. */
const PREDICT_SHARE = 0.3;
const QUIZ_SHARE = 0.4;
/** Share of finished jobs a student also asks for with another student's cookie. */
const SPY_SHARE = 0.25;
const PREDICTION = 1.5;
/** The cheap experiment students run, and the long one whose worker is killed. */
const CHEAP = { experiment: 'timing', params: {} };
const LONG = { experiment: 'training', params: { steps: 1500, hidden: 128, batch: 32, log_every: 100 } };
/** Slack on top of lease + run time for the killed worker's job (a free worker must reap it). */
const KILLED_JOB_MARGIN_S = 6;
const STOPPED_TWICE = /stopped twice/i;
/** The owner of the runs web nodes queue to grade measured quiz questions (server/classroom/measurements.rs). */
const GRADER = 'quiz-grader';

function whole(name, fallback) {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`${name} must be a whole number >= 1, not ${raw}`);
    process.exit(2);
  }
  return n;
}

const log = (line) => console.log(`cluster: ${line}`);

// ---------------------------------------------------------------------------------------
// PostgreSQL: the throwaway server, and queries through psql (JSON rows).

const CLUSTER_SH = path.join(ROOT, 'tests/pg/cluster.sh');
const execFileAsync = promisify(execFile);
let pgDir = null; // the cluster's folder while it runs

function stopPostgres() {
  if (!pgDir) return;
  const dir = pgDir;
  pgDir = null;
  try {
    execFileSync('bash', [CLUSTER_SH, 'stop', dir], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 60_000 });
  } catch (e) {
    console.error(`cluster: could not stop the PostgreSQL server in ${dir}: ${e.message}`);
  }
}

const psqlArgs = (url, sql) => [url, '-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql];
const asJson = (sql) => `SELECT COALESCE(json_agg(t), '[]'::json) FROM (${sql}) AS t`;

/** Rows of `sql` as objects (blocking: for set-up and the checks). */
function rows(url, sql) {
  const out = execFileSync('psql', psqlArgs(url, asJson(sql)), { encoding: 'utf8', timeout: 60_000, maxBuffer: 1 << 30 });
  return JSON.parse(out.trim() || '[]');
}

/** The same without blocking the students (while the class runs). */
async function rowsAsync(url, sql) {
  const { stdout } = await execFileAsync('psql', psqlArgs(url, asJson(sql)), { encoding: 'utf8', timeout: 30_000, maxBuffer: 256 << 20 });
  return JSON.parse(stdout.trim() || '[]');
}

// ---------------------------------------------------------------------------------------
// Processes: web nodes through the load test's startServer; workers spawned here.

const workersLive = new Set();
/** Processes that exited without this script stopping them: `{ name, code, signal, secs }`. */
const unexpectedExits = [];
let cleanedUp = false;
function cleanup() {
  if (cleanedUp) return;
  cleanedUp = true;
  for (const child of workersLive) child.kill('SIGKILL');
  // (tests/load/lib/server.mjs SIGKILLs the web nodes it started on exit.)
  stopPostgres();
}
process.on('exit', cleanup);
// server.mjs answers SIGINT/SIGTERM with process.exit(130), which runs `cleanup`.

/** Starts `gpulab worker`; resolves once it serves the class queue. */
function startWorker({ bin, url, name, args, logPath, startMs = START_MS }) {
  const child = spawn(bin, ['worker', '--database', url, '--name', name, '--lease-secs', String(LEASE_S), ...args], {
    env: { ...process.env, RUST_LOG: 'info', NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  workersLive.add(child);
  child.on('exit', () => workersLive.delete(child));
  const proc = new Server(child, logPath);
  proc.name = name;
  const file = createWriteStream(logPath, { flags: 'a' });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker ${name} did not start within ${startMs} ms:\n${proc.stderr.slice(-2000)}`)), startMs);
    let ready = false;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      file.write(chunk);
      proc.stderr += chunk.replace(/\x1b\[[0-9;]*m/g, '');
      if (proc.stderr.length > 4_000_000) proc.stderr = proc.stderr.slice(0, 1_000_000) + proc.stderr.slice(-1_000_000);
      if (!ready && /worker serving the class queue/.test(proc.stderr)) {
        ready = true;
        clearTimeout(timer);
        resolve(proc);
      }
    });
    proc.exit.then((e) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`worker ${name} exited (${e.code ?? e.signal}) before serving:\n${proc.stderr.slice(-2000)}`));
    });
  });
}

// ---------------------------------------------------------------------------------------
// HTTP: a client per (student, node) sharing the student's cookie jar, every answer
// recorded per node; a request without an answer from a node after its kill is expected.

class Node {
  constructor(index, server) {
    this.index = index;
    this.name = `web${index + 1}`;
    this.server = server;
    this.base = server.base;
    this.rec = new Recorder();
    this.killedAt = null; // performance.now() when SIGKILL was sent
    this.afterKill = new Map(); // error -> count: refused/reset connections after the kill
    this.liveErrors = []; // requests without an answer while the node was alive
    this.serverErrors = []; // responses >= 500
  }

  get afterKillCount() {
    let n = 0;
    for (const c of this.afterKill.values()) n += c;
    return n;
  }
}

class NodeClient extends Client {
  constructor(node, cookies) {
    super(node.base, node.rec);
    this.node = node;
    this.cookies = cookies; // the student's jar, shared by its clients for every node
  }

  async request(method, p, opts = {}) {
    const r = await super.request(method, p, { timeoutMs: REQUEST_TIMEOUT_MS, ...opts });
    const node = this.node;
    if (r.status === 0) {
      r.expected = node.killedAt !== null;
      if (r.expected) node.afterKill.set(r.error, (node.afterKill.get(r.error) ?? 0) + 1);
      else node.liveErrors.push({ method, path: p, error: r.error });
    } else if (r.status >= 500) {
      node.serverErrors.push({ method, path: p, status: r.status, body: r.text?.slice(0, 300) });
    }
    return r;
  }
}

/**
 * Where two JSON values differ: null when they are the same, else `{ path, a, b, ulp }`
 * for the first difference; `ulp` is true when it is only a number off in its last bits
 * (relative difference <= 1e-12), which the caller counts apart.
 */
function firstDiff(a, b, p = '') {
  if (typeof a === 'number' && typeof b === 'number') {
    if (a === b) return null;
    const ulp = Math.abs(a - b) <= 1e-12 * Math.max(Math.abs(a), Math.abs(b));
    return { path: p, a, b, ulp };
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return { path: p, a: summary(a), b: summary(b), ulp: false };
    let soft = null;
    for (let k = 0; k < a.length; k++) {
      const d = firstDiff(a[k], b[k], `${p}[${k}]`);
      if (d && !d.ulp) return d;
      soft ??= d;
    }
    return soft;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    let soft = null;
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (!(k in a) || !(k in b)) return { path: `${p}/${k}`, a: summary(a[k]), b: summary(b[k]), ulp: false };
      const d = firstDiff(a[k], b[k], `${p}/${k}`);
      if (d && !d.ulp) return d;
      soft ??= d;
    }
    return soft;
  }
  return a === b ? null : { path: p, a: summary(a), b: summary(b), ulp: false };
}

function summary(v) {
  const text = JSON.stringify(v);
  return text === undefined ? 'absent' : text.length > 80 ? `${text.slice(0, 80)}...` : v;
}

// ---------------------------------------------------------------------------------------
// The class.

class Run {
  constructor(nodes, quizzes) {
    this.nodes = nodes;
    this.quizzes = quizzes; // id -> public quiz
    this.quizIds = [...quizzes.keys()];
    this.students = [];
    this.jobs = []; // every job acknowledged with 202
    this.unexpected = []; // statuses a well-behaved student should not see
    this.cookieChanged = []; // a node that issued a new cookie to a known student
    this.rejected429 = 0;
    this.submits = { sent: 0, accepted: 0, unanswered: 0, rejected: 0, other: 0 };
    this.unansweredSubmits = new Map(); // student -> submissions without an answer
    this.unansweredAttempts = new Map(); // student -> attempts without an answer
    this.attemptAcks = new Map(); // student -> attempts acknowledged
    this.attemptAcksByNode = new Map(); // node name -> attempts it acknowledged
    this.spy = { checked: 0, leaked: [], other: [] }; // another student's cookie on a job
    this.crossPolls = { answered: 0, afterKill: 0 }; // polls through the other node
    this.deadline = Infinity; // set when the fault phase starts
    this.hardStop = Infinity;
  }

  note(list, entry) {
    if (list.length < 100) list.push(entry);
  }

  bump(map, key) {
    map.set(key, (map.get(key) ?? 0) + 1);
  }

  /** A node this student may use: `preferred`, unless it saw it die. */
  live(s, preferred) {
    return s.dead.has(preferred) ? this.nodes.find((n) => !s.dead.has(n.index)).index : preferred;
  }

  client(s, index) {
    let c = s.clients.get(index);
    if (!c) {
      c = new NodeClient(this.nodes[index], s.cookies);
      s.clients.set(index, c);
    }
    return c;
  }

  /** One request as student `s` through node `index` (or the surviving one). */
  async send(s, index, method, p, opts) {
    const i = this.live(s, index);
    const r = await this.client(s, i).request(method, p, opts);
    if (r.status === 0 && r.expected) s.dead.add(i);
    if (s.id && s.cookies.get('gpulab_student') !== s.id) {
      this.note(this.cookieChanged, { student: s.id, node: this.nodes[i].name, now: s.cookies.get('gpulab_student'), path: p });
      s.cookies.set('gpulab_student', s.id);
    }
    return { r, node: this.nodes[i] };
  }

  expect(group, r, want, node, p) {
    if (r.status === 0) return false;
    if (!want.includes(r.status)) {
      this.note(this.unexpected, { group, node: node.name, path: p, status: r.status, body: r.text?.slice(0, 300) });
      return false;
    }
    return true;
  }

  newStudent(i) {
    const home = i % 2;
    return {
      i,
      random: rng(SEED + i * 7919),
      home,
      other: 1 - home,
      cross: i % 3 === 2, // polls through the other node too
      cookies: new Map(),
      clients: new Map(),
      dead: new Set(),
      id: null,
    };
  }

  /** The first page on the student's node: its cookie. */
  async arrive(s) {
    for (let attempt = 0; attempt < 3 && !s.id; attempt++) {
      const { r, node } = await this.send(s, s.home, 'GET', '/', { group: 'page', read: true });
      if (this.expect('page', r, [200], node, '/')) s.id = s.cookies.get('gpulab_student') ?? null;
    }
    if (!s.id) throw new Error(`student ${s.i} got no gpulab_student cookie from ${this.nodes[s.home].name}`);
  }

  async student(i, delay) {
    const s = this.newStudent(i);
    this.students.push(s);
    await sleep(delay);
    await this.arrive(s);
    while (performance.now() < this.deadline) {
      const predict = s.random() < PREDICT_SHARE;
      await this.experiment(s, CHEAP, predict);
      if (s.random() < QUIZ_SHARE && performance.now() < this.deadline) await this.quiz(s);
      await sleep(50 + s.random() * 250);
    }
  }

  async quiz(s) {
    const id = this.quizIds[Math.floor(s.random() * this.quizIds.length)];
    const p = `/api/quizzes/${id}/attempts`;
    const { r, node } = await this.send(s, s.home, 'POST', p, { group: 'quiz_submit', json: { answers: jsonAnswers(this.quizzes.get(id), s.random) } });
    if (r.status === 0) {
      this.bump(this.unansweredAttempts, s.id);
      return;
    }
    if (!this.expect('quiz_submit', r, [200, 201], node, p)) return;
    if (!Number.isInteger(r.json?.total)) {
      this.note(this.unexpected, { group: 'quiz_submit', node: node.name, path: p, status: r.status, body: 'a 2xx without a graded result' });
    }
    this.bump(this.attemptAcks, s.id);
    this.bump(this.attemptAcksByNode, node.name);
  }

  /** Queues `kind` as student `s` and polls it until it ends; the job record, or null. */
  async experiment(s, kind, predict) {
    const p = `/api/experiments/${kind.experiment}${predict ? `?predict=${PREDICTION}` : ''}`;
    const submitted = performance.now();
    this.submits.sent += 1;
    const { r, node } = await this.send(s, s.home, 'POST', p, { group: 'experiment_submit', json: kind.params });
    if (r.status === 0) {
      this.submits.unanswered += 1;
      this.bump(this.unansweredSubmits, s.id);
      return null;
    }
    if (r.status === 429) {
      this.submits.rejected += 1;
      this.rejected429 += 1;
      const retry = Number(r.headers.get('retry-after'));
      await sleep(Math.min(5, Number.isFinite(retry) ? retry : 1) * 1000);
      return null;
    }
    if (!this.expect('experiment_submit', r, [202], node, p)) {
      this.submits.other += 1;
      return null;
    }
    this.submits.accepted += 1;
    const id = r.json?.job_id;
    if (!Number.isSafeInteger(id)) {
      this.note(this.unexpected, { group: 'experiment_submit', node: node.name, path: p, status: r.status, body: `202 without a job_id: ${r.text?.slice(0, 200)}` });
      return null;
    }
    const job = {
      id,
      student: s.id,
      experiment: kind.experiment,
      predicted: predict,
      via: node.name,
      submitted,
      status: 'queued',
      finished: null,
      result: null,
      error: null,
      seenVia: null,
    };
    this.jobs.push(job);
    const poll = `/api/jobs/${id}`;
    let polls = 0;
    let notFound = 0;
    while (performance.now() < this.hardStop) {
      await sleep(150 + s.random() * 200);
      polls += 1;
      const other = s.cross && polls % 2 === 0;
      const group = other ? 'job_poll_other_node' : 'job_poll';
      const { r: j, node: asked } = await this.send(s, other ? s.other : s.home, 'GET', poll, { group });
      if (j.status === 0) continue;
      if (other && asked.index === s.other) {
        if (j.status === 200) this.crossPolls.answered += 1;
      } else if (other) this.crossPolls.afterKill += 1;
      if (j.status === 404) {
        // Its own job, with its own cookie: a 404 is a finding, not a reason to wait forever.
        this.note(this.unexpected, { group, node: asked.name, path: poll, status: 404, body: 'the owner got 404 for its own job' });
        if (++notFound >= 5) break;
        continue;
      }
      if (!this.expect(group, j, [200], asked, poll)) continue;
      const status = j.json?.status;
      if (status === 'done' || status === 'failed') {
        job.status = status;
        job.finished = performance.now();
        job.result = j.json.result ?? null;
        job.error = j.json.error ?? null;
        job.seenVia = asked.name;
        if (s.random() < SPY_SHARE) await this.spyOn(job, s);
        return job;
      }
    }
    job.status = 'unfinished';
    return job;
  }

  /** Another student asks for `job` (through either live node): it must be a 404. */
  async spyOn(job, owner) {
    const others = this.students.filter((o) => o.id && o.id !== owner.id);
    if (others.length === 0) return;
    const spy = others[Math.floor(owner.random() * others.length)];
    const index = this.live(spy, owner.random() < 0.5 ? 0 : 1);
    const c = new NodeClient(this.nodes[index], new Map([['gpulab_student', spy.id]]));
    const r = await c.get(`/api/jobs/${job.id}`, { group: 'job_poll_other_student' });
    if (r.status === 0) return;
    this.spy.checked += 1;
    if (r.status === 200) this.note(this.spy.leaked, { job: job.id, owner: owner.id, asker: spy.id, node: c.node.name, body: r.text?.slice(0, 200) });
    else if (r.status !== 404) this.note(this.spy.other, { job: job.id, node: c.node.name, status: r.status, body: r.text?.slice(0, 200) });
  }
}

// ---------------------------------------------------------------------------------------

async function discoverQuizzes(base) {
  const c = new Client(base);
  const home = await c.get('/');
  if (home.status !== 200) throw new Error(`home page answered ${home.status}`);
  const ids = [...new Set([...home.text.matchAll(/href="\/lessons\/([a-z0-9-]+)"/g)].map((m) => m[1]))];
  const out = new Map();
  for (const id of [...ids, 'final-exam']) {
    const q = await c.get(`/api/quizzes/${id}`);
    if (q.status === 200 && q.json?.questions) out.set(id, q.json);
  }
  if (out.size === 0) throw new Error('no quizzes found on the home page');
  return out;
}

async function main() {
  const bin = binary();
  const logs = tempDir('gpulab-cluster-');
  const started = performance.now();
  log(`${STUDENTS} students x ${DURATION_S} s, then ${FAULT_S} s with a worker and a web node killed (seed ${SEED}); binary ${path.relative(ROOT, bin) || bin}; logs in ${logs}`);

  // PostgreSQL and a fresh database.
  pgDir = tempDir('gpulab-pg-'); // empty: cluster.sh start fills it, stop removes it
  const adminUrl = execFileSync('bash', [CLUSTER_SH, 'start', pgDir], { encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  execFileSync('psql', psqlArgs(adminUrl, 'CREATE DATABASE cluster_test'), { timeout: 30_000 });
  const url = adminUrl.replace(/\/postgres$/, '/cluster_test');
  log(`PostgreSQL at ${url}`);

  // Two web nodes and three workers.
  const { args: webArgs, skipped } = knownFlags(serveHelp(bin), [
    ['--role', 'web'],
    ['--queue-length', 100_000],
    ['--pending-per-student', 10],
    ['--pending-per-address', 100_000],
    // Not 0, which is meant to switch the limit off: on the shared queue 0 refuses every
    // experiment (engine/shared_queue.rs `submit` compares `last_minute >= 0`).
    ['--experiments-per-minute', 100_000],
    ['--attempts-per-minute', 100_000],
    ['--writes-per-minute-per-address', 1_000_000],
    ['--job-timeout-secs', 60],
  ]);
  if (skipped.includes('--role')) throw new Error(`this build's \`serve\` has no --role flag: ${bin} is not the scale-out build`);
  if (skipped.length) log(`this build lacks ${skipped.join(', ')}`);
  const startWeb = (i) =>
    startServer({ bin, database: url, args: webArgs, env: { RUST_LOG: 'warn,gpulab=info' }, logPath: path.join(logs, `web${i + 1}.log`), startMs: START_MS });
  const workerHelp = execFileSync(bin, ['worker', '--help'], { encoding: 'utf8', timeout: 10_000 });
  const { args: workerArgs } = knownFlags(workerHelp, [['--job-timeout-secs', 60]]);
  // All at once: they migrate the fresh database together (under the advisory lock), and a
  // debug build spends most of its start-up loading the course, which 2 cores share.
  const [web1, web2, ...workers] = await Promise.all([
    startWeb(0),
    startWeb(1),
    ...WORKER_NAMES.map((name) => startWorker({ bin, url, name, args: workerArgs, logPath: path.join(logs, `${name}.log`) })),
  ]);
  const nodes = [new Node(0, web1), new Node(1, web2)];
  // A process that exits without this script asking (crashed, or killed by someone else
  // on a shared machine) is a finding of its own, reported by name.
  web1.name = 'web1';
  web2.name = 'web2';
  for (const proc of [web1, web2, ...workers]) {
    proc.exit.then((e) => {
      if (!proc.intended) unexpectedExits.push({ name: proc.name, code: e.code, signal: e.signal, secs: round((e.at - started) / 1000) });
    });
  }
  for (const n of nodes) {
    const ready = await new Client(n.base).get('/readyz');
    if (ready.status !== 200) throw new Error(`${n.name} /readyz answered ${ready.status}: ${ready.text?.slice(0, 300)}`);
  }
  log(`web1 ${web1.base}, web2 ${web2.base}, workers ${WORKER_NAMES.join(', ')} (lease ${LEASE_S} s), ready after ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const run = new Run(nodes, await discoverQuizzes(web1.base));
  const fault = { worker: null, heldJobs: [], dbKillAt: null, webKilledAt: null };
  const loadStarted = performance.now();
  const ramp = Math.min(3_000, (DURATION_S * 1000) / 5);
  const classDone = Promise.all([...Array(STUDENTS).keys()].map((i) => run.student(i, (ramp * i) / STUDENTS)));
  let classError = null;
  classDone.catch((e) => (classError = e));

  // --- load phase ---
  await sleep(DURATION_S * 1000);
  if (classError) throw classError;

  // --- fault phase: a long job, its worker killed while it runs, then web node 2 ---
  const faulty = run.newStudent(STUDENTS);
  faulty.home = SURVIVOR;
  faulty.other = KILLED_NODE;
  run.students.push(faulty);
  await run.arrive(faulty);
  const longJob = run.experiment(faulty, LONG, false);
  const frozen = await freezeWorkerHoldingJob(url, run, faulty, workers);
  const victim = frozen.victim;
  fault.worker = victim.name;
  fault.target = frozen.target;
  fault.dbKillAt = frozen.dbKillAt;
  fault.heldJobs = frozen.held;
  fault.workerKilledAt = performance.now();
  victim.intended = true;
  await victim.kill();
  log(`SIGKILLed worker ${victim.name} holding job(s) ${fault.heldJobs.map((j) => `${j.id} (${j.experiment})`).join(', ') || 'NONE'}`);
  const killedJobWatch = watchKilledJobs(url, fault);
  await sleep(300);
  nodes[KILLED_NODE].killedAt = performance.now();
  web2.intended = true;
  await web2.kill();
  fault.webKilledAt = nodes[KILLED_NODE].killedAt;
  log(`SIGKILLed web node ${nodes[KILLED_NODE].name}; students go on for ${FAULT_S} s`);
  run.deadline = performance.now() + FAULT_S * 1000;
  run.hardStop = run.deadline + WIND_DOWN_MS;

  const wound = await Promise.race([classDone.then(() => true), sleep(run.hardStop - performance.now() + 10_000).then(() => false)]);
  if (classError) throw classError;
  await longJob;
  const loadEnded = performance.now();
  await killedJobWatch;
  if (env.CLUSTER_DEBUG) log(`killed job watch over ${((performance.now() - loadEnded) / 1000).toFixed(1)} s after the class`);
  log(`students done after ${((loadEnded - loadStarted) / 1000).toFixed(1)} s; waiting for the queue to drain`);
  const drained = await waitDrained(url, 30_000);
  await spySweep(run, nodes[SURVIVOR]);
  log(`queue drained ${((performance.now() - loadEnded) / 1000).toFixed(1)} s later; stopping the survivors and reading the database`);

  // Stop the survivors (SIGTERM), then read the database.
  const survivors = [{ name: 'web1', proc: web1 }, ...workers.filter((w) => w !== victim).map((w) => ({ name: w.name, proc: w }))];
  const unexpectedBeforeStop = [...unexpectedExits];
  for (const { proc } of survivors) proc.intended = true;
  const stops = await Promise.all(survivors.map(async ({ name, proc }) => ({ name, ...(await proc.stop('SIGTERM', 20_000)) })));
  const procs = [
    { name: 'web1', proc: web1 },
    { name: 'web2', proc: web2 },
    ...workers.map((w) => ({ name: w.name, proc: w })),
  ];
  const report = verify({ url, run, fault, drained, wound, nodes, procs, stops, unexpectedBeforeStop, elapsed: (loadEnded - loadStarted) / 1000 });
  stopPostgres();
  report.phases = {
    startup: round((loadStarted - started) / 1000),
    class: round((loadEnded - loadStarted) / 1000),
    after: round((performance.now() - loadEnded) / 1000),
  };

  const reportPath = path.resolve(ROOT, REPORT);
  mkdirSync(path.dirname(reportPath), { recursive: true });
  writeFileSync(reportPath, JSON.stringify(report, null, 2));
  printReport(report);
  const failed = report.checks.filter((c) => !c.ok);
  if (failed.length === 0 && !env.CLUSTER_KEEP) rmSync(logs, { recursive: true, force: true });
  else log(`kept the process logs in ${logs}`);
  log(`report written to ${path.relative(process.cwd(), reportPath)}; ${((performance.now() - started) / 1000).toFixed(1)} s in all`);
  console.log(failed.length ? `cluster: FAILED ${failed.length} check(s): ${failed.map((c) => c.name).join('; ')}` : 'cluster: every check passed');
  process.exitCode = failed.length ? 1 : 0;
}

/** Waits until the long job runs (for at least 0.3 s); falls back to any running job. */
/** Fails at once when no worker is left to run the long job (one exited by itself). */
function noneLeft() {
  const gone = unexpectedExits.filter((e) => WORKER_NAMES.includes(e.name));
  if (gone.length === WORKER_NAMES.length) {
    throw new Error(
      `every worker exited before the fault phase without this test stopping them: ${gone.map((e) => `${e.name} (${e.signal ?? `code ${e.code}`} at ${e.secs} s)`).join(', ')}; see their logs (SIGTERM from another process?)`,
    );
  }
}

/**
 * Finds a worker running the long job and freezes it (SIGSTOP), then reads the jobs it
 * holds and the database's clock: a stopped worker can neither finish nor renew, so
 * what the table says it holds is exactly what its SIGKILL will interrupt. A worker
 * that finished between the look-up and the stop holds nothing: it is let go
 * (SIGCONT) and the search starts again.
 */
async function freezeWorkerHoldingJob(url, run, faulty, workers) {
  for (let attempt = 1; ; attempt++) {
    const target = await findRunningWorker(url, run, faulty);
    const victim = workers.find((w) => w.name === target.worker);
    victim.child.kill('SIGSTOP');
    const held = await rowsAsync(url, `SELECT id, experiment, tries FROM jobs WHERE worker = '${victim.name}' AND status = 'running'`);
    const [{ now: dbKillAt }] = await rowsAsync(url, 'SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8 AS now');
    if (held.length > 0 || attempt === 5) return { victim, target, held, dbKillAt };
    log(`worker ${victim.name} finished its job before it was frozen; trying again`);
    victim.child.kill('SIGCONT');
  }
}

async function findRunningWorker(url, run, faulty) {
  const until = performance.now() + 20_000;
  while (performance.now() < until) {
    const running = await rowsAsync(
      url,
      `SELECT id, worker, experiment, EXTRACT(EPOCH FROM clock_timestamp())::float8 - started_at AS ran
         FROM jobs WHERE status = 'running' AND worker IS NOT NULL ORDER BY started_at`,
    );
    const long = running.find((j) => j.experiment === LONG.experiment && j.ran > 0.3);
    if (long) return long;
    noneLeft();
    await sleep(50);
  }
  const any = await rowsAsync(url, `SELECT id, worker, experiment FROM jobs WHERE status = 'running' AND worker IS NOT NULL LIMIT 1`);
  if (any.length) return any[0];
  throw new Error(`no running job to kill a worker under within 20 s (the long job by ${faulty.id} never ran?)`);
}

/** Polls the killed worker's jobs until each has ended: when, on which worker, how. */
async function watchKilledJobs(url, fault) {
  if (fault.heldJobs.length === 0) return;
  const ids = fault.heldJobs.map((j) => j.id).join(',');
  const until = performance.now() + (LEASE_S * 2 + 90) * 1000;
  while (performance.now() < until) {
    const jobs = await rowsAsync(url, `SELECT id, status, tries, worker, started_at, finished_at, error FROM jobs WHERE id IN (${ids})`);
    if (jobs.length === fault.heldJobs.length && jobs.every((j) => j.status === 'done' || j.status === 'failed')) {
      fault.ended = jobs;
      return;
    }
    await sleep(100);
  }
  fault.ended = await rowsAsync(url, `SELECT id, status, tries, worker, started_at, finished_at, error FROM jobs WHERE id IN (${ids})`);
}

async function waitDrained(url, ms) {
  const until = performance.now() + ms;
  let left = [];
  let shown = 0;
  while (performance.now() < until) {
    left = await rowsAsync(
      url,
      `SELECT id, owner, experiment, status, worker, tries, EXTRACT(EPOCH FROM clock_timestamp())::float8 - submitted_at AS age FROM jobs WHERE status IN ('queued', 'running')`,
    );
    if (left.length === 0) return { ok: true, left };
    if (env.CLUSTER_DEBUG && performance.now() - shown > 1000) {
      shown = performance.now();
      log(`still waiting: ${JSON.stringify(left.slice(0, 5))}`);
    }
    await sleep(250);
  }
  return { ok: false, left };
}

// ---------------------------------------------------------------------------------------
// The checks.

function check(name, ok, detail) {
  return { name, ok: Boolean(ok), detail };
}

function verify({ url, run, fault, drained, wound, nodes, procs, stops, unexpectedBeforeStop, elapsed }) {
  const db = new Map(
    rows(url, 'SELECT id, owner, experiment, params, status, tries, worker, submitted_at, started_at, finished_at, prediction, error, result FROM jobs').map((j) => [j.id, j]),
  );
  const killedIds = new Set(fault.heldJobs.map((j) => j.id));
  const checks = [];

  // 1. No 5xx, no unanswered request from a live node.
  const fiveXX = nodes.reduce((n, node) => n + node.serverErrors.length, 0);
  const liveErrors = nodes.reduce((n, node) => n + node.liveErrors.length, 0);
  const afterKill = nodes.reduce((n, node) => n + node.afterKillCount, 0);
  checks.push(
    check(
      '1. 0 responses >= 500 and 0 unanswered requests from live nodes',
      fiveXX === 0 && liveErrors === 0,
      `${fiveXX} responses >= 500, ${liveErrors} unanswered while alive; ${afterKill} refused/reset after the kill (expected, not counted)`,
    ),
  );

  // 2. Jobs: acknowledged => stored, ended; ran once; the killed worker's job ran again.
  const acked = run.jobs;
  const missing = acked.filter((j) => !db.has(j.id));
  const stuck = [...db.values()].filter((j) => j.status !== 'done' && j.status !== 'failed');
  const unfinishedSeen = acked.filter((j) => j.status === 'unfinished' || j.status === 'queued');
  checks.push(
    check(
      '2a. every job acknowledged with 202 is in jobs and ended done/failed (none stuck)',
      missing.length === 0 && stuck.length === 0 && drained.ok && unfinishedSeen.length === 0,
      `${acked.length} acknowledged, ${missing.length} missing from jobs, ${stuck.length} still queued/running, ${unfinishedSeen.length} never seen ending by their student`,
    ),
  );
  const ackedIds = new Set(acked.map((j) => j.id));
  // The web nodes queue runs of their own to grade hardware-measured quiz questions.
  const graderJobs = [...db.values()].filter((j) => j.owner === GRADER);
  const unackedInDb = [...db.values()].filter((j) => !ackedIds.has(j.id) && j.owner !== GRADER);
  let unanswered = 0;
  for (const n of run.unansweredSubmits.values()) unanswered += n;
  const strayOwners = unackedInDb.filter((j) => !run.unansweredSubmits.has(j.owner));
  checks.push(
    check(
      `2b. student jobs in the table nobody acknowledged come only from submissions cut off by the kill`,
      unackedInDb.length <= unanswered && strayOwners.length === 0,
      `${unackedInDb.length} unacknowledged student rows, ${unanswered} submissions without an answer (and ${graderJobs.length} ${GRADER} runs for measured quiz questions)`,
    ),
  );
  const ranTwice = [...db.values()].filter((j) => j.status === 'done' && j.tries !== 1 && !killedIds.has(j.id));
  const badFailed = [...db.values()].filter((j) => j.status === 'failed' && !killedIds.has(j.id));
  const overTried = [...db.values()].filter((j) => j.tries > 2);
  checks.push(
    check(
      '2c. every other job ran exactly once (done, tries = 1; none failed)',
      ranTwice.length === 0 && badFailed.length === 0 && overTried.length === 0,
      `${ranTwice.length} done with tries != 1, ${badFailed.length} failed, ${overTried.length} with tries > 2` +
        (ranTwice.length ? `; e.g. ${JSON.stringify(pickFields(ranTwice[0]))}` : '') +
        (badFailed.length ? `; e.g. ${JSON.stringify(pickFields(badFailed[0]))}` : ''),
    ),
  );
  const killed = [...killedIds].map((id) => db.get(id)).filter(Boolean);
  const killedProblems = [];
  let killedFinishSecs = null;
  let killedBound = null;
  if (fault.heldJobs.length === 0) killedProblems.push(`worker ${fault.worker} held no job when killed (it finished between the look-up and the kill: rerun)`);
  for (const j of killed) {
    const ranFor = j.started_at !== null && j.finished_at !== null ? j.finished_at - j.started_at : 0;
    const bound = LEASE_S + ranFor + KILLED_JOB_MARGIN_S;
    const took = j.finished_at !== null ? j.finished_at - fault.dbKillAt : null;
    killedFinishSecs = took === null ? null : Math.max(killedFinishSecs ?? 0, took);
    killedBound = Math.max(killedBound ?? 0, bound);
    if (j.tries !== 2) killedProblems.push(`job ${j.id}: tries ${j.tries}, not 2`);
    if (j.status === 'done' && (j.worker === fault.worker || !WORKER_NAMES.includes(j.worker))) killedProblems.push(`job ${j.id}: done on ${j.worker}, not another worker`);
    if (j.status === 'failed' && !STOPPED_TWICE.test(j.error ?? '')) killedProblems.push(`job ${j.id}: failed without the "stopped twice" message: ${j.error}`);
    if (j.status !== 'done' && j.status !== 'failed') killedProblems.push(`job ${j.id}: still ${j.status}`);
    if (took === null || took > bound) killedProblems.push(`job ${j.id}: ended ${took?.toFixed(2) ?? 'never'} s after the kill, over ${bound.toFixed(1)} s (lease ${LEASE_S} + run ${ranFor.toFixed(1)} + ${KILLED_JOB_MARGIN_S})`);
    if (j.status === 'done' && j.result) {
      const w = JSON.parse(j.result)?.provenance?.worker;
      if (w !== j.worker) killedProblems.push(`job ${j.id}: provenance.worker ${w}, jobs.worker ${j.worker}`);
    }
  }
  if (killed.length !== fault.heldJobs.length) killedProblems.push('a job the killed worker held is gone from jobs');
  checks.push(
    check(
      `2d. the killed worker's job went back once and ended on another worker within lease + run time + ${KILLED_JOB_MARGIN_S} s`,
      killedProblems.length === 0,
      killedProblems.length
        ? killedProblems.join('; ')
        : killed.map((j) => `job ${j.id} (${j.experiment}) ${j.status} on ${j.worker}, tries ${j.tries}, ${(j.finished_at - fault.dbKillAt).toFixed(2)} s after the kill (bound ${killedBound.toFixed(1)} s)`).join('; '),
    ),
  );
  const [{ runs }] = rows(url, 'SELECT COUNT(*)::int AS runs FROM experiment_runs');
  const finishedByWorker = [...db.values()].filter((j) => (j.status === 'done' || j.status === 'failed') && j.worker !== null).length;
  const dupRuns = rows(
    url,
    `SELECT student_id, COUNT(*)::int AS runs, (SELECT COUNT(*)::int FROM jobs WHERE owner = r.student_id AND worker IS NOT NULL AND status IN ('done','failed')) AS jobs
       FROM experiment_runs r GROUP BY student_id HAVING COUNT(*) <> (SELECT COUNT(*) FROM jobs WHERE owner = r.student_id AND worker IS NOT NULL AND status IN ('done','failed'))`,
  );
  checks.push(
    check(
      '2e. the run history holds one row per finished run',
      runs === finishedByWorker && dupRuns.length === 0,
      `${runs} experiment_runs rows, ${finishedByWorker} jobs finished by a worker, ${dupRuns.length} students differ${dupRuns.length ? `; e.g. ${JSON.stringify(dupRuns[0])}` : ''}`,
    ),
  );

  // 3. Results belong to their students.
  const received = acked.filter((j) => j.status === 'done');
  const wrongOwner = [];
  const wrongResult = [];
  const lastBits = []; // results whose numbers differ from the stored ones only in the last bits
  for (const j of received) {
    const row = db.get(j.id);
    if (!row) continue;
    if (row.owner !== j.student) wrongOwner.push({ job: j.id, student: j.student, owner: row.owner });
    const stored = row.result ? JSON.parse(row.result) : null;
    const d = firstDiff(j.result, stored);
    if (d && !d.ulp) wrongResult.push({ job: j.id, why: `${d.path}: received ${JSON.stringify(d.a)}, stored ${JSON.stringify(d.b)}` });
    else if (j.result?.provenance?.worker !== row.worker) wrongResult.push({ job: j.id, why: `provenance.worker ${j.result?.provenance?.worker} but jobs.worker ${row.worker}` });
    if (d?.ulp) lastBits.push({ job: j.id, path: d.path, received: d.a, stored: d.b });
  }
  const sweep = finalSpySweep(run);
  checks.push(
    check(
      "3. every result a student received is its own job's, and other students get 404",
      wrongOwner.length === 0 && wrongResult.length === 0 && run.spy.leaked.length === 0 && run.spy.other.length === 0 && run.spy.checked > 0 && sweep.ok,
      `${received.length} results received, ${wrongOwner.length} with another owner, ${wrongResult.length} not the stored result ` +
        `(${lastBits.length} more equal to it but for numbers off in their last bits: see the figures); ` +
        `${run.spy.checked} polls with another student's cookie during the run: ${run.spy.leaked.length} answered 200, ${run.spy.other.length} neither 200 nor 404; ` +
        `afterwards ${sweep.detail}` +
        (wrongOwner.length ? `; e.g. ${JSON.stringify(wrongOwner[0])}` : '') +
        (wrongResult.length ? `; e.g. ${JSON.stringify(wrongResult[0])}` : '') +
        (run.spy.leaked.length ? `; e.g. ${JSON.stringify(run.spy.leaked[0])}` : ''),
    ),
  );

  // 4. One job at a time per worker.
  const overlaps = [];
  const perWorker = new Map();
  for (const j of db.values()) {
    if (!j.worker || j.started_at === null || j.finished_at === null) continue;
    if (!perWorker.has(j.worker)) perWorker.set(j.worker, []);
    perWorker.get(j.worker).push(j);
  }
  for (const [w, list] of perWorker) {
    list.sort((a, b) => a.started_at - b.started_at);
    for (let k = 1; k < list.length; k++) {
      if (list[k].started_at < list[k - 1].finished_at) {
        overlaps.push({ worker: w, a: list[k - 1].id, a_end: list[k - 1].finished_at, b: list[k].id, b_start: list[k].started_at });
      }
    }
  }
  checks.push(
    check('4. no worker ran two jobs at once', overlaps.length === 0, `${overlaps.length} overlapping pairs${overlaps.length ? `; e.g. ${JSON.stringify(overlaps[0])}` : ''}`),
  );

  // 5. Attempts and predictions.
  const stored = new Map(rows(url, 'SELECT student_id, COUNT(*)::int AS n FROM attempts GROUP BY student_id').map((r) => [r.student_id, r.n]));
  const [{ partial }] = rows(url, 'SELECT COUNT(*)::int AS partial FROM attempts a WHERE (SELECT COUNT(*) FROM answers WHERE attempt_id = a.id) <> a.total');
  let ackedAttempts = 0;
  let storedAttempts = 0;
  const short = [];
  const extra = [];
  for (const s of run.students) {
    if (!s.id) continue;
    const want = run.attemptAcks.get(s.id) ?? 0;
    const have = stored.get(s.id) ?? 0;
    const cut = run.unansweredAttempts.get(s.id) ?? 0;
    ackedAttempts += want;
    storedAttempts += have;
    if (have < want) short.push({ student: s.id, acknowledged: want, stored: have });
    else if (have > want + cut) extra.push({ student: s.id, acknowledged: want, unanswered: cut, stored: have });
  }
  const killedAcks = run.attemptAcksByNode.get(nodes[KILLED_NODE].name) ?? 0;
  checks.push(
    check(
      '5a. every quiz attempt acknowledged (either node, the killed one too) is in attempts, with all its answers',
      short.length === 0 && extra.length === 0 && partial === 0 && ackedAttempts > 0,
      `${ackedAttempts} acknowledged (${killedAcks} by the killed node), ${storedAttempts} stored; ${short.length} students short, ${extra.length} with more than acknowledged + cut off, ${partial} attempts missing answers` +
        (short.length ? `; e.g. ${JSON.stringify(short[0])}` : '') +
        (extra.length ? `; e.g. ${JSON.stringify(extra[0])}` : ''),
    ),
  );
  const predictionRows = new Map(rows(url, `SELECT student_id, COUNT(*)::int AS n FROM predictions GROUP BY student_id`).map((r) => [r.student_id, r.n]));
  const wantPredictions = new Map();
  let ackedPredictions = 0;
  const wrongPredictionColumn = [];
  for (const j of acked) {
    if (!j.predicted) continue;
    ackedPredictions += 1;
    const row = db.get(j.id);
    if (row && row.prediction !== PREDICTION) wrongPredictionColumn.push({ job: j.id, prediction: row.prediction });
  }
  // Expected per student: its jobs with a prediction that ended done (acknowledged or not).
  for (const j of db.values()) if (j.prediction !== null && j.status === 'done') wantPredictions.set(j.owner, (wantPredictions.get(j.owner) ?? 0) + 1);
  const predictionMismatch = [];
  for (const owner of new Set([...wantPredictions.keys(), ...predictionRows.keys()])) {
    const want = wantPredictions.get(owner) ?? 0;
    const have = predictionRows.get(owner) ?? 0;
    if (want !== have) predictionMismatch.push({ student: owner, done_with_prediction: want, predictions: have });
  }
  let storedPredictions = 0;
  for (const n of predictionRows.values()) storedPredictions += n;
  checks.push(
    check(
      '5b. every acknowledged prediction is in predictions once its job is done',
      predictionMismatch.length === 0 && wrongPredictionColumn.length === 0 && ackedPredictions > 0,
      `${ackedPredictions} acknowledged, ${storedPredictions} stored; ${predictionMismatch.length} students differ, ${wrongPredictionColumn.length} jobs stored another prediction` +
        (predictionMismatch.length ? `; e.g. ${JSON.stringify(predictionMismatch[0])}` : ''),
    ),
  );

  // 6. Every worker took part.
  const doneBy = new Map(WORKER_NAMES.map((w) => [w, 0]));
  for (const j of db.values()) if (j.status === 'done') doneBy.set(j.worker, (doneBy.get(j.worker) ?? 0) + 1);
  const seenBy = new Map(WORKER_NAMES.map((w) => [w, 0]));
  for (const j of received) {
    const w = j.result?.provenance?.worker ?? '(none)';
    seenBy.set(w, (seenBy.get(w) ?? 0) + 1);
  }
  checks.push(
    check(
      '6. all three workers finished jobs from the one class queue',
      WORKER_NAMES.every((w) => doneBy.get(w) >= 1),
      WORKER_NAMES.map((w) => `${w} ${doneBy.get(w)}`).join(', '),
    ),
  );

  // And: no panics, students wound down, no unexpected statuses, cookies stable.
  checks.push(
    check(
      'no process exited unless this test stopped it',
      unexpectedBeforeStop.length === 0,
      unexpectedBeforeStop.length ? unexpectedBeforeStop.map((e) => `${e.name} (${e.signal ?? `code ${e.code}`} at ${e.secs} s)`).join(', ') : 'none',
    ),
  );
  const panicked = procs.filter((p) => p.proc.panicked());
  checks.push(check('no "panicked" in any process log', panicked.length === 0, panicked.length ? panicked.map((p) => `${p.name}: ${p.proc.stderr.match(/.*panicked.*/)?.[0]}`).join('; ') : 'clean'));
  checks.push(
    check(
      'no unexpected status, no cookie reissued, students wound down in time',
      run.unexpected.length === 0 && run.cookieChanged.length === 0 && wound,
      `${run.unexpected.length} unexpected statuses, ${run.cookieChanged.length} cookies reissued, ${wound ? 'wound down' : 'CUT OFF'}` +
        (run.unexpected.length ? `; e.g. ${JSON.stringify(run.unexpected[0])}` : '') +
        (run.cookieChanged.length ? `; e.g. ${JSON.stringify(run.cookieChanged[0])}` : ''),
    ),
  );
  checks.push(
    check(
      'any web node answers: polls through the other node were answered',
      run.crossPolls.answered > 0,
      `${run.crossPolls.answered} polls answered by the other node (${run.crossPolls.afterKill} moved to the survivor after the kill)`,
    ),
  );

  // Figures.
  const dbDone = [...db.values()].filter((j) => j.status === 'done');
  const firstSubmit = Math.min(...[...db.values()].map((j) => j.submitted_at));
  const lastFinish = Math.max(...dbDone.map((j) => j.finished_at));
  const latency = summarise(acked.filter((j) => j.finished !== null && j.experiment === CHEAP.experiment).map((j) => j.finished - j.submitted));
  const runTime = summarise(dbDone.filter((j) => j.experiment === CHEAP.experiment).map((j) => (j.finished_at - j.started_at) * 1000));
  const routes = {};
  for (const n of nodes) routes[n.name] = n.rec.summary();
  return {
    config: { students: STUDENTS, duration_secs: DURATION_S, fault_secs: FAULT_S, lease_secs: LEASE_S, seed: SEED, full: FULL },
    elapsed_secs: round(elapsed),
    figures: {
      jobs_acknowledged: acked.length,
      jobs_in_table: db.size,
      jobs_done: dbDone.length,
      jobs_failed: [...db.values()].filter((j) => j.status === 'failed').length,
      jobs_per_sec: round(dbDone.length / Math.max(1e-9, lastFinish - firstSubmit)),
      latency_submit_to_done_ms: latency,
      run_time_ms: runTime,
      done_per_worker: Object.fromEntries(doneBy),
      results_seen_per_worker: Object.fromEntries(seenBy),
      responses_5xx: fiveXX,
      unanswered_live: liveErrors,
      refused_after_kill: Object.fromEntries(nodes.flatMap((n) => [...n.afterKill].map(([e, c]) => [`${n.name} ${e}`, c]))),
      refused_after_kill_total: afterKill,
      rejected_429: run.rejected429,
      killed_worker: fault.worker,
      killed_worker_jobs: fault.heldJobs,
      killed_job_finished_secs_after_kill: killedFinishSecs === null ? null : round(killedFinishSecs),
      killed_job_bound_secs: killedBound === null ? null : round(killedBound),
      killed_job_ended: fault.ended ?? null,
      killed_job_reclaimed_secs_after_kill: killed.length ? round(Math.max(...killed.map((j) => (j.started_at ?? NaN) - fault.dbKillAt))) : null,
      killed_job_rerun_secs: killed.length ? round(Math.max(...killed.map((j) => (j.finished_at ?? NaN) - (j.started_at ?? NaN)))) : null,
      quiz_attempts_acknowledged: ackedAttempts,
      quiz_attempts_acknowledged_by_killed_node: killedAcks,
      quiz_attempts_stored: storedAttempts,
      predictions_acknowledged: ackedPredictions,
      predictions_stored: storedPredictions,
      cross_node_polls_answered: run.crossPolls.answered,
      other_student_polls_404: run.spy.checked - run.spy.leaked.length - run.spy.other.length + sweep.got404,
      unacknowledged_jobs_in_table: unackedInDb.length,
      quiz_grader_jobs: graderJobs.length,
      quiz_grader_jobs_by_run: Object.fromEntries(
        [...graderJobs.reduce((m, j) => m.set(`${j.experiment} ${j.params}`, (m.get(`${j.experiment} ${j.params}`) ?? 0) + 1), new Map())].sort((a, b) => b[1] - a[1]),
      ),
      quiz_submit_ms: summarise(nodes.flatMap((n) => n.rec.groups.get('quiz_submit')?.latencies ?? [])),
      results_with_numbers_off_in_last_bits: lastBits.length,
      submissions: run.submits,
    },
    routes,
    process_exits: stops.map((e) => ({ name: e.name, code: e.code, signal: e.signal, timed_out: e.timedOut, seconds: round(e.seconds ?? NaN) })),
    checks,
    samples: {
      server_errors: nodes.flatMap((n) => n.serverErrors.slice(0, 10).map((e) => ({ node: n.name, ...e }))),
      unanswered_live: nodes.flatMap((n) => n.liveErrors.slice(0, 10).map((e) => ({ node: n.name, ...e }))),
      unexpected: run.unexpected.slice(0, 20),
      stuck: stuck.slice(0, 10).map(pickFields),
      ran_twice: ranTwice.slice(0, 10).map(pickFields),
      failed: badFailed.slice(0, 10).map(pickFields),
      overlaps: overlaps.slice(0, 10),
      numbers_off_in_last_bits: lastBits.slice(0, 5),
      unacknowledged_jobs: unackedInDb.slice(0, 20).map((j) => ({
        id: j.id,
        owner: j.owner,
        known_student: run.students.find((s) => s.id === j.owner)?.i ?? null,
        owner_home: run.students.find((s) => s.id === j.owner)?.home ?? null,
        experiment: j.experiment,
        prediction: j.prediction,
        status: j.status,
        worker: j.worker,
        secs_after_worker_kill: round(j.submitted_at - fault.dbKillAt),
        owner_acked_jobs_same_second: acked.filter((a) => a.student === j.owner && Math.abs((db.get(a.id)?.submitted_at ?? 0) - j.submitted_at) < 1).map((a) => a.id),
      })),
    },
  };
}

function pickFields(j) {
  const { result, ...rest } = j;
  return rest;
}

/** What `spySweep` found (it runs before the survivors stop). */
function finalSpySweep(run) {
  return run.sweep ?? { ok: false, detail: 'no sweep ran', got404: 0 };
}

/** Up to 40 finished jobs: the owner's cookie gets 200 on the survivor, another's 404. */
async function spySweep(run, node) {
  const jobs = run.jobs.filter((j) => j.status === 'done' || j.status === 'failed');
  const picked = [];
  for (let k = 0; k < jobs.length && picked.length < 40; k += Math.max(1, Math.floor(jobs.length / 40))) picked.push(jobs[k]);
  let owner200 = 0;
  let got404 = 0;
  const bad = [];
  for (const j of picked) {
    const mine = new NodeClient(node, new Map([['gpulab_student', j.student]]));
    const other = run.students.find((s) => s.id && s.id !== j.student);
    const theirs = new NodeClient(node, new Map([['gpulab_student', other.id]]));
    const a = await mine.get(`/api/jobs/${j.id}`, { group: 'sweep' });
    const b = await theirs.get(`/api/jobs/${j.id}`, { group: 'sweep' });
    if (a.status === 200 && a.json?.status === j.status) owner200 += 1;
    else bad.push({ job: j.id, owner_status: a.status, via: j.via });
    if (b.status === 404) got404 += 1;
    else bad.push({ job: j.id, other_status: b.status });
  }
  run.sweep = {
    ok: bad.length === 0 && picked.length > 0,
    got404,
    detail: `${picked.length} jobs (submitted through either node) asked on ${node.name}: ${owner200} answered to their owner, ${got404} 404 to another student${bad.length ? `; e.g. ${JSON.stringify(bad[0])}` : ''}`,
  };
}

function round(x) {
  return Number.isFinite(x) ? Math.round(x * 100) / 100 : null;
}

function printReport(r) {
  const f = r.figures;
  const ms = (x) => (x === null || x === undefined ? '-' : x.toFixed(1));
  console.log(`\n${r.config.students} students x ${r.config.duration_secs} s + ${r.config.fault_secs} s after the kills (${r.elapsed_secs} s of class in all)`);
  const rows = [['figure', 'value']];
  rows.push(['jobs acknowledged (202)', f.jobs_acknowledged]);
  rows.push(['jobs in table / done / failed', `${f.jobs_in_table} / ${f.jobs_done} / ${f.jobs_failed}`]);
  rows.push(['jobs/s (done, first submit to last finish)', f.jobs_per_sec]);
  rows.push(['job latency submit->done p50 / p99 ms', `${ms(f.latency_submit_to_done_ms.p50_ms)} / ${ms(f.latency_submit_to_done_ms.p99_ms)} (${f.latency_submit_to_done_ms.count} jobs)`]);
  rows.push(['job run time p50 / p99 ms', `${ms(f.run_time_ms.p50_ms)} / ${ms(f.run_time_ms.p99_ms)}`]);
  rows.push(['done per worker (table)', Object.entries(f.done_per_worker).map(([w, n]) => `${w} ${n}`).join(', ')]);
  rows.push(['results seen per worker (provenance)', Object.entries(f.results_seen_per_worker).map(([w, n]) => `${w} ${n}`).join(', ')]);
  rows.push(['responses >= 500', f.responses_5xx]);
  rows.push(['unanswered requests, live nodes', f.unanswered_live]);
  rows.push(['refused/reset after the kill (expected)', `${f.refused_after_kill_total} ${JSON.stringify(f.refused_after_kill)}`]);
  rows.push(['429s', f.rejected_429]);
  rows.push(['killed worker / its job(s)', `${f.killed_worker} / ${f.killed_worker_jobs.map((j) => `${j.id} ${j.experiment}`).join(', ') || 'none'}`]);
  rows.push([
    "killed worker's job ended after (s)",
    `${f.killed_job_finished_secs_after_kill ?? '-'} (re-claimed at ${f.killed_job_reclaimed_secs_after_kill ?? '-'}, re-run ${f.killed_job_rerun_secs ?? '-'}; bound ${f.killed_job_bound_secs ?? '-'})`,
  ]);
  rows.push(['quiz attempts acked / by killed node / stored', `${f.quiz_attempts_acknowledged} / ${f.quiz_attempts_acknowledged_by_killed_node} / ${f.quiz_attempts_stored}`]);
  rows.push(['predictions acked / stored', `${f.predictions_acknowledged} / ${f.predictions_stored}`]);
  rows.push(['polls answered by the other node', f.cross_node_polls_answered]);
  rows.push(["another student's cookie -> 404", f.other_student_polls_404]);
  rows.push(['unacknowledged student jobs in table', f.unacknowledged_jobs_in_table]);
  rows.push([`${GRADER} jobs (measured questions)`, `${f.quiz_grader_jobs}: ${Object.entries(f.quiz_grader_jobs_by_run).map(([k, n]) => `${n}x ${k.split(' ')[0]}`).join(', ')}`]);
  rows.push(['quiz submission p50 / p99 ms', `${ms(f.quiz_submit_ms.p50_ms)} / ${ms(f.quiz_submit_ms.p99_ms)}`]);
  rows.push(['results with numbers off in last bits', `${f.results_with_numbers_off_in_last_bits} of ${f.latency_submit_to_done_ms.count}`]);
  rows.push(['phases: start-up / class / checks (s)', `${r.phases.startup} / ${r.phases.class} / ${r.phases.after}`]);
  console.log(table(rows));
  const routeRows = [['node / route group', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'statuses']];
  for (const [node, groups] of Object.entries(r.routes)) {
    for (const [g, s] of Object.entries(groups)) {
      routeRows.push([`${node} ${g}`, s.count, ms(s.p50_ms), ms(s.p99_ms), ms(s.max_ms), Object.entries(s.statuses).map(([k, v]) => `${k}:${v}`).join(' ')]);
    }
  }
  console.log(`\n${table(routeRows)}`);
  console.log(`\nstops (SIGTERM): ${r.process_exits.map((e) => `${e.name} code ${e.code} in ${e.seconds} s${e.timed_out ? ' (TIMED OUT)' : ''}`).join(', ')}`);
  console.log('\nchecks');
  for (const c of r.checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  for (const [title, list] of Object.entries(r.samples)) {
    if (list.length) console.log(`\n${title} (first ${Math.min(5, list.length)}):\n${list.slice(0, 5).map((x) => `  ${JSON.stringify(x)}`).join('\n')}`);
  }
}

main().catch((e) => {
  console.error(`cluster: ${e.stack ?? e}`);
  if (unexpectedExits.length) console.error(`cluster: processes that exited on their own: ${JSON.stringify(unexpectedExits)}`);
  process.exitCode = 1;
  cleanup();
  process.exit(1);
});
