"""The allocator playground's sequences in PyTorch, figure by figure.

Runs every sequence of a JSON file (tests/gpu/allocator_sequences.json) with
`torch.empty(bytes, dtype=torch.uint8, device="cuda")`, `del`, and
`torch.cuda.empty_cache()`, and records `torch.cuda.memory_allocated()` and
`torch.cuda.memory_reserved()` after each step (or that the step raised
`torch.OutOfMemoryError`). Each sequence runs in a fresh Python process with its
`conf` in PYTORCH_CUDA_ALLOC_CONF (options such as max_split_size_mb cannot be unset in
a running process), its `limit_mib` applied with `torch.cuda.set_per_process_memory_fraction` (PyTorch's
`allowed_memory_maximum`, the check in `alloc_block`).

    python ref_allocator.py SEQUENCES.json [--out torch.json] [--compare model.json]

`--compare` takes `gpulab allocator-model SEQUENCES.json` output and prints one row per
step, PyTorch against the model; the exit status is 1 if any figure differs. Without a
CUDA device the script says so and exits 2: these figures exist only on a GPU.
"""

import argparse
import json
import os
import subprocess
import sys

MIB = 1 << 20


def run_sequence(torch, seq):
    """The figures of one sequence: [{allocated, reserved, oom}] per step."""
    conf = seq.get("conf", "")
    if os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") != conf:
        raise SystemExit(f"{seq['name']}: run with PYTORCH_CUDA_ALLOC_CONF={conf!r}")
    total = torch.cuda.get_device_properties(0).total_memory
    limit = seq.get("limit_mib")
    # A few bytes over the limit, so that float rounding never cuts it below.
    fraction = 1.0 if limit is None else min(1.0, (limit * MIB + 4096) / total)
    torch.cuda.set_per_process_memory_fraction(fraction, 0)
    start = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
    if start != (0, 0):
        raise SystemExit(f"{seq['name']}: allocator not empty at the start: {start}")
    tensors, figures = {}, []
    for step in seq["steps"]:
        op, oom = step[0], False
        if op == "alloc":
            try:
                tensors[step[1]] = torch.empty(step[2], dtype=torch.uint8, device="cuda")
            except torch.OutOfMemoryError:
                oom = True
        elif op == "free":
            del tensors[step[1]]
        elif op == "empty_cache":
            torch.cuda.empty_cache()
        else:
            raise SystemExit(f"{seq['name']}: not a step: {step}")
        figures.append(
            {
                "allocated": None if oom else torch.cuda.memory_allocated(),
                "reserved": None if oom else torch.cuda.memory_reserved(),
                "oom": oom,
            }
        )
    return {"name": seq["name"], "conf": conf, "limit_mib": limit, "figures": figures}


def fmt(f):
    if f["oom"]:
        return "OOM"
    return f"{f['allocated'] / MIB:.3f}/{f['reserved'] / MIB:.3f}"


def compare(ours, theirs, sequences):
    """Prints PyTorch against the model per step; returns the number of mismatches."""
    model = {s["name"]: s["figures"] for s in ours["sequences"]}
    bad = 0
    print(f"{'sequence':<50} {'step':<28} {'PyTorch MiB':>18} {'model MiB':>18}  same")
    for seq, result in zip(sequences, theirs):
        mine = model.get(seq["name"])
        for i, step in enumerate(seq["steps"]):
            t = result["figures"][i]
            m = mine[i] if mine and i < len(mine) else None
            same = m is not None and all(m[k] == t[k] for k in ("allocated", "reserved", "oom"))
            bad += not same
            label = " ".join(str(x) for x in step)
            print(f"{seq['name']:<50} {label:<28} {fmt(t):>18} {fmt(m) if m else '—':>18}  {'yes' if same else 'NO'}")
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sequences")
    parser.add_argument("--out", help="write PyTorch's figures here as JSON")
    parser.add_argument("--compare", help="gpulab allocator-model output to compare with")
    parser.add_argument("--only", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    with open(args.sequences) as f:
        sequences = json.load(f)["sequences"]
    import torch

    if not torch.cuda.is_available():
        print(
            "ref_allocator.py: no CUDA GPU here, so there is no caching allocator to compare "
            "with (torch.cuda.is_available() is False); run it on a GPU machine.",
            file=sys.stderr,
        )
        return 2
    if args.only is not None:
        # The child: one sequence in this fresh process, its figures on stdout.
        json.dump(run_sequence(torch, sequences[args.only]), sys.stdout)
        return 0
    results = []
    for i, seq in enumerate(sequences):
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=seq.get("conf", ""))
        child = subprocess.run(
            [sys.executable, __file__, args.sequences, "--only", str(i)],
            env=env, capture_output=True, text=True, check=False,
        )
        if child.returncode != 0:
            print(child.stderr, file=sys.stderr)
            raise SystemExit(f"{seq['name']}: the PyTorch run failed")
        results.append(json.loads(child.stdout))
    out = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "sequences": results,
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            ours = json.load(f)
        bad = compare(ours, results, sequences)
        print(f"\n{bad} figure(s) differ" if bad else "\nevery figure agrees")
        return 1 if bad else 0
    json.dump(out, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
