#!/usr/bin/env python3
"""The environment of a GPU run, captured first (tests/gpu/gpu-run.sh), before anything
warms the GPU: what nvidia-smi says (name, driver, performance state, SM clock now and
at most, PCIe generation and width now and at most, MIG mode, persistence), PyTorch and
the CUDA it was built with, our doctor's report (which libcuda, NVRTC and cuBLAS our
binary loaded, from where, and their versions), and which NVIDIA libraries PyTorch's
process maps. Nothing here launches a kernel.

    python3 env_capture.py --gpulab PATH --out environment.json
    python3 env_capture.py --wheel-paths   # NVIDIA pip wheels' lib and include folders

Standard library only; each part that fails is recorded with its error, never fatal.
"""

import argparse
import json
import os
import pathlib
import platform
import shutil
import site
import subprocess
import sys
import time

SMI_FIELDS = [
    "name", "uuid", "driver_version", "pstate", "clocks.sm", "clocks.max.sm",
    "clocks.mem", "clocks.max.mem", "pcie.link.gen.current", "pcie.link.gen.max",
    "pcie.link.width.current", "pcie.link.width.max", "mig.mode.current",
    "persistence_mode", "memory.total", "memory.used", "temperature.gpu",
    "power.draw", "compute_cap",
]


def wheel_paths():
    """Folders of NVIDIA pip wheels: lib folders, then folders holding cuda_fp16.h."""
    roots = [pathlib.Path(p) for p in sys.path + site.getsitepackages() if p.endswith("-packages")]
    libs, includes = set(), set()
    for root in roots:
        for lib in (root / "nvidia").glob("**/lib"):
            libs.add(str(lib))
        for header in (root / "nvidia").glob("**/include/cuda_fp16.h"):
            includes.add(str(header.parent))
    return sorted(libs), sorted(includes)


def run(command, timeout=30):
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[:500]}")
    return done.stdout


def parse_smi(text, fields):
    """One dict per GPU from `nvidia-smi --query-gpu=… --format=csv,noheader`."""
    gpus = []
    for line in text.strip().splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(fields):
            gpus.append(dict(zip(fields, values)))
    return gpus


def nvidia_smi():
    if not shutil.which("nvidia-smi"):
        return {"error": "nvidia-smi is not on PATH"}
    query = ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"]
    try:
        return {"gpus": parse_smi(run(query), SMI_FIELDS)}
    except (RuntimeError, subprocess.TimeoutExpired):
        # An older nvidia-smi refuses the whole query for one unknown field: ask one by one.
        gpus, unknown = [], []
        for field in SMI_FIELDS:
            try:
                values = [v.strip() for v in run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"]).strip().splitlines()]
            except (RuntimeError, subprocess.TimeoutExpired):
                unknown.append(field)
                continue
            while len(gpus) < len(values):
                gpus.append({})
            for gpu, value in zip(gpus, values):
                gpu[field] = value
        return {"gpus": gpus, "fields_not_known_to_this_nvidia_smi": unknown}


def torch_side():
    try:
        import torch
    except ImportError as error:
        return {"error": f"no torch: {error}"}
    info = {"version": torch.__version__, "cuda": torch.version.cuda}
    try:
        info["cuda_available"] = torch.cuda.is_available()
        if info["cuda_available"]:
            info["device_name"] = torch.cuda.get_device_name(0)
            info["capability"] = list(torch.cuda.get_device_capability(0))
    except Exception as error:  # noqa: BLE001 (recorded, not fatal)
        info["error"] = str(error)
    info["nvidia_libraries_mapped"] = mapped_nvidia_libraries()
    return info


def mapped_nvidia_libraries():
    """NVIDIA libraries this process has mapped, from /proc/self/maps."""
    wanted = ("libcuda", "libnvrtc", "libcublas", "libcudart", "libnvidia-ml")
    found = set()
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split()[-1]
                if any(pathlib.Path(path).name.startswith(w) for w in wanted):
                    found.add(path)
    except OSError:
        pass
    return sorted(found)


def ours(gpulab):
    try:
        report = json.loads(run([gpulab, "doctor", "--json"], timeout=60))
    except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
        return {"error": str(error)}
    return {"version": run([gpulab, "--version"]).strip(), "doctor": report}


def capture(gpulab):
    libs, includes = wheel_paths()
    return {
        "captured_at_unix": int(time.time()),
        "host": {"name": platform.node(), "machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "nvidia_smi": nvidia_smi(),
        "torch": torch_side(),
        "ours": ours(gpulab),
        "loader": {
            "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", ""),
            "GPULAB_CUDA_INCLUDE": os.environ.get("GPULAB_CUDA_INCLUDE", ""),
            "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "wheel_libs": libs,
            "wheel_includes": includes,
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel-paths", action="store_true")
    parser.add_argument("--gpulab")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    if args.wheel_paths:
        libs, includes = wheel_paths()
        print(":".join(libs))
        print(":".join(includes))
        return 0
    if not (args.gpulab and args.out):
        parser.error("--gpulab and --out are needed")
    env = capture(args.gpulab)
    args.out.write_text(json.dumps(env, indent=2) + "\n", encoding="utf-8")
    smi = env["nvidia_smi"].get("gpus") or [{}]
    print(f"nvidia-smi: {smi[0] or env['nvidia_smi']}")
    print(f"torch: {env['torch']}")
    doctor = env["ours"].get("doctor", {})
    for layer in doctor.get("layers", []):
        print(f"ours: {layer['name']}: {layer['status']}: {layer['detail']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
