#!/usr/bin/env python3
"""A learner's first minutes, against a gpulab binary built for another platform and run
through that platform's stand-in here (Wine for Windows, qemu-aarch64 for Linux on Arm).

    smoke.py --name windows --runner wine target/x86_64-pc-windows-gnu/debug/gpulab.exe

Steps, each timed: `serve` on a port the OS picks (read back from the serving line); the
home page; a lesson; the device card, whose CPU model and memory must be filled in (the
host facts on that OS); a CPU experiment (matmul) run to `done`; a quiz attempt graded;
Ctrl-C (SIGINT, which Wine delivers to a Windows console program as CTRL_C_EVENT and
qemu passes on) drained to a clean exit; then `gpulab selftest`. Prints one line per
step and "N passed, N failed"; exits non-zero when a step failed. Bounded: every wait
has a deadline (generous, since an emulator is slow; nothing is asserted about speed).
"""

import argparse
import http.cookiejar
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

results = []


def step(name, fn):
    started = time.monotonic()
    try:
        detail = fn()
        ok = True
    except Exception as error:  # every failure is reported, then the run goes on
        detail = f"{type(error).__name__}: {error}"
        ok = False
    seconds = time.monotonic() - started
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name} ({seconds:.1f} s){': ' + detail if detail else ''}", flush=True)
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--runner", default="", help="command that runs the binary (wine, qemu-aarch64-static …)")
    parser.add_argument("--name", default="platform")
    parser.add_argument("--start-timeout", type=float, default=300)
    parser.add_argument("--job-timeout", type=float, default=600)
    parser.add_argument("--skip-selftest", action="store_true")
    args = parser.parse_args()
    command = shlex.split(args.runner) + [args.binary]
    workdir = tempfile.mkdtemp(prefix=f"gpulab-{args.name}-")
    log_path = os.path.join(workdir, "serve.log")
    print(f"== {args.name}: {' '.join(command)} (log {log_path})", flush=True)
    log = open(log_path, "w")
    server = subprocess.Popen(
        command + ["serve", "--addr", "127.0.0.1:0", "--database", os.path.join(workdir, "smoke.db")],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1", "RUST_LOG": "info"},
    )
    state = {}
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def request(path, body=None, expect=(200,)):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(state["base"] + path, data=data, method="POST" if body is not None else "GET")
        if data is not None:
            req.add_header("content-type", "application/json")
        try:
            with opener.open(req, timeout=120) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read().decode()
        if status not in expect:
            raise AssertionError(f"{path} answered {status}: {text[:300]}")
        return text

    def read_log():
        with open(log_path) as f:
            return f.read()

    def started():
        deadline = time.monotonic() + args.start_timeout
        while time.monotonic() < deadline:
            match = re.search(r"serving .* on (http://127\.0\.0\.1:\d+)", read_log())
            if match:
                state["base"] = match.group(1)
                return state["base"]
            if server.poll() is not None:
                raise AssertionError(f"exited {server.returncode}: {read_log()[-2000:]}")
            time.sleep(0.5)
        raise AssertionError(f"no serving line within {args.start_timeout:.0f} s: {read_log()[-2000:]}")

    def home():
        text = request("/")
        assert "GPU Lab" in text, text[:300]
        state["lessons"] = list(dict.fromkeys(re.findall(r'href="/lessons/([a-z0-9-]+)"', text)))
        assert state["lessons"], "no lesson linked from the home page"
        return f"{len(text)} bytes, {len(state['lessons'])} lessons linked"

    def lesson():
        slug = state["lessons"][0]
        text = request(f"/lessons/{slug}")
        assert "<h1" in text, text[:300]
        return f"/lessons/{slug}: {len(text)} bytes"

    def device():
        card = json.loads(request("/api/device"))
        device = card.get("device", card)
        cpu = device["cpu"]
        assert cpu["model"] and cpu["logical_cores"] >= 1, cpu
        assert (cpu.get("memory_total_bytes") or 0) > 0, cpu
        return f"{device.get('kind')}: {cpu['model']}, {cpu['logical_cores']} cores, {cpu['memory_total_bytes'] / 2**30:.1f} GiB, SGEMM {cpu.get('sgemm_kernel')}"

    def experiment():
        job = json.loads(request("/api/experiments/matmul", {"max_size": 64}, expect=(200, 202)))
        poll = job.get("poll") or f"/api/jobs/{job['job_id']}"
        deadline = time.monotonic() + args.job_timeout
        while time.monotonic() < deadline:
            status = json.loads(request(poll))
            if status.get("status") in ("done", "failed"):
                assert status["status"] == "done", status.get("error")
                return f"matmul (max_size 64) done, job {job.get('job_id')}"
            time.sleep(0.5)
        raise AssertionError(f"the job did not finish within {args.job_timeout:.0f} s")

    def quiz():
        slug = state["lessons"][0]
        questions = json.loads(request(f"/api/quizzes/{slug}"))["questions"]
        answers = {}
        for q in questions:
            if q["kind"] == "single":
                answers[q["id"]] = 0
            elif q["kind"] == "multiple":
                answers[q["id"]] = [0]
            else:
                answers[q["id"]] = 1.0
        graded = json.loads(request(f"/api/quizzes/{slug}/attempts", {"answers": answers}))
        assert isinstance(graded.get("correct"), int) and isinstance(graded.get("total"), int), graded
        return f"{slug}: {graded['correct']}/{graded['total']}"

    def ctrl_c():
        server.send_signal(signal.SIGINT)
        try:
            code = server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
            raise AssertionError("still running 120 s after Ctrl-C")
        text = read_log()
        assert "Ctrl-C received, shutting down" in text, text[-1500:]
        assert "shut down cleanly" in text, text[-1500:]
        assert code == 0, f"exit status {code}"
        return "drained and exited 0"

    def selftest():
        out = subprocess.run(command + ["selftest"], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=args.job_timeout, env={**os.environ, "NO_COLOR": "1"})
        lines = (out.stdout + out.stderr).strip().splitlines()
        assert out.returncode == 0, "\n".join(lines[-30:])
        return lines[-1] if lines else ""

    try:
        if step("serve", started):
            step("home page", home)
            if "lessons" in state:
                step("lesson page", lesson)
            step("device card (host facts)", device)
            step("CPU experiment to the end", experiment)
            if "lessons" in state:
                step("quiz attempt", quiz)
            step("Ctrl-C drains", ctrl_c)
        if not args.skip_selftest:
            step("gpulab selftest", selftest)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    passed = sum(results)
    print(f"{args.name}: {passed} passed, {len(results) - passed} failed", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
