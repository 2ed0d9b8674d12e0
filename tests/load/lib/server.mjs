// Starting and stopping a real `gpulab serve` process for the load and crash tests: a
// fresh port picked by the server (`--addr 127.0.0.1:0`, the bound address read from its
// "serving" log line), stderr kept in memory and in a file for the "panicked" check, and
// stop/kill helpers that never wait without a deadline. Loopback only.

import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { servingBase } from './serving.mjs';

/** The repository root (tests/load/lib/../../..). */
export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');

/** The binary to test: $GPULAB_BIN, else target/release/gpulab, else target/debug/gpulab. */
export function binary(preferred) {
  const candidates = [preferred, process.env.GPULAB_BIN, 'target/release/gpulab', 'target/debug/gpulab'].filter(Boolean);
  for (const c of candidates) {
    const p = path.resolve(ROOT, c);
    if (existsSync(p)) return p;
  }
  throw new Error(`no gpulab binary: tried ${candidates.join(', ')} (build it, or set GPULAB_BIN)`);
}

/** The `serve --help` text, to pass only the flags this build knows. */
export function serveHelp(bin) {
  return execFileSync(bin, ['serve', '--help'], { encoding: 'utf8', timeout: 10_000 });
}

/** Keeps only the `[flag, value]` pairs whose flag appears in `help`. */
export function knownFlags(help, pairs) {
  const args = [];
  const skipped = [];
  for (const [flag, value] of pairs) {
    if (value === undefined || value === null) continue;
    if (help.includes(flag)) args.push(flag, String(value));
    else skipped.push(flag);
  }
  return { args, skipped };
}

/** A fresh temporary folder for a database. */
export function tempDir(prefix) {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

const ANSI = /\x1b\[[0-9;]*m/g;

// Servers still running: killed if this script exits or is interrupted, so a timed-out
// or failed test never leaves a gpulab process behind.
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of live) child.kill('SIGKILL');
    process.exit(130);
  });
}

/** A running server process. */
export class Server {
  constructor(child, logPath) {
    this.child = child;
    this.logPath = logPath;
    this.stderr = '';
    this.base = null;
    this.exit = new Promise((resolve) => {
      child.on('exit', (code, signal) => resolve({ code, signal, at: performance.now() }));
    });
    this.exited = null;
    this.exit.then((e) => (this.exited = e));
  }

  /** Whether stderr mentions a Rust panic. */
  panicked() {
    return /panicked/.test(this.stderr);
  }

  /** Sends `signal` and waits up to `ms` for the exit; SIGKILLs after that. */
  async stop(signal = 'SIGTERM', ms = 15_000) {
    if (this.exited) return this.exited;
    const sentAt = performance.now();
    this.child.kill(signal);
    const timer = new Promise((r) => setTimeout(() => r(null), ms));
    const exit = await Promise.race([this.exit, timer]);
    if (!exit) {
      this.child.kill('SIGKILL');
      const killed = await this.exit;
      return { ...killed, timedOut: true, seconds: (killed.at - sentAt) / 1000 };
    }
    return { ...exit, timedOut: false, seconds: (exit.at - sentAt) / 1000 };
  }

  /** SIGKILL: no chance to flush or clean up. */
  async kill() {
    return this.stop('SIGKILL', 10_000);
  }
}

/**
 * Starts `bin serve` on 127.0.0.1 with `database` and `args`; resolves once it logs the
 * address it serves on (or rejects after `startMs`).
 */
export async function startServer({ bin, database, args = [], env = {}, logPath, startMs = 60_000 }) {
  const child = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--database', database, ...args], {
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn,gpulab=info', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  live.add(child);
  child.on('exit', () => live.delete(child));
  const server = new Server(child, logPath);
  const log = logPath ? createWriteStream(logPath, { flags: 'a' }) : null;
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gpulab did not start within ${startMs} ms:\n${server.stderr.slice(-2000)}`)), startMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log?.write(chunk);
      // Keep the head and the tail of a long log: enough for "panicked" and diagnostics.
      server.stderr += chunk.replace(ANSI, '');
      if (server.stderr.length > 4_000_000) server.stderr = server.stderr.slice(0, 1_000_000) + server.stderr.slice(-1_000_000);
      if (!server.base) {
        const base = servingBase(server.stderr);
        if (base) {
          server.base = base;
          clearTimeout(timer);
          resolve(server);
        }
      }
    });
    server.exit.then((e) => {
      clearTimeout(timer);
      if (!server.base) reject(new Error(`gpulab exited (${e.code ?? e.signal}) before serving:\n${server.stderr.slice(-2000)}`));
    });
  });
  return ready;
}
