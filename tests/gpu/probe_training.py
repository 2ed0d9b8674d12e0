"""Our training step at the sizes the labs run on a GPU, kernel by kernel: for each
(batch, width, precision), `gpulab bench training --json` (Adam, 40 steps, the loss read
every 20), then one line per run (median step, samples/s, the cost of reading the loss
every step) and the profiled step's kernels, each with its time, achieved rate and share
of this GPU's ceiling. Prints a table; exits 0 without a GPU (nothing to profile)."""

import json
import os
import subprocess
import sys

SIZES = [(4096, 2048, "fp32"), (4096, 4096, "fp32"), (4096, 4096, "bf16"), (4096, 8192, "fp32"), (4096, 8192, "bf16")]


def main():
    gpulab = os.environ.get("GPULAB_BIN", "gpulab")
    env = dict(os.environ, GPULAB_MAX_HIDDEN="8192")
    kind = json.loads(subprocess.run([gpulab, "device"], capture_output=True, text=True, env=env).stdout or "{}").get("kind")
    if kind != "cuda":
        print(f"backend {kind}: no GPU, nothing to profile")
        return 0
    for batch, hidden, precision in SIZES:
        args = [gpulab, "bench", "training", "--batch", str(batch), "--hidden", str(hidden), "--precision", precision,
                "--steps", "40", "--log-every", "20", "--json"]
        run = subprocess.run(args, capture_output=True, text=True, env=env)
        if run.returncode != 0:
            print(f"{batch} / {hidden} {precision}: failed: {run.stderr.strip()[-300:]}")
            continue
        r = json.loads(run.stdout)
        r = r.get("result", r)
        p = r.get("kernels") or {}
        print(f"\n{batch} / {hidden} {precision}: step {r['step_ms']['median']:.3f} ms, {r['samples_per_sec']:,.0f} samples/s; "
              f"loss read every step {r['read_every_step_ms']:.3f} ms/step, every 20 {r['read_every_n_ms']:.3f}; "
              f"profiled step {p.get('step_ms', 0):.3f} ms against a floor of {p.get('floor_ms', 0):.3f} "
              f"(memory {p.get('memory_gbps', 0):.0f} GB/s, compute {p.get('compute_tflops', 0):.1f} TFLOP/s, {p.get('sms')} SMs)")
        for k in p.get("kernels", []):
            rate = f"{k['tflops']:7.2f} TFLOP/s" if k["bound"] == "compute" else f"{k['gbps']:7.0f} GB/s"
            print(f"  {k['name']:<40} {k['ms'] * 1e3:9.1f} µs  {rate}  {100 * k['of_ceiling']:5.1f}% of {k['bound']:<7}"
                  f" blocks {k.get('blocks')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
