// One virtual student over HTTP: Node's built-in fetch, the `gpulab_student` cookie kept
// like a browser keeps it, every request timed into a Recorder under a route group, a
// per-request deadline, and no redirects followed (a 303 is an answer in itself).

/** Default deadline for one request. */
export const REQUEST_TIMEOUT_MS = 30_000;

export class Client {
  /**
   * @param {string} base   `http://127.0.0.1:PORT`
   * @param {import('./stats.mjs').Recorder | null} recorder
   */
  constructor(base, recorder = null) {
    this.base = base;
    this.recorder = recorder;
    this.cookies = new Map();
  }

  /** The student id (the cookie value), once the server has issued one. */
  get id() {
    return this.cookies.get('gpulab_student') ?? null;
  }

  cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  keepCookies(headers) {
    for (const line of headers.getSetCookie?.() ?? []) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  }

  /**
   * Sends one request. Resolves to `{ status, headers, text, json, ms }`, or to
   * `{ status: 0, error }` when no HTTP answer came (refused, reset, timed out).
   * Options: `json` (a value to send as JSON), `form` (pairs to send url-encoded),
   * `body`, `headers`, `group` (for the recorder), `timeoutMs`, `read` (false: skip body).
   */
  async request(method, path, opts = {}) {
    const headers = { ...(opts.headers ?? {}) };
    const cookie = this.cookieHeader();
    if (cookie && !('cookie' in headers)) headers.cookie = cookie;
    let body = opts.body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['content-type'] ??= 'application/json';
    } else if (opts.form) {
      body = new URLSearchParams(opts.form).toString();
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    }
    const group = opts.group ?? 'other';
    const started = performance.now();
    try {
      const response = await fetch(this.base + path, {
        method,
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(opts.timeoutMs ?? REQUEST_TIMEOUT_MS),
      });
      this.keepCookies(response.headers);
      const text = opts.read === false ? (await response.arrayBuffer(), '') : await response.text();
      const ms = performance.now() - started;
      this.recorder?.response(group, ms, response.status);
      if (this.recorder && response.status >= 500 && this.recorder.serverErrors.length < 200) {
        this.recorder.serverErrors.push({ group, method, path, status: response.status, body: text.slice(0, 300) });
      }
      let json;
      if ((response.headers.get('content-type') ?? '').includes('json')) {
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
      }
      return { status: response.status, headers: response.headers, text, json, ms };
    } catch (error) {
      const ms = performance.now() - started;
      const cause = error?.cause?.code ?? error?.cause?.message ?? error?.name ?? String(error);
      this.recorder?.failure(group, method, path, cause);
      return { status: 0, error: cause, ms };
    }
  }

  get(path, opts) {
    return this.request('GET', path, opts);
  }

  post(path, opts) {
    return this.request('POST', path, opts);
  }
}

/** Sleeps `ms` milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
