"""The launch experiment (server/experiments/launch/) in PyTorch.

For each chain length of our result (read from our JSON, with our repetition count),
the same shape of work in PyTorch on the same GPU: a chain of N tiny in-place
element-wise ops on a tensor of our element count (`x.mul_(0.999999)`: one kernel per
op, as our one-FMA step), run eagerly (one launch per op, through Python and the
dispatcher), and the same chain captured once with `torch.cuda.CUDAGraph` and replayed
(as in PyTorch's "CUDA Graphs" notes: warm-up on a side stream, capture under
`torch.cuda.graph`, `replay()`). Each is timed as our wall time: host clock from the
first call to the end of `torch.cuda.synchronize()`. The eager rows also give the host
time per launch call (the loop's time before synchronising, divided by N).

Ratio = ours ÷ torch, lower is better. Ours has no Python or dispatcher in the launch
path, so an eager ratio well below 1 is expected; the replay rows compare two CUDA
graphs of the same kernels. Our fused kernel has no counterpart here (that would be
torch.compile's code generation). On the CPU our backend hands tasks to a worker thread,
which PyTorch has no counterpart for: those rows are n/a.
"""

import statistics
import time

from ref_report import Row, na_row

WARMUPS = 2


def _wall_us(torch, run, reps):
    samples, submits = [], []
    for i in range(WARMUPS + reps):
        t0 = time.perf_counter()
        run()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if i >= WARMUPS:
            samples.append((t2 - t0) * 1e6)
            submits.append((t1 - t0) * 1e6)
    return statistics.median(samples), statistics.median(submits)


def measure(torch, device, result):
    """Rows for every chain length of our launch `result`."""
    if device == "cpu":
        return [na_row("launch", "chains", "µs", "lower",
                       "no GPU: our CPU stand-in hands tasks to a worker thread; PyTorch has no counterpart")]
    rows = []
    n = result["elements"]
    x = torch.ones(n, device=device)
    for point in result["points"]:
        k = point["kernels"]
        eager, graph = point["ways"][0], point["ways"][1]
        reps = eager["wall_us"]["samples"]

        def chain(k=k):
            for _ in range(k):
                x.mul_(0.999999)

        wall, submit = _wall_us(torch, chain, reps)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                chain()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            chain()
        replay_wall, _ = _wall_us(torch, g.replay, reps)
        del g
        detail = {"kernels": k, "elements": n, "device": device}
        rows.append(Row("launch", f"{k} × eager, wall", "µs", "lower", eager["wall_us"]["median"], wall,
                        "host clock to the end of synchronize; torch: x.mul_ per op", detail={**detail, "way": "eager"}))
        rows.append(Row("launch", f"{k} × eager, host per call", "µs", "lower",
                        eager["submit_us"]["median"] / k, submit / k,
                        "launch loop before synchronising ÷ N", detail={**detail, "way": "eager-call"}))
        rows.append(Row("launch", f"{k} × graph replay, wall", "µs", "lower", graph["wall_us"]["median"], replay_wall,
                        "torch.cuda.CUDAGraph.replay of the same chain", detail={**detail, "way": "graph"}))
    return rows
