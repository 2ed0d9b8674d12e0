"""Why pageable copies differ between ours and PyTorch's (issue 36 §3): PyTorch's own
pageable copies timed the way reference.py times them (CUDA events, one untimed
warm-up, median of 7), from host buffers that differ in one property at a time:

  torch          torch.ones (c10's CPU allocator: 64-byte aligned, faulted in)
  offset16       the same memory 16 bytes in (where malloc puts a large Vec<u8>)
  page           page-aligned anonymous mmap, faulted in
  page+thp       the same with madvise(MADV_HUGEPAGE)
  fresh          page-aligned mmap never touched before the copy (first touch in the copy)

It prints one table (GB/s per size, direction and buffer) and the machine's THP mode.
Runs only on a GPU; exits 0 without one (nothing to probe)."""

import mmap
import statistics
import sys

import torch

SIZES = [16 << 20, 64 << 20, 256 << 20, 1 << 30]
SAMPLES = 7


def timed(work):
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    work()
    torch.cuda.synchronize()
    samples = []
    for _ in range(SAMPLES):
        begin.record()
        work()
        end.record()
        end.synchronize()
        samples.append(begin.elapsed_time(end))
    return statistics.median(samples)


def mapped(n, huge=False, touch=True):
    region = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if huge and hasattr(mmap, "MADV_HUGEPAGE"):
        region.madvise(mmap.MADV_HUGEPAGE)
    tensor = torch.frombuffer(region, dtype=torch.uint8)
    if touch:
        tensor.fill_(1)
    return region, tensor


def main():
    if not torch.cuda.is_available():
        print("no GPU: nothing to probe")
        return 0
    try:
        thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    except OSError:
        thp = "unknown"
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, THP {thp}")
    device = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    print(f"{'bytes':>12} {'dir':>4} {'buffer':>9} {'GB/s':>7} {'address % 4096':>15}")
    for n in SIZES:
        base = torch.ones(n + 4096, dtype=torch.uint8)
        keep = []
        buffers = {"torch": base[:n], "offset16": base[16 : 16 + n]}
        region, buffers["page"] = mapped(n)
        keep.append(region)
        region, buffers["page+thp"] = mapped(n, huge=True)
        keep.append(region)
        for direction in ("h2d", "d2h"):
            for name, host in list(buffers.items()) + [("fresh", None)]:
                if host is None:
                    region, host = mapped(n, touch=False)
                    keep.append(region)
                    # first touch inside the first (untimed) copy; report the cold one too
                    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    if direction == "h2d":
                        device[:n].copy_(host)
                    else:
                        host.copy_(device[:n])
                    stop.record()
                    stop.synchronize()
                    cold = n / 1e9 / (start.elapsed_time(stop) / 1e3)
                    print(f"{n:>12} {direction:>4} {'fresh-1st':>9} {cold:>7.2f} {host.data_ptr() % 4096:>15}")
                if direction == "h2d":
                    ms = timed(lambda: device[:n].copy_(host))
                else:
                    ms = timed(lambda: host.copy_(device[:n]))
                print(f"{n:>12} {direction:>4} {name:>9} {n / 1e9 / (ms / 1e3):>7.2f} {host.data_ptr() % 4096:>15}")
        del buffers, keep, base
    return 0


if __name__ == "__main__":
    sys.exit(main())
