// Starts the gpulab binary on a local port the OS picks (read back from its log, so no
// other process can take it between a probe and the bind) with a fresh temporary database and small
// experiment limits (so live experiments finish quickly on a CPU-only CI machine), waits
// until it answers, and stops it again. Its log goes to a file next to the report.

import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servingBase } from '../../load/lib/serving.mjs';
import { sleep } from './util.mjs';

/** RUST_LOG with the server's own info lines kept (none set: the binary's default). */
function logFilter() {
  const set = process.env.RUST_LOG;
  return set && !/gpulab/.test(set) ? { RUST_LOG: `${set},gpulab=info` } : {};
}

/**
 * Starts `bin serve ...` and resolves with { origin, stop, logPath } once GET / answers
 * 200, or rejects (having killed the process) when it exits early or `readyMs` passes.
 */
export async function startServer({ bin, cwd, logPath, readyMs = 30_000, token = '', extraArgs = [] }) {
  if (!existsSync(bin)) {
    throw new Error(`server binary ${bin} not found: run \`cargo build\` (or set GPULAB_BIN)`);
  }
  const dbDir = mkdtempSync(join(tmpdir(), 'gpulab-e2e-'));
  const args = [
    'serve',
    '--addr', '127.0.0.1:0',
    '--database', join(dbDir, 'e2e.db'),
    '--max-transfer-bytes', '67108864',
    '--max-matmul-size', '512',
    '--max-train-steps', '400',
    ...extraArgs,
  ];
  const log = createWriteStream(logPath);
  log.write(`$ ${bin} ${args.join(' ')}\n`);
  const child = spawn(bin, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    // An instructor token in the caller's environment would change the pages; only the
    // instructor part passes its own.
    // Its "serving … on http://…" line (info) says the port, whatever RUST_LOG asks.
    env: { ...process.env, GPULAB_INSTRUCTOR_TOKEN: token, ...logFilter() },
  });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  let origin = null;
  let early = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    if (origin !== null) return;
    early = (early + chunk).slice(-8_000);
    origin = servingBase(early);
  });
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
  });

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (exited === null) {
      child.kill('SIGTERM');
      for (let i = 0; i < 50 && exited === null; i += 1) await sleep(100);
      if (exited === null) child.kill('SIGKILL');
      for (let i = 0; i < 20 && exited === null; i += 1) await sleep(100);
    }
    log.end();
    rmSync(dbDir, { recursive: true, force: true });
  };
  // A harness crash must not leave the server running.
  process.once('exit', () => {
    if (exited === null) child.kill('SIGKILL');
  });

  const deadline = Date.now() + readyMs;
  let lastError = 'no answer yet';
  while (Date.now() < deadline) {
    if (exited !== null) {
      await stop();
      throw new Error(`server exited during start-up (code ${exited.code}, signal ${exited.signal}); see ${logPath}`);
    }
    if (origin === null) {
      lastError = 'no "serving" line in its log yet';
      await sleep(100);
      continue;
    }
    try {
      const response = await fetch(`${origin}/`, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return { origin, stop, logPath, pid: child.pid, database: join(dbDir, 'e2e.db') };
      lastError = `GET / answered ${response.status}`;
    } catch (error) {
      lastError = error.cause?.code ?? error.message;
    }
    await sleep(200);
  }
  await stop();
  throw new Error(`server did not answer GET / within ${readyMs} ms (${lastError}); see ${logPath}`);
}
