// Reads the address a gpulab server serves on from its log. A module of its own, with no
// side effects, so that harnesses which install their own signal handlers (tests/e2e)
// can share it with the load, crash and cluster harnesses (server.mjs).

/**
 * The base URL in the server's start-up line, "GPU Lab serving N lessons on
 * http://127.0.0.1:PORT (database …", once `log` holds it (else null): how a harness
 * learns the port the OS gave a server started with `--addr 127.0.0.1:0`.
 */
export function servingBase(log) {
  return /serving .* on (http:\/\/127\.0\.0\.1:\d+)/.exec(log)?.[1] ?? null;
}
