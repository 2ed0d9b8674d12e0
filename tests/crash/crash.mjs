#!/usr/bin/env node
// Crash and shutdown tests against the real `gpulab` binary (a real process, really
// killed), on 127.0.0.1 with a fresh database each:
//
//   kill      several students stream quiz submissions (JSON API and HTML form) while an
//             experiment runs; the server is SIGKILLed mid-stream, restarted on the same
//             database, and every acknowledged attempt must be there — checked in the
//             SQLite file and through each student's own /api/me/progress. Repeated for
//             --rounds rounds on the same file, then PRAGMA integrity_check.
//   drain     a training run is running and more experiments wait when SIGTERM arrives:
//             new submissions get 503 with a message (or, after exit, a refused
//             connection) and never 202; waiting jobs fail with "shutting down"; the
//             running one finishes; quiz attempts made during the drain are kept; the
//             process exits 0 within the drain deadline; a restart sees everything.
//   deadline  the same with a run far longer than a short --drain-timeout-secs: the
//             server gives up on it and still exits 0 within the deadline.
//
// Why: a class's progress must survive the server being killed (OOM killer, power, a
// container stop) and an orderly stop must not lose or strand anyone's work.
//
//   node tests/crash/crash.mjs [--only kill,drain,deadline] [--rounds 3] [--bin PATH]
//
// Every loop is bounded in count and time; a watchdog ends the whole run after
// --budget-secs (default 300). Exit status 0 only when every check passed.

import { rmSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { Client, sleep } from '../load/lib/client.mjs';
import { attemptKey, compareAttempts, integrity } from '../load/lib/db.mjs';
import { formAnswers, jsonAnswers, rng } from '../load/lib/quiz.mjs';
import { binary, startServer, tempDir } from '../load/lib/server.mjs';

const { values: opt } = parseArgs({
  options: {
    only: { type: 'string', default: process.env.CRASH_ONLY ?? 'kill,drain,deadline' },
    rounds: { type: 'string', default: process.env.CRASH_ROUNDS ?? '3' },
    'budget-secs': { type: 'string', default: process.env.CRASH_BUDGET_SECS ?? '300' },
    bin: { type: 'string', default: process.env.GPULAB_BIN },
    seed: { type: 'string', default: process.env.CRASH_SEED ?? String(Date.now() % 1e9) },
  },
});
const ROUNDS = Math.max(1, Number(opt.rounds) | 0);
const SEED = Number(opt.seed) >>> 0;
const BIN = binary(opt.bin);
const random = rng(SEED);
const results = [];

function check(scenario, name, ok, detail = '') {
  results.push({ scenario, name, ok: Boolean(ok), detail });
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${name}${detail !== '' ? `: ${detail}` : ''}`);
  return ok;
}

/** Acknowledged attempts, keyed like the database check wants them. */
class Acks {
  constructor() {
    this.byQuiz = new Map();
    this.byScore = new Map();
    this.perStudent = new Map();
    this.total = 0;
  }

  add(student, quiz, graded) {
    const bump = (m, k) => m.set(k, (m.get(k) ?? 0) + 1);
    bump(this.byQuiz, attemptKey(student, quiz));
    if (graded) bump(this.byScore, attemptKey(student, quiz, graded.correct, graded.total));
    bump(this.perStudent, student);
    this.total += 1;
  }
}

/** Public quizzes (for building answers), read once from a running server. */
async function quizzes(base) {
  const c = new Client(base);
  const home = await c.get('/');
  const ids = [...new Set([...home.text.matchAll(/href="\/lessons\/([a-z0-9-]+)"/g)].map((m) => m[1]))];
  const out = new Map();
  for (const id of [...ids, 'final-exam']) {
    const q = await c.get(`/api/quizzes/${id}`);
    if (q.status === 200) out.set(id, q.json);
  }
  if (out.size === 0) throw new Error('no quizzes found');
  return out;
}

/**
 * One student submitting quizzes back to back until `stop()` says so, the first request
 * without an answer, or `limit` submissions. Alternates the JSON API and the form.
 */
async function stream(client, qs, acks, stop, limit = 5_000) {
  const ids = [...qs.keys()];
  let sent = 0;
  for (; sent < limit && !stop(); sent++) {
    const id = ids[Math.floor(random() * ids.length)];
    const quiz = qs.get(id);
    if (random() < 0.7) {
      const r = await client.post(`/api/quizzes/${id}/attempts`, { json: { answers: jsonAnswers(quiz, random) }, timeoutMs: 10_000 });
      if (r.status === 200 && Number.isInteger(r.json?.total)) acks.add(client.id, id, r.json);
      else if (r.status === 0) break;
      else throw new Error(`quiz submission answered ${r.status}: ${r.text?.slice(0, 200)}`);
    } else {
      const p = id === 'final-exam' ? '/final-exam' : `/lessons/${id}/quiz`;
      const r = await client.post(p, { form: formAnswers(quiz, random), timeoutMs: 10_000 });
      if (r.status === 200) acks.add(client.id, id, null);
      else if (r.status === 0) break;
      else throw new Error(`form submission answered ${r.status}: ${r.text?.slice(0, 200)}`);
    }
  }
  return sent;
}

/** Every acknowledged attempt is in the file and in each student's progress. */
async function verifyStored(scenario, database, base, students, acks, label) {
  const d = compareAttempts(acks.byQuiz, acks.byScore, database);
  check(scenario, `${label}: every acknowledged attempt is in the database`, d.lost === 0 && d.misrecorded === 0, `${d.acknowledged} acknowledged, ${d.stored} stored, ${d.lost} lost, ${d.misrecorded} with another score`);
  let short = 0;
  for (const s of students) {
    const c = new Client(base);
    c.cookies.set('gpulab_student', s);
    const r = await c.get('/api/me/progress');
    if ((r.json?.attempts?.length ?? -1) < (acks.perStudent.get(s) ?? 0)) short += 1;
  }
  check(scenario, `${label}: each student's progress lists their acknowledged attempts`, short === 0, `${students.length} students, ${short} short`);
  return d;
}

function dbIntact(scenario, database, label) {
  const db = integrity(database);
  check(scenario, `${label}: integrity_check ok, no attempt without its answers`, db.integrity === 'ok' && db.attemptsWithMissingAnswers === 0, `${db.integrity}, ${db.attemptsWithMissingAnswers} partial`);
}

function noPanic(scenario, server, label) {
  check(scenario, `${label}: no "panicked" in the server log`, !server.panicked(), server.panicked() ? server.stderr.match(/.*panicked.*/)?.[0] : '');
}

// ---------------------------------------------------------------------------------------

/** A student client that has loaded a page, so it has its cookie (writes need one). */
async function visitor(base) {
  const c = new Client(base);
  await c.get('/');
  return c;
}

const UNLIMITED_RATES = [
  '--attempts-per-minute', '1000000',
  '--writes-per-minute-per-address', '1000000',
  '--pending-per-student', '16',
  '--pending-per-address', '16',
];

async function killScenario() {
  console.log(`\n== kill: SIGKILL mid-stream, ${ROUNDS} round(s) on one database`);
  const dir = tempDir('gpulab-crash-kill-');
  const database = path.join(dir, 'crash.db');
  // Clients hammer quiz attempts from one address: lift the per-student and per-address
  // rates (tests/abuse covers them), so every refusal here would be a real failure.
  const args = ['--max-train-steps', '400', '--max-hidden', '256', '--experiments-per-minute', '0', ...UNLIMITED_RATES];
  const acks = new Acks();
  const writers = 6;
  let cookies = null;
  let qs = null;
  let unacknowledgedBound = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const server = await startServer({ bin: BIN, database, args, logPath: path.join(dir, 'server.log') });
    qs ??= await quizzes(server.base);
    if (round > 1) await verifyStored('kill', database, server.base, cookies, acks, `after kill ${round - 1}`);
    const clients = [...Array(writers).keys()].map(() => new Client(server.base));
    if (cookies) clients.forEach((c, i) => c.cookies.set('gpulab_student', cookies[i]));
    else for (const c of clients) await c.get('/api/me/progress');
    cookies = clients.map((c) => c.id);
    // An experiment running at the moment of the kill, too.
    const exp = await (await visitor(server.base)).post('/api/experiments/training', { json: { batch: 64, hidden: 256, steps: 400, log_every: 10 } });
    let killed = false;
    const streams = clients.map((c) => stream(c, qs, acks, () => killed));
    const before = acks.total;
    await sleep(800 + random() * 1700);
    const atKill = acks.total;
    await server.kill();
    killed = true;
    const sent = await Promise.race([Promise.all(streams), sleep(30_000).then(() => null)]);
    check('kill', `round ${round}: writers stopped after the kill`, sent !== null);
    check('kill', `round ${round}: attempts were acknowledged before the kill`, atKill > before, `${atKill - before} this round, experiment ${exp.status}`);
    noPanic('kill', server, `round ${round}`);
    unacknowledgedBound += writers;
  }
  const server = await startServer({ bin: BIN, database, args, logPath: path.join(dir, 'server.log') });
  const d = await verifyStored('kill', database, server.base, cookies, acks, `after kill ${ROUNDS}`);
  check('kill', 'at most one unacknowledged commit per writer per kill', d.stored <= d.acknowledged + unacknowledgedBound, `${d.stored} stored vs ${d.acknowledged} acknowledged + ${unacknowledgedBound}`);
  const exit = await server.stop('SIGTERM', 40_000);
  check('kill', 'final SIGTERM exits 0', exit.code === 0 && !exit.timedOut, `code ${exit.code}, ${exit.seconds.toFixed(2)} s`);
  dbIntact('kill', database, 'after the last restart');
  return dir;
}

// ---------------------------------------------------------------------------------------

/**
 * Posts experiments every ~100 ms until the connection is refused or `ms` passes. A post
 * may reach the server before it has read the signal: that one may be accepted, but then
 * it must fail with "shutting down" (or finish), and once one post is refused no later
 * one may be accepted.
 */
async function submitWhileDraining(base, ms) {
  const c = await visitor(base);
  const seen = { 503: 0, refused: 0, accepted: 0, acceptedAfterRefusal: 0, acceptedEnded: [], other: [], messages: new Set() };
  const until = performance.now() + ms;
  let i = 0;
  while (performance.now() < until && i++ < 2_000) {
    const r = await c.post('/api/experiments/timing', { json: {}, timeoutMs: 5_000 });
    if (r.status === 503) {
      seen[503] += 1;
      seen.messages.add(r.json?.error?.message ?? r.text.slice(0, 120));
    } else if (r.status === 0) {
      seen.refused += 1;
      break;
    } else if (r.status === 202) {
      seen.accepted += 1;
      if (seen[503] > 0) seen.acceptedAfterRefusal += 1;
      const ended = await pollJob(c, r.json.job_id, 5_000);
      seen.acceptedEnded.push(ended?.status === 'failed' ? ended.error : ended?.status ?? 'nothing');
    } else seen.other.push(r.status);
    await sleep(100);
  }
  return seen;
}

/** Polls job `id` until it is done or failed, the connection goes, or `ms` passes. */
/** Polls job `id` as its owner `c` (only the owner may read a job). */
async function pollJob(c, id, ms) {
  const until = performance.now() + ms;
  let last = null;
  while (performance.now() < until) {
    const r = await c.get(`/api/jobs/${id}`, { timeoutMs: 5_000 });
    if (r.status === 0) return { ...(last ?? {}), gone: true };
    last = r.json;
    if (last?.status === 'done' || last?.status === 'failed') return last;
    await sleep(100);
  }
  return last;
}

async function waitRunning(c, id, ms) {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const r = await c.get(`/api/jobs/${id}`);
    if (r.json?.status !== 'queued') return r.json?.status;
    await sleep(50);
  }
  return 'queued';
}

/**
 * SIGTERM while `running` trains and two more wait. `drainSecs` is the server's deadline;
 * `expectFinish` says whether the running job should finish within it.
 */
async function drainScenario(name, { drainSecs, training, expectFinish }) {
  console.log(`\n== ${name}: SIGTERM with a training run going (--drain-timeout-secs ${drainSecs})`);
  const dir = tempDir(`gpulab-crash-${name}-`);
  const database = path.join(dir, 'crash.db');
  const args = ['--drain-timeout-secs', String(drainSecs), '--job-timeout-secs', '120', '--max-train-steps', '2000', '--max-hidden', '1024', '--experiments-per-minute', '0', ...UNLIMITED_RATES];
  const server = await startServer({ bin: BIN, database, args, logPath: path.join(dir, 'server.log') });
  const qs = await quizzes(server.base);
  const acks = new Acks();
  const students = [];
  for (let i = 0; i < 3; i++) students.push(await visitor(server.base));
  for (const s of students) await stream(s, qs, acks, () => false, 5);
  const runner = await visitor(server.base);
  const first = await runner.post('/api/experiments/training', { json: training });
  const waiting = [];
  for (const s of students.slice(0, 2)) {
    const r = await s.post('/api/experiments/timing', { json: {} });
    if (r.status === 202) waiting.push([s, r.json.job_id]);
  }
  if (!check(name, 'the training run and two more experiments were accepted', first.status === 202 && waiting.length === 2, `${first.status}, ${waiting.length} waiting`)) {
    await server.kill();
    return dir;
  }
  const id = first.json.job_id;
  const state = await waitRunning(runner, id, 30_000);
  check(name, 'the training run started before SIGTERM', state === 'running', state);
  const signalled = performance.now();
  server.child.kill('SIGTERM');
  // Meanwhile: new experiments are refused, waiting ones fail, quizzes are still kept.
  const [refusals, waitingStates, runningState, drainAcks] = await Promise.all([
    submitWhileDraining(server.base, (drainSecs + 10) * 1000),
    Promise.all(waiting.map(([owner, w]) => pollJob(owner, w, 5_000))),
    pollJob(runner, id, (drainSecs + 10) * 1000),
    (async () => {
      await sleep(200);
      const before = acks.total;
      await stream(students[2], qs, acks, () => performance.now() - signalled > 1_500, 20);
      return acks.total - before;
    })(),
  ]);
  const exit = await Promise.race([server.exit, sleep((drainSecs + 20) * 1000).then(() => null)]);
  const exitSecs = exit ? (exit.at - signalled) / 1000 : Infinity;
  if (!exit) await server.kill();
  check(name, `exits 0 within the drain deadline (${drainSecs} s + 5 s slack)`, exit?.code === 0 && exitSecs <= drainSecs + 5, exit ? `code ${exit.code}, signal ${exit.signal}, ${exitSecs.toFixed(2)} s` : 'did not exit');
  check(name, 'no experiment accepted once the drain refused one, and any accepted before failed with "shutting down" or finished', refusals.acceptedAfterRefusal === 0 && refusals.acceptedEnded.every((e) => e === 'done' || /shutting down/i.test(e)), `${refusals.accepted} accepted (${refusals.acceptedAfterRefusal} after a refusal): ${JSON.stringify(refusals.acceptedEnded)}`);
  check(name, 'new experiments got 503 with a message, or a refused connection after exit', refusals.other.length === 0 && refusals[503] + refusals.refused > 0 && [...refusals.messages].every((m) => /shut/i.test(m)), `${refusals[503]} x 503, ${refusals.refused} refused, other ${JSON.stringify(refusals.other)}; ${[...refusals.messages][0] ?? ''}`);
  // The server exits moments after the last experiment finishes, so a poll may miss the
  // final "done"; its own log line says whether it waited for the run or gave up on it.
  const gaveUp = /still running/i.test(server.stderr);
  const seen = `poll saw ${runningState?.status ?? 'nothing'}${runningState?.gone ? ' before the server was gone' : ''}`;
  if (expectFinish) check(name, 'the running experiment finished during the drain', runningState?.status === 'done' || (!gaveUp && exit?.code === 0), `${seen}; log: ${gaveUp ? 'gave up on it' : 'waited for it'}`);
  else check(name, 'the server gave up on the running experiment at the deadline', runningState?.status !== 'done' && gaveUp, `${seen}; log: ${gaveUp ? 'gave up on it' : 'no "still running" line'}`);
  noPanic(name, server, 'drain');
  const again = await startServer({ bin: BIN, database, args, logPath: path.join(dir, 'server.log') });
  // A poll during the drain can miss the last word when the server exits first; the
  // database keeps it, and the restarted server shows it to the job's owner.
  const waitingFinal = await Promise.all(
    waiting.map(async ([owner, w], i) => {
      const s = waitingStates[i];
      if (s?.status === 'failed' || s?.status === 'done') return s;
      const c = new Client(again.base);
      c.cookies.set('gpulab_student', owner.id);
      return (await c.get(`/api/jobs/${w}`)).json;
    }),
  );
  check(name, 'waiting experiments failed with "shutting down"', waitingFinal.every((s) => s?.status === 'failed' && /shutting down/i.test(s.error ?? '')), JSON.stringify(waitingFinal.map((s) => s?.error ?? s?.status)));
  await verifyStored(name, database, again.base, students.map((s) => s.id), acks, `after restart (${drainAcks} acknowledged while draining)`);
  const ready = await new Client(again.base).get('/readyz');
  check(name, 'the restarted server is ready', ready.status === 200, `${ready.status}`);
  const stop = await again.stop('SIGTERM', 30_000);
  check(name, 'an idle server exits 0 on SIGTERM at once', stop.code === 0 && stop.seconds < 5, `code ${stop.code}, ${stop.seconds.toFixed(2)} s`);
  dbIntact(name, database, 'after restart');
  return dir;
}

// ---------------------------------------------------------------------------------------

async function main() {
  const budget = Number(opt['budget-secs']) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`crash: over the ${budget / 1000} s budget; giving up`);
    process.exit(1);
  }, budget);
  console.log(`crash: ${BIN} (seed ${SEED})`);
  const only = new Set(opt.only.split(','));
  const dirs = [];
  const timed = async (name, run) => {
    if (!only.has(name)) return;
    const t0 = performance.now();
    dirs.push(await run());
    console.log(`  (${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  };
  await timed('kill', killScenario);
  // A run of a few seconds on a CPU: the drain has to wait for it.
  await timed('drain', () => drainScenario('drain', { drainSecs: 60, training: { batch: 128, hidden: 256, steps: 2000, log_every: 50 }, expectFinish: true }));
  // A run of minutes: the server gives up on it after 2 s.
  await timed('deadline', () => drainScenario('deadline', { drainSecs: 2, training: { batch: 512, hidden: 1024, steps: 2000, log_every: 100 }, expectFinish: false }));
  clearTimeout(watchdog);
  const failed = results.filter((r) => !r.ok);
  console.log(`\n${results.length - failed.length} passed, ${failed.length} failed`);
  if (failed.length === 0) for (const d of dirs) rmSync(d, { recursive: true, force: true });
  else console.log(`crash: kept databases and logs in ${dirs.join(' ')}`);
  process.exitCode = failed.length ? 1 : 0;
}

main().catch((e) => {
  console.error(`crash: ${e.stack ?? e}`);
  process.exit(1);
});
