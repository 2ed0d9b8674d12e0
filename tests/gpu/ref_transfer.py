"""The transfer experiment (server/experiments/transfer.rs) in PyTorch.

For every point of our sweep — direction, memory kind, bytes, and the number of
back-to-back copies timed as one sample, all read from our JSON — the same copies
with `Tensor.copy_`: pinned memory from `pin_memory=True` (page-locked, like our
cuMemHostAlloc buffer) copied with `non_blocking=True`, pageable memory with a plain
`copy_`; both timed with CUDA events on the current stream, as ours. GB = 1e9 bytes. On the CPU our backend measures
host-to-host memcpy, compared here with a CPU tensor `copy_`; host-device rows are n/a.
"""

from ref_report import Row, na_row
from ref_timing import clock_for, repeat

GPU_KINDS = [("h2d", "pinned"), ("d2h", "pinned"), ("h2d", "pageable"), ("d2h", "pageable")]


def _size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def measure(torch, device, result):
    """One row per point of our transfer `result`."""
    points = result["points"]
    largest = max(p["bytes"] for p in points)
    rows = []
    if device == "cpu":
        src = torch.ones(largest, dtype=torch.uint8)
        dst = torch.zeros(largest, dtype=torch.uint8)
        buffers = None
    else:
        dev = torch.empty(largest, dtype=torch.uint8, device=device)
        buffers = {
            "pinned": torch.ones(largest, dtype=torch.uint8, pin_memory=True),
            "pageable": torch.ones(largest, dtype=torch.uint8),
        }
    for p in points:
        n, copies = p["bytes"], p["copies"]
        case = f"{p['direction']} {p['memory']} {_size(n)} ×{copies}"
        if device == "cpu":
            def work(n=n, copies=copies):
                for _ in range(copies):
                    dst[:n].copy_(src[:n])

            ms = repeat(clock_for(torch, device), p["gbps"]["samples"], work)
            how = "CPU tensor copy_ vs our memcpy; small sizes mostly time PyTorch's per-call overhead"
        else:
            host = buffers[p["memory"]][:n]
            device_side = dev[:n]
            pinned = p["memory"] == "pinned"
            if p["direction"] == "h2d":

                def work(host=host, device_side=device_side, copies=copies, pinned=pinned):
                    for _ in range(copies):
                        device_side.copy_(host, non_blocking=pinned)
            else:

                def work(host=host, device_side=device_side, copies=copies, pinned=pinned):
                    for _ in range(copies):
                        host.copy_(device_side, non_blocking=pinned)

            ms = repeat(clock_for(torch, device), p["gbps"]["samples"], work)
            how = "CUDA events"
        gbps = n * copies / 1e9 / (ms["median"] / 1e3)
        detail = {"direction": p["direction"], "memory": p["memory"], "bytes": n, "device": device}
        rows.append(Row("transfer", case, "GB/s", "higher", p["gbps"]["median"], gbps, how, detail=detail))
    if device == "cpu":
        for direction, memory in GPU_KINDS:
            rows.append(
                na_row(
                    "transfer",
                    f"{direction} {memory}",
                    "GB/s",
                    "higher",
                    "no GPU: host↔device copies need a CUDA device; pageable vs pinned "
                    "is not meaningful on the CPU",
                )
            )
    return rows
