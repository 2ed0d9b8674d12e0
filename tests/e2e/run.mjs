#!/usr/bin/env node
// End-to-end tests of GPU Lab in Debian's headless Chromium (driven by playwright-core),
// with axe-core accessibility checks. Starts the gpulab binary on a free port with a
// fresh database, then: (a) every page loads clean, and every lesson's directives mount
// and pass their specs in tests/e2e/directives/NAME.mjs; (b) screenshots in light/dark ×
// 1280/375 px and no sideways scroll on phones; (c) axe on every page, light and dark;
// (d) lesson 1's quiz with and without JavaScript; (e) the learner's path: lesson to
// quiz to next lesson, final exam and completion page, quiz marks and messages, typed
// numbers, search, downloads checked by Python and nbformat, copy buttons, 429
// sentences, print styles (lib/flow*.mjs); (f) the instructor cockpit and resume
// codes on a second server with a token (lib/instructor.mjs); (g) the "Check your
// script" page: paste a script, read its findings and follow their links, save the
// report, axe light and dark (lib/lint.mjs); (h) a recorded run beside a CPU run and
// under its reveal, on a server with a fixture (lib/reference.mjs); (i) the Colab
// notebook linked from the home page, and a learner's own GPU run imported on the About
// page and shown as theirs (lib/own-run.mjs). Prints PASS/FAIL per check and a
// summary table, writes target/e2e-artifacts/report.json, exits non-zero on any failure.
// Usage and environment variables: tests/e2e/README.md. Run by tests/run.sh.

import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkAccessibility } from './lib/axe.mjs';
import { checkFlow } from './lib/flow.mjs';
import { checkInstructor } from './lib/instructor.mjs';
import { launchBrowser } from './lib/browser.mjs';
import { readCourse } from './lib/course.mjs';
import { checkLessons } from './lib/lessons.mjs';
import { checkLint } from './lib/lint.mjs';
import { checkPages } from './lib/pages.mjs';
import { checkOwnRun } from './lib/own-run.mjs';
import { checkReference } from './lib/reference.mjs';
import { checkQuiz } from './lib/quiz.mjs';
import { Report, describeError } from './lib/report.mjs';
import { takeScreenshots } from './lib/screenshots.mjs';
import { startServer } from './lib/server.mjs';
import { envInt, envList, withTimeout } from './lib/util.mjs';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const artifacts = resolve(repoRoot, process.env.E2E_ARTIFACTS || 'target/e2e-artifacts');
const ALL_PARTS = ['lessons', 'screenshots', 'axe', 'quiz', 'flow', 'lint', 'instructor', 'reference', 'own-run'];
const parts = envList('E2E_PARTS').length ? envList('E2E_PARTS') : ALL_PARTS;
const timeouts = {
  mount: envInt('E2E_MOUNT_TIMEOUT_MS', 15_000),
  spec: envInt('E2E_SPEC_TIMEOUT_MS', 60_000),
  action: envInt('E2E_ACTION_TIMEOUT_MS', 10_000),
  navigation: 30_000,
  total: envInt('E2E_TOTAL_TIMEOUT_MS', 15 * 60_000),
};

const report = new Report();
let server = null;
let browser = null;
let cleaning = null;

/** Stops the browser and the server (each bounded); safe to call more than once. */
function cleanup() {
  cleaning ??= (async () => {
    if (browser) await withTimeout(browser.close(), 15_000, 'closing Chromium').catch(() => {});
    if (server) await server.stop().catch(() => {});
  })();
  return cleaning;
}

function finish(meta) {
  report.printSummary();
  const reportPath = join(artifacts, 'report.json');
  report.writeJson(reportPath, meta);
  console.log(`\nScreenshots: ${join(artifacts, 'screenshots')}/`);
  console.log(`Report:      ${reportPath}`);
  if (server) console.log(`Server log:  ${server.logPath}`);
}

async function main() {
  const unknown = parts.filter((p) => !ALL_PARTS.includes(p));
  if (unknown.length) throw new Error(`E2E_PARTS: unknown part(s) ${unknown.join(', ')}; known: ${ALL_PARTS.join(', ')}`);
  // Clear only what this harness writes, never the whole (configurable) folder.
  for (const entry of ['screenshots', 'failures', 'report.json', 'server.log', 'server-instructor.log', 'server-reference.log']) {
    rmSync(join(artifacts, entry), { recursive: true, force: true });
  }
  mkdirSync(artifacts, { recursive: true });
  const bin = resolve(repoRoot, process.env.GPULAB_BIN || 'target/debug/gpulab');
  const specsDir = resolve(repoRoot, process.env.E2E_SPECS_DIR || 'tests/e2e/directives');
  const course = readCourse(repoRoot);
  const only = envList('E2E_LESSONS');
  const lessons = only.length ? course.lessons.filter((l) => only.includes(l.slug)) : course.lessons;
  if (lessons.length === 0) throw new Error(`E2E_LESSONS=${only.join(',')} names no lesson in content/course.toml`);

  console.log(`== starting ${bin}`);
  server = await startServer({ bin, cwd: repoRoot, logPath: join(artifacts, 'server.log') });
  console.log(`   listening on ${server.origin} (pid ${server.pid})`);
  browser = await launchBrowser();
  console.log(`== Chromium ${browser.version()}; parts: ${parts.join(', ')}; ${lessons.length} lesson(s)`);

  const ctx = { browser, origin: server.origin, lessons, report, specsDir, repoRoot, artifacts, timeouts, bin };
  const meta = { origin: server.origin, binary: bin, chromium: browser.version(), parts, lessons: lessons.map((l) => l.slug) };

  if (parts.includes('lessons')) {
    console.log('\n== (a) pages, lessons and directive specs');
    await checkPages(ctx);
    const missing = await checkLessons(ctx);
    if (missing.length) report.note(`Directives with no spec in ${specsDir}: ${missing.join(', ')}`);
    meta.missingSpecs = missing;
  }
  if (parts.includes('screenshots')) {
    console.log('\n== (b) screenshots and 375px overflow');
    await takeScreenshots(ctx);
  }
  if (parts.includes('axe')) {
    console.log('\n== (c) axe-core accessibility (serious and critical fail)');
    await checkAccessibility(ctx);
  }
  if (parts.includes('quiz')) {
    console.log('\n== (d) lesson quiz through the UI');
    await checkQuiz(ctx);
  }
  if (parts.includes('flow')) {
    console.log('\n== (e) the learner\'s path: flow links, quiz marks, numbers, search, downloads, copy, 429, print');
    await checkFlow(ctx);
  }
  if (parts.includes('lint')) {
    console.log('\n== (g) check your script: paste, findings, links, saved report, axe');
    await checkLint(ctx);
  }
  if (parts.includes('instructor')) {
    console.log('\n== (f) the instructor cockpit and resume codes (own server, with a token)');
    await checkInstructor(ctx);
  }
  if (parts.includes('reference')) {
    console.log('\n== (h) a recorded run beside a CPU run and under its reveal (own server, a fixture)');
    await checkReference(ctx);
  }
  if (parts.includes('own-run')) {
    console.log('\n== (i) the Colab notebook link, and a learner\'s own GPU run imported and shown as theirs');
    await checkOwnRun(ctx);
  }
  return meta;
}

const watchdog = setTimeout(async () => {
  report.record('harness', 'whole run within E2E_TOTAL_TIMEOUT_MS', 'FAIL', `still running after ${timeouts.total} ms; stopped`);
  report.freeze();
  await cleanup();
  finish({ aborted: 'watchdog' });
  process.exit(1);
}, timeouts.total);

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    console.error(`\ne2e: ${signal}, stopping the server and the browser`);
    report.freeze();
    await cleanup();
    process.exit(130);
  });
}

let meta = {};
try {
  meta = await main();
} catch (error) {
  // Set-up trouble (no binary, server will not start, no Chromium) is a failure, not a crash.
  report.record('harness', 'set-up and run', 'FAIL', describeError(error));
}
await cleanup();
clearTimeout(watchdog);
finish(meta);
process.exit(report.failed.length || report.checks.length === 0 ? 1 : 0);
