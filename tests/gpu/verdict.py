#!/usr/bin/env python3
"""The verdict of a GPU run (tests/gpu/gpu-run.sh): from the steps it ran, our results
against PyTorch's on the same device, and the cold and warm calibration probes, one
word — PASS, FAIL or INCOMPLETE — with every step and every numeric gate behind it.

    python3 verdict.py --work DIR --out DIR --mode gpu|cpu [--quick 0|1] [--started UNIX]
        writes OUT/verdict.json and OUT/summary.txt (called after every step)
    python3 verdict.py --check DIR [--max-files 8]
        checks a finished run's folder: at most 8 files, the names the runner writes,
        verdict.json in its format; exit 1 with the reasons otherwise (CI runs this)
    python3 verdict.py --assemble-quick PARTS --version "gpulab X"
        prints --quick's bench document from its parts

The numeric gates (GPU runs only; ratio = ours ÷ PyTorch on the same device):
  pinned copies of at least 256 MiB     0.90–1.10 × PyTorch's GB/s
  pageable copies of at least 256 MiB   0.75–1.33 × PyTorch's GB/s
  GEMMs at n ≥ 1024, per format         0.85–1.18 × torch.matmul's time
  each format's largest error           ≤ 4 × torch's (against the same FP64 product)
  training, eager step time             0.5–2.0 × (reported: outside it is a warning)
  launch chains of ≥ 100 kernels        graph replay wall time 0.5–2.0 × torch.cuda.CUDAGraph's;
                                        eager wall time at most 2 × torch eager's (ours has no
                                        Python in the loop); both reported: outside is a warning
  tuning labs (reported)                each lab's known-good reference reaches the lab's
                                        nominal speed-up over its baseline on the pessimistic
                                        quartiles (Q1 ÷ Q3), fits the memory lab's budget, and
                                        keeps the mixed-precision lab's loss within its 2%
  the loss-curve checks                 pass
  our doctor                            every layer ok ("7/7")
  calibration, cold against warm        each converged (±10% of its target), and the timing
                                        trap's per-kernel time and the streams experiment's
                                        compute/copy ratio within ±10% between the passes
Standard library only: it runs wherever the pack runs.
"""

import argparse
import json
import pathlib
import sys
import tarfile
import time

FORMAT = "gpulab-gpu-run/1"
FILES = ["summary.txt", "verdict.json", "environment.json", "ours.json", "comparison.md",
         "comparison.json", "recorded-run.json", "logs.tar.gz"]
VERDICTS = ("PASS", "FAIL", "INCOMPLETE")
STEP_STATUSES = ("ok", "failed", "timeout", "skipped")
GATE_STATUSES = ("pass", "fail", "warn", "n/a")
MIB = 1 << 20
# Steps a run needs, per mode; an optional one that is missing does not fail the run.
REQUIRED = {
    "gpu": ["environment", "cold-probes", "doctor", "backend", "selftest", "injected-fallback",
            "bench", "reference", "recorded-run", "allocator", "labs", "packed-binary", "gpu-tests",
            "warm-probes"],
    "cpu": ["environment", "cold-probes", "doctor", "backend", "selftest", "bench", "reference",
            "recorded-run", "allocator", "labs", "packed-binary", "gpu-tests", "warm-probes"],
}
# Steps that are allowed to be skipped in a mode (with the runner's reason).
SKIPPABLE = {"gpu": set(), "cpu": {"injected-fallback"}}


def read_steps(path):
    """steps.tsv (name, status, seconds, exit, detail per line) as dicts."""
    steps = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 4:
                name, status, seconds, code = parts[:4]
                detail = parts[4] if len(parts) > 4 else ""
                steps.append({"name": name, "status": status, "seconds": float(seconds or 0),
                              "exit": None if code in ("", "-") else int(code), "detail": detail})
    return steps


def gate(name, value, low, high, detail, failing="fail"):
    """A ratio gate: pass inside [low, high], else `failing` (fail, or warn when reported)."""
    if value is None:
        return {"name": name, "status": "fail" if failing == "fail" else "warn", "value": None,
                "low": low, "high": high, "detail": f"not measured: {detail}"}
    inside = low <= value <= high
    return {"name": name, "status": "pass" if inside else failing, "value": round(value, 4),
            "low": low, "high": high, "detail": detail}


def ratio_gates(comparison):
    """The numeric gates over comparison.json's rows and checks (a GPU run's)."""
    gates = []
    for row in comparison.get("rows", []):
        d, ratio, case = row.get("detail") or {}, row.get("ratio"), row.get("case", "")
        if row.get("status") == "n/a" or row.get("reference", "torch") != "torch":
            continue
        if row["experiment"] == "transfer" and d.get("bytes", 0) >= 256 * MIB and d.get("device") != "cpu":
            low, high = (0.9, 1.1) if d.get("memory") == "pinned" else (0.75, 1.33)
            gates.append(gate(f"transfer {case}", ratio, low, high, "ours ÷ torch, GB/s"))
        elif row["experiment"] in ("matmul", "precision") and d.get("where") not in ("cpu", "gpu+copy") \
                and d.get("size", 0) >= 1024:
            gates.append(gate(f"{row['experiment']} {case}", ratio, 0.85, 1.18, "ours ÷ torch.matmul, ms"))
        if row["experiment"] == "precision" and d.get("ours_error") is not None and d.get("where") != "cpu":
            ours, theirs = d["ours_error"], d.get("theirs_error")
            bound = 4 * theirs if theirs else None
            ok = bound is not None and ours <= bound
            gates.append({"name": f"precision error {case}", "status": "pass" if ok else "fail",
                          "value": ours, "low": 0, "high": bound,
                          "detail": f"largest relative error vs FP64: ours {ours:.2e}, torch {theirs:.2e}"
                          if theirs is not None else "torch's error is missing"})
        if row["experiment"] == "training" and d.get("mode") == "eager" and d.get("where") != "cpu":
            gates.append(gate(f"training {case}", ratio, 0.5, 2.0, "ours ÷ torch eager, ms/step (reported)", "warn"))
        if row["experiment"] == "launch" and d.get("kernels", 0) >= 100 and d.get("device") != "cpu":
            if d.get("way") == "graph":
                gates.append(gate(f"launch {case}", ratio, 0.5, 2.0, "ours ÷ torch.cuda.CUDAGraph replay, µs (reported)", "warn"))
            elif d.get("way") == "eager":
                gates.append(gate(f"launch {case}", ratio, 0.0, 2.0, "ours ÷ torch eager ops, µs (reported)", "warn"))
    for check in comparison.get("checks", []):
        gates.append({"name": check["name"], "status": "pass" if check["passed"] else "fail",
                      "value": None, "low": None, "high": None, "detail": check["detail"]})
    return gates


def doctor_gate(environment):
    """Every layer of our doctor ok (its report is in environment.json), as "7/7". An
    advisory layer (NVML: the GPU serves without it) that fails is a warning."""
    layers = ((environment or {}).get("ours") or {}).get("doctor", {}).get("layers", [])
    ok = sum(1 for layer in layers if layer.get("status") == "ok")
    bad = [layer for layer in layers if layer.get("status") != "ok"]
    status = "pass" if layers and not bad else "fail"
    if layers and bad and all(layer.get("advisory") for layer in bad):
        status = "warn"
    detail = "; ".join(f"{layer.get('name')}: {layer.get('detail', '')}" for layer in bad)
    return {"name": "doctor layers ok", "status": status, "value": f"{ok}/{len(layers)}", "low": None,
            "high": None, "detail": detail or ("every layer ok" if layers else "no doctor report")}


def probe_figures(logs, when):
    """The calibration figures of one probe pass (cold or warm), or None if absent: the
    timing trap's achieved per-kernel time (older builds: its device time), the streams
    experiment's compute/copy ratio, and whether each calibration converged."""
    figures = {}

    def result_of(name):
        try:
            document = json.loads((logs / f"{when}-{name}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return document.get("result", document) if isinstance(document, dict) else None

    timing = result_of("timing")
    if timing:
        value = timing.get("kernel_ms", timing.get("device_ms"))
        if isinstance(value, (int, float)):
            figures["timing_kernel_ms"] = value
        if isinstance(timing.get("calibration"), dict):
            figures["timing_converged"] = bool(timing["calibration"].get("converged"))
    streams = result_of("streams")
    if streams:
        ratio = streams.get("compute_copy_ratio")
        if ratio is None and streams.get("copy_ms"):
            ratio = streams.get("compute_ms", 0) / streams["copy_ms"]
        if isinstance(ratio, (int, float)):
            figures["streams_compute_over_copy"] = ratio
        if isinstance(streams.get("calibration"), dict):
            figures["streams_converged"] = bool(streams["calibration"].get("converged"))
    return figures or None


def calibration(logs, mode):
    """Cold and warm figures, and gates saying whether the calibration held between them."""
    cold, warm = probe_figures(logs, "cold"), probe_figures(logs, "warm")
    gates = []
    failing = "fail" if mode == "gpu" else "warn"
    for when, figures in (("cold", cold), ("warm", warm)):
        for key in sorted(k for k in (figures or {}) if k.endswith("_converged")):
            gates.append({"name": f"calibration converged: {key.removesuffix('_converged')} ({when})",
                          "status": "pass" if figures[key] else failing, "value": figures[key],
                          "low": None, "high": None, "detail": "within ±10% of its target after warming up"})
    if cold and warm:
        for key in sorted(k for k in set(cold) & set(warm) if not k.endswith("_converged")):
            ratio = warm[key] / cold[key] if cold[key] else None
            gates.append(gate(f"calibration holds: {key} warm ÷ cold", ratio, 0.9, 1.1,
                              f"cold {cold[key]:.4g}, warm {warm[key]:.4g}", failing))
    return {"cold": cold, "warm": warm}, gates


LABS = ("feed-the-gpu", "stop-waiting", "fit-the-budget", "mixed-precision", "slow-loop-doctor")


def lab_figures(logs):
    """Each tuning lab's run (logs/lab-NAME.json, `gpulab bench lab --json`): the baseline's
    and the known-good reference's samples/s medians, the reference's gain (median, and
    the pessimistic Q1 ÷ Q3), its peak reserved memory against the baseline's, and the
    final losses. Labs that did not run are left out."""
    out = []
    for name in LABS:
        document = load_json(logs / f"lab-{name}.json")
        result = document.get("result", document) if isinstance(document, dict) else None
        if not isinstance(result, dict) or "baseline" not in result:
            continue
        base, ref = result["baseline"], result["reference"]
        b, r = base.get("samples_per_sec") or {}, ref.get("samples_per_sec") or {}
        pessimistic = r["q1"] / b["q3"] if b.get("q3") and r.get("q1") is not None else None
        out.append({
            "lab": name,
            "backend": result.get("backend"),
            "baseline_samples_per_s": b.get("median"),
            "reference_samples_per_s": r.get("median"),
            "reference_gain": r["median"] / b["median"] if b.get("median") and r.get("median") else None,
            "reference_gain_pessimistic": pessimistic,
            "nominal_speedup": result.get("nominal_speedup"),
            "baseline_peak_reserved": (base.get("memory") or {}).get("peak_reserved"),
            "reference_peak_reserved": (ref.get("memory") or {}).get("peak_reserved"),
            "baseline_final_loss": base.get("final_loss"),
            "reference_final_loss": ref.get("final_loss"),
        })
    return out


def lab_gates(labs):
    """Whether each lab's known-good reference meets the lab's own goals on this GPU
    (reported: a lab whose reference misses them needs its targets or knobs revisited)."""
    gates = []
    for lab in labs:
        name = lab["lab"]
        if lab["nominal_speedup"]:
            gates.append(gate(f"lab {name}: reference speed-up", lab["reference_gain_pessimistic"],
                              lab["nominal_speedup"], float("inf"),
                              "reference Q1 ÷ baseline Q3, samples/s, against the lab's nominal target", "warn"))
        if name == "fit-the-budget":
            base, ref = lab["baseline_peak_reserved"], lab["reference_peak_reserved"]
            gates.append(gate(f"lab {name}: reference memory", ref / base if base and ref is not None else None,
                              0.0, 0.6, "reference ÷ baseline peak reserved (allocator model)", "warn"))
        if name == "mixed-precision":
            base, ref = lab["baseline_final_loss"], lab["reference_final_loss"]
            gap = abs(ref - base) / abs(base) if base and ref is not None else None
            gates.append(gate(f"lab {name}: reference loss", gap, 0.0, 0.02,
                              "BF16 final loss apart from FP32's, relative", "warn"))
    return gates


def decide(steps, gates, mode):
    """PASS, FAIL or INCOMPLETE, and the reasons. A step that failed, timed out or was
    skipped for a reason other than the budget fails the run; one skipped because the
    budget ran out, or not run at all, leaves it incomplete."""
    reasons, failed, late = [], False, False
    for s in steps:
        if s["status"] in ("failed", "timeout"):
            failed = True
            reasons.append(f"step {s['name']} {s['status']}: {s['detail']}".rstrip(": "))
        elif s["status"] == "skipped" and s["name"] not in SKIPPABLE[mode]:
            out_of_time = "out of time" in s["detail"]
            late, failed = late or out_of_time, failed or not out_of_time
            reasons.append(f"step {s['name']} skipped: {s['detail']}")
    ran = {s["name"] for s in steps}
    missing = [n for n in REQUIRED[mode] if n not in ran]
    if missing:
        late = True
        reasons.append(f"not run (yet): {', '.join(missing)}")
    failed_gates = [g for g in gates if g["status"] == "fail"]
    reasons += [f"gate {g['name']}: {g['value']} outside {g['low']}–{g['high']} ({g['detail']})" for g in failed_gates]
    if failed or failed_gates:
        return "FAIL", reasons
    return ("INCOMPLETE" if late else "PASS"), reasons


def load_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def build(work, out, mode, quick, started):
    steps = read_steps(work / "steps.tsv")
    comparison = load_json(out / "comparison.json") or {}
    gates = ratio_gates(comparison) if mode == "gpu" else []
    if mode == "gpu" and (out / "environment.json").exists():
        gates.insert(0, doctor_gate(load_json(out / "environment.json")))
    probes, calibration_gates = calibration(work / "logs", mode)
    gates += calibration_gates
    labs = lab_figures(work / "logs")
    if mode == "gpu":
        gates += lab_gates(labs)
    word, reasons = decide(steps, gates, mode)
    ours = load_json(out / "ours.json") or {}
    device = ours.get("device", {})
    return {
        "format": FORMAT,
        "verdict": word,
        "mode": mode,
        "quick": bool(quick),
        "device": {k: device.get(k) for k in ("kind", "name", "driver_version") if k in device},
        "started_at_unix": started,
        "written_at_unix": int(time.time()),
        "elapsed_s": round(time.time() - started, 1) if started else None,
        "reasons": reasons,
        "steps": steps,
        "gates": gates,
        "calibration": probes,
        "labs": labs,
        "table": [{k: r.get(k) for k in ("experiment", "case", "unit", "ours", "theirs", "ratio", "verdict")}
                  for r in comparison.get("rows", [])],
    }


def summary_text(v):
    lines = [f"GPU run: {v['verdict']} ({v['mode']}{', quick' if v['quick'] else ''}; "
             f"{v['device'].get('name', 'device unknown')}; {v['elapsed_s']} s)", "", "steps:"]
    lines += [f"  {s['status']:<8} {s['name']:<18} {s['seconds']:>6.1f} s  {s['detail']}".rstrip() for s in v["steps"]]
    if v["gates"]:
        lines += ["", "gates:"]
        lines += [f"  {g['status']:<5} {g['name']}: {g['value']} in [{g['low']}, {g['high']}]  {g['detail']}" for g in v["gates"]]
    if v["calibration"]["cold"] or v["calibration"]["warm"]:
        lines += ["", f"calibration: cold {v['calibration']['cold']}, warm {v['calibration']['warm']}"]
    if v.get("labs"):
        lines += ["", "tuning labs, baseline → known-good reference (samples/s medians):"]
        for lab in v["labs"]:
            gain = lab["reference_gain"]
            lines.append(f"  {lab['lab']:<17} {lab['baseline_samples_per_s'] or 0:>12,.0f} → "
                         f"{lab['reference_samples_per_s'] or 0:>12,.0f}  "
                         + (f"{gain:.2f}×" if isinstance(gain, (int, float)) else "n/a")
                         + (f" (nominal {lab['nominal_speedup']}×)" if lab["nominal_speedup"] else "")
                         + f"  on {lab['backend']}")
    if v["table"]:
        lines += ["", "ours against PyTorch (ratio = ours ÷ torch):"]
        for r in v["table"]:
            ratio = f"{r['ratio']:.3f}" if isinstance(r["ratio"], (int, float)) else "n/a"
            lines.append(f"  {r['experiment']:<9} {r['case']:<40} {r['unit']:<8} {ratio:>7}  {r['verdict']}")
    if v["reasons"]:
        lines += ["", "why:"] + [f"  - {r}" for r in v["reasons"]]
    return "\n".join(lines) + "\n"


def check_out(folder, max_files):
    """Problems with a finished run's folder (empty when it is fine)."""
    problems = []
    names = sorted(p.name for p in folder.iterdir())
    if len(names) > max_files:
        problems.append(f"{len(names)} files, more than {max_files}: {names}")
    problems += [f"unexpected file {n}" for n in names if n not in FILES]
    if (folder / "logs.tar.gz").exists():
        try:
            with tarfile.open(folder / "logs.tar.gz") as archive:
                if not any(m.name.startswith("logs/") for m in archive.getmembers()):
                    problems.append("logs.tar.gz holds no logs/")
        except (tarfile.TarError, OSError) as error:
            problems.append(f"logs.tar.gz does not open: {error}")
    else:
        problems.append("logs.tar.gz is missing")
    v = load_json(folder / "verdict.json")
    if v is None:
        return problems + ["verdict.json is missing or not JSON"]
    if v.get("format") != FORMAT:
        problems.append(f"verdict.json format {v.get('format')!r}, expected {FORMAT!r}")
    if v.get("verdict") not in VERDICTS:
        problems.append(f"verdict {v.get('verdict')!r} is not one of {VERDICTS}")
    for s in v.get("steps", []):
        if s.get("status") not in STEP_STATUSES or not s.get("name"):
            problems.append(f"bad step {s}")
    for g in v.get("gates", []):
        if g.get("status") not in GATE_STATUSES:
            problems.append(f"bad gate {g}")
    if not (folder / "summary.txt").exists() or v.get("verdict", "?") not in (folder / "summary.txt").read_text(encoding="utf-8"):
        problems.append("summary.txt is missing or does not state the verdict")
    return problems


def assemble_quick(parts, version):
    load = lambda name: json.loads((parts / f"{name}.json").read_text(encoding="utf-8"))  # noqa: E731
    return {
        "gpulab_version": version.split()[-1],
        "generated_at_unix": int(time.time()),
        "device": load("device"),
        "reduced": "tests/gpu/gpu-run.sh --quick",
        "experiments": [{"name": n, "result": load(n)} for n in ("matmul", "transfer", "training", "precision", "launch")],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--mode", choices=["gpu", "cpu"])
    parser.add_argument("--quick", type=int, default=0)
    parser.add_argument("--started", type=int, default=0)
    parser.add_argument("--check", type=pathlib.Path)
    parser.add_argument("--max-files", type=int, default=8)
    parser.add_argument("--assemble-quick", type=pathlib.Path)
    parser.add_argument("--version", default="gpulab ?")
    args = parser.parse_args()
    if args.check:
        problems = check_out(args.check, args.max_files)
        for p in problems:
            print(f"verdict.py --check: {p}", file=sys.stderr)
        if not problems:
            v = load_json(args.check / "verdict.json")
            print(f"verdict.py --check: {args.check}: {len(list(args.check.iterdir()))} files, verdict {v['verdict']}")
        return 1 if problems else 0
    if args.assemble_quick:
        print(json.dumps(assemble_quick(args.assemble_quick, args.version), indent=2))
        return 0
    if not (args.work and args.out and args.mode):
        parser.error("--work, --out and --mode are needed (or --check / --assemble-quick)")
    v = build(args.work, args.out, args.mode, args.quick, args.started)
    (args.out / "verdict.json").write_text(json.dumps(v, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / "summary.txt").write_text(summary_text(v), encoding="utf-8")
    print(f"verdict: {v['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
