#!/usr/bin/env node
// What one student (and the instructor) does against a GPU Lab that runs in a container,
// one step per call, so the shell scripts around it can stop, start, and take down the
// containers between steps (tests/image/run-ci.sh, tests/image/class-ci.sh):
//
//   lesson BASE                   the home page lists the lessons; the first one serves
//   experiment BASE [NAME [WORKER]]  queues NAME (default timing, the course's cheapest)
//                                 and polls it until it is done, with a result (measured
//                                 by the worker named WORKER, when given)
//   start-training BASE STATE     queues a training run long enough to be running when the
//                                 container is stopped; waits until it runs; saves the job
//                                 and the student's cookie in STATE
//   finished BASE STATE           that training run ended `done` (it drained, not failed)
//   quiz BASE STATE               submits one graded quiz attempt and saves the student's
//                                 cookie and the score in STATE
//   progress BASE STATE           the same student's /api/me/progress still lists that
//                                 attempt, with its score
//   grades BASE TOKEN OUT         the instructor's gradebook (grades.csv, bearer token)
//                                 written to OUT
//
// Every request has a deadline, every wait a bound; the exit status is 0 only when the
// step's checks pass. Node's own fetch, through tests/load/lib/client.mjs.

import { readFileSync, writeFileSync } from 'node:fs';

import { Client, sleep } from '../load/lib/client.mjs';
import { jsonAnswers, rng } from '../load/lib/quiz.mjs';

const [step, base, ...rest] = process.argv.slice(2);
const steps = { lesson, experiment, 'start-training': startTraining, finished, quiz, progress, grades };
if (!steps[step] || !base) {
  console.error(`usage: student.mjs ${Object.keys(steps).join('|')} BASE ...`);
  process.exit(2);
}

function fail(message) {
  console.error(`student.mjs ${step}: ${message}`);
  process.exit(1);
}

function ok(message) {
  console.log(`   ok   ${message}`);
}

/** A client that carries the cookie saved in STATE, or a new student who has loaded
 * the home page (which gives the cookie, as a browser gets it). */
async function student(state) {
  const c = new Client(base);
  if (state?.cookie) {
    c.cookies.set('gpulab_student', state.cookie);
    return c;
  }
  const home = await c.get('/', { timeoutMs: 15_000 });
  if (home.status !== 200 || !c.id) fail(`GET / answered ${home.status} ${c.id ? '' : 'without the student cookie'}`);
  c.home = home.text;
  return c;
}

const load = (file) => JSON.parse(readFileSync(file, 'utf8'));
const save = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

/** Polls job `id` until it is done or failed, for at most `secs` seconds. */
async function waitForJob(c, id, secs, until = (s) => s === 'done' || s === 'failed') {
  const deadline = Date.now() + secs * 1000;
  let last = null;
  while (Date.now() < deadline) {
    const r = await c.get(`/api/jobs/${id}`, { timeoutMs: 10_000 });
    if (r.status === 200) {
      last = r.json;
      if (until(last?.status)) return last;
    } else if (r.status !== 0) {
      fail(`GET /api/jobs/${id} answered ${r.status}: ${r.text?.slice(0, 200)}`);
    }
    await sleep(250);
  }
  fail(`job ${id} did not get there within ${secs} s (last status: ${last?.status ?? 'none'})`);
}

async function lesson() {
  const c = await student();
  const slugs = [...new Set([...c.home.matchAll(/href="\/lessons\/([a-z0-9-]+)"/g)].map((m) => m[1]))];
  if (slugs.length === 0) fail('the home page links no lesson');
  const page = await c.get(`/lessons/${slugs[0]}`);
  if (page.status !== 200 || !/<h1[^>]*>/.test(page.text)) fail(`GET /lessons/${slugs[0]} answered ${page.status}`);
  ok(`home page lists ${slugs.length} lessons; /lessons/${slugs[0]} served (${page.text.length} bytes)`);
}

async function experiment() {
  const name = rest[0] ?? 'timing';
  const worker = rest[1];
  const c = await student();
  const r = await c.post(`/api/experiments/${name}`, { json: {}, timeoutMs: 15_000 });
  if (r.status !== 202 || !Number.isSafeInteger(r.json?.job_id)) fail(`POST /api/experiments/${name} answered ${r.status}: ${r.text?.slice(0, 200)}`);
  const job = await waitForJob(c, r.json.job_id, 180);
  if (job.status !== 'done' || job.result == null) fail(`job ${r.json.job_id} ended ${job.status}: ${job.error ?? 'no result'}`);
  const provenance = job.result?.provenance ?? job.provenance ?? {};
  const device = provenance.device ?? job.result?.device;
  if (worker && provenance.worker !== worker) fail(`job ${r.json.job_id} was measured by ${JSON.stringify(provenance.worker)}, not the worker ${worker}`);
  ok(`experiment ${name} (job ${r.json.job_id}) ran to the end: done${device ? ` on ${JSON.stringify(device).slice(0, 80)}` : ''}${worker ? `, measured by worker ${provenance.worker}` : ''}`);
}

async function startTraining() {
  const [file] = rest;
  if (!file) fail('needs STATE');
  const c = await student();
  // A few seconds of work on the CPU: still running when the container is stopped.
  const params = { batch: 64, hidden: 256, steps: 2000, log_every: 50 };
  const r = await c.post('/api/experiments/training', { json: params, timeoutMs: 15_000 });
  if (r.status !== 202 || !Number.isSafeInteger(r.json?.job_id)) fail(`POST /api/experiments/training answered ${r.status}: ${r.text?.slice(0, 200)}`);
  const job = await waitForJob(c, r.json.job_id, 120, (s) => s === 'running' || s === 'done' || s === 'failed');
  if (job.status !== 'running') fail(`the training run was ${job.status} before the stop, not running: make it longer`);
  save(file, { cookie: c.id, job: r.json.job_id });
  ok(`training run (job ${r.json.job_id}) is running`);
}

async function finished() {
  const [file] = rest;
  const state = load(file);
  const c = await student(state);
  const job = await waitForJob(c, state.job, 60);
  if (job.status !== 'done') fail(`job ${state.job} ended ${job.status}: ${job.error ?? ''}`);
  ok(`the training run that was running when the stop began (job ${state.job}) finished: done`);
}

async function quiz() {
  const [file] = rest;
  if (!file) fail('needs STATE');
  const c = await student();
  const slugs = [...new Set([...c.home.matchAll(/href="\/lessons\/([a-z0-9-]+)"/g)].map((m) => m[1]))];
  for (const id of slugs) {
    const q = await c.get(`/api/quizzes/${id}`);
    if (q.status !== 200) continue;
    const r = await c.post(`/api/quizzes/${id}/attempts`, { json: { answers: jsonAnswers(q.json, rng(38)) }, timeoutMs: 15_000 });
    if (![200, 201].includes(r.status) || !Number.isInteger(r.json?.total)) fail(`POST /api/quizzes/${id}/attempts answered ${r.status}: ${r.text?.slice(0, 200)}`);
    save(file, { cookie: c.id, quiz: id, correct: r.json.correct, total: r.json.total });
    ok(`quiz ${id}: attempt recorded (${r.json.correct}/${r.json.total}) for student ${c.id.slice(0, 8)}…`);
    return;
  }
  fail('no lesson has a quiz');
}

async function progress() {
  const [file] = rest;
  const state = load(file);
  const c = await student(state);
  const r = await c.get('/api/me/progress', { timeoutMs: 15_000 });
  if (r.status !== 200) fail(`GET /api/me/progress answered ${r.status}`);
  const attempts = r.json?.attempts ?? [];
  const kept = attempts.find((a) => (a.quiz ?? a.quiz_id) === state.quiz && a.correct === state.correct && a.total === state.total);
  if (!kept) fail(`the attempt at ${state.quiz} (${state.correct}/${state.total}) is gone: ${JSON.stringify(attempts).slice(0, 300)}`);
  ok(`the attempt at ${state.quiz} (${state.correct}/${state.total}) is still in the student's progress`);
}

async function grades() {
  const [token, out] = rest;
  if (!token || !out) fail('needs TOKEN and OUT');
  const c = new Client(base);
  const r = await c.get('/instructor/grades.csv', { headers: { authorization: `Bearer ${token}` }, timeoutMs: 15_000 });
  if (r.status !== 200) fail(`GET /instructor/grades.csv answered ${r.status}: ${r.text?.slice(0, 200)}`);
  const rows = r.text.trim().split('\n');
  if (rows.length < 2) fail(`the gradebook has no student: ${r.text.slice(0, 300)}`);
  writeFileSync(out, r.text);
  ok(`gradebook: ${rows.length - 1} rows (${out})`);
}

await steps[step]();
