#!/usr/bin/env python3
"""Our measurements against the same measurements in PyTorch, on the same device, in
the same run: the last step of tests/gpu/device-run.sh (and of tests/gpu/cpu-reference.sh).

    python3 reference.py OURS.json [--out DIR] [--numpy] [--no-compile]
                         [--baseline LABEL=OTHER.json ...]

OURS.json is `gpulab bench all --json` (or a document of the same shape: `device` and
`experiments`, each with `name` and `result`). Every size, repetition count and setting
compared is read from it, so a reduced run compares reduced sizes. PyTorch runs on the
device our backend used (`device.kind`: cuda → GPU 0, cpu → the CPU). Compared:
transfer (ref_transfer.py), matmul and precision (ref_matmul.py), training
(ref_training.py), launch (ref_launch.py: eager ops and torch.cuda.CUDAGraph); timing,
streams and break-it have no PyTorch counterpart here.

Prints the ratio table (ours ÷ reference; see ref_report.py for which way is better)
and writes comparison.md and comparison.json to DIR (default: $OUT, else
./reference-out). --numpy adds numpy's `a @ b` next to torch for CPU products.
--baseline adds the rows of another of our documents (e.g. an older build) against
the same reference measurements. Exit status 1 when a measurement failed or a check
(the training loss curves) did not pass; 2 for bad input.
"""

import argparse
import json
import os
import pathlib
import platform
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import ref_launch  # noqa: E402
import ref_matmul  # noqa: E402
import ref_report  # noqa: E402
import ref_training  # noqa: E402
import ref_transfer  # noqa: E402

NOT_COMPARED = ("timing", "streams", "break-it")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ours", type=pathlib.Path, help="gpulab bench all --json output")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(os.environ.get("OUT") or "reference-out"))
    parser.add_argument("--numpy", action="store_true", help="also time CPU products in numpy")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile training run")
    parser.add_argument("--baseline", action="append", default=[], metavar="LABEL=JSON")
    return parser.parse_args()


def load(path):
    document = json.loads(path.read_text(encoding="utf-8"))
    if "experiments" not in document or "device" not in document:
        sys.exit(f"reference.py: {path} is not a `gpulab bench all --json` document")
    return document


def torch_device(torch, document):
    """The device our backend used, as PyTorch names it."""
    kind = document["device"]["kind"]
    if kind == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        sys.exit("reference.py: our run used the GPU but PyTorch sees no CUDA device")
    torch.cuda.set_device(0)
    return "cuda"


def compare(torch, device, document, args):
    """Rows and checks for every experiment in `document` that has a counterpart."""
    rows, checks = [], []
    for entry in document["experiments"]:
        name, result = entry["name"], entry.get("result")
        if result is None:
            rows.append(ref_report.error_row(name, "our run", "-", "-", entry.get("error", "no result")))
        elif name == "transfer":
            rows += ref_transfer.measure(torch, device, result)
        elif name == "matmul":
            rows += ref_matmul.measure_matmul(torch, device, result, args.numpy)
        elif name == "precision":
            rows += ref_matmul.measure_precision(torch, device, result)
        elif name == "launch":
            rows += ref_launch.measure(torch, device, result)
        elif name == "training":
            more_rows, more_checks = ref_training.measure(torch, device, result, not args.no_compile)
            rows += more_rows
            checks += more_checks
    return rows, checks


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def environment(torch, device, document, baselines):
    env = {
        "ours": f"gpulab {document.get('gpulab_version', '?')} on {document['device']['name']} ({document['device']['kind']})",
        "torch": f"{torch.__version__} on {torch.cuda.get_device_name(0) if device == 'cuda' else 'CPU'}",
        "cuda (torch build)": str(torch.version.cuda),
        "host": f"{cpu_model()}, {os.cpu_count()} logical CPUs, torch threads {torch.get_num_threads()}",
        "python": platform.python_version(),
        "not compared": ", ".join(e["name"] for e in document["experiments"] if e["name"] in NOT_COMPARED) or "—",
    }
    try:
        import numpy
        from threadpoolctl import threadpool_info

        blas = [f"{i['internal_api']} {i.get('version')} {i.get('architecture', '')} ×{i['num_threads']}" for i in threadpool_info()]
        env["numpy"] = f"{numpy.__version__} ({'; '.join(blas) or 'BLAS not loaded yet'})"
    except ImportError:
        pass
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if variable in os.environ:
            env[variable] = os.environ[variable]
    for label, path in baselines:
        env[f"baseline {label}"] = str(path)
    return env


def borrow_training_setup(other, document):
    """Builds older than the training result's `setup` field ran the same model with the
    same constants: their training results get the current one (same optimiser)."""
    current = {
        e["result"]["params"]["optimizer"]: e["result"]["setup"]
        for e in document["experiments"]
        if e["name"] == "training" and "result" in e
    }
    for entry in other["experiments"]:
        result = entry.get("result") or {}
        if entry["name"] == "training" and "setup" not in result:
            result["setup"] = current[result["params"]["optimizer"]]


def main():
    args = parse_args()
    document = load(args.ours)
    baselines = []
    for spec in args.baseline:
        label, _, path = spec.partition("=")
        if not path:
            sys.exit("reference.py: --baseline wants LABEL=PATH")
        baselines.append((label, pathlib.Path(path)))
    import torch

    device = torch_device(torch, document)
    rows, checks = compare(torch, device, document, args)
    for label, path in baselines:
        other = load(path)
        if other["device"]["kind"] != document["device"]["kind"]:
            sys.exit(f"reference.py: baseline {label} ran on another backend")
        borrow_training_setup(other, document)
        more_rows, more_checks = compare(torch, device, other, args)
        for row in more_rows:
            row["case"] = f"[{label}] {row['case']}"
        rows += more_rows
        checks += [dict(c, name=f"[{label}] {c['name']}") for c in more_checks]
    if args.numpy:
        import numpy  # noqa: F401  (loaded, so threadpoolctl reports its BLAS)
    env = environment(torch, device, document, baselines)
    args.out.mkdir(parents=True, exist_ok=True)
    ref_report.write(args.out, rows, env, checks)
    print("\n".join(f"{k}: {v}" for k, v in env.items()))
    print()
    print(ref_report.terminal(rows))
    for check in checks:
        print(f"{'PASS' if check['passed'] else 'FAIL'}  {check['name']}: {check['detail']}")
    failed = [r for r in rows if r["status"] == "error"] + [c for c in checks if not c["passed"]]
    print(f"\nwrote {args.out / 'comparison.md'} and {args.out / 'comparison.json'}")
    if failed:
        print(f"reference.py: {len(failed)} measurement(s) or check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
