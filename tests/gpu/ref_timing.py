"""How reference.py times PyTorch, written to match server/measure.rs and server/gpu/timer.rs.

Our experiments run each measurement through one loop: untimed warm-ups, then timed
repetitions, each between a clock's start and stop, summarised as median, min and max.
The same loop is here with the same clocks: the host clock for CPU work, and CUDA
events on the current stream for GPU work (like our EventClock).
"""

import statistics
import time

# Our experiments' REPS constants all use one untimed warm-up (matmul.rs, transfer.rs,
# precision.rs); the number of timed samples is read from each summary in our JSON.
WARMUPS = 1


def summary(samples):
    """Median, min, max and count of `samples`, as in measure::summarize."""
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": len(samples),
    }


class HostClock:
    """Milliseconds on the host's monotonic clock, for work that runs on this thread."""

    def start(self):
        self._t = time.perf_counter()

    def stop(self):
        return (time.perf_counter() - self._t) * 1e3


class EventClock:
    """Milliseconds between two CUDA events recorded on the current stream."""

    def __init__(self, torch):
        self._begin = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def start(self):
        self._begin.record()

    def stop(self):
        self._end.record()
        self._end.synchronize()
        return self._begin.elapsed_time(self._end)


def repeat(clock, timed, work, warmups=WARMUPS):
    """Runs `work` `warmups` times untimed, then `timed` times each timed by `clock`."""
    for _ in range(warmups):
        work()
    samples = []
    for _ in range(max(1, timed)):
        clock.start()
        work()
        samples.append(clock.stop())
    return summary(samples)


def clock_for(torch, device):
    """The clock our experiments use on `device`: CUDA events on a GPU, the host clock
    on the CPU."""
    return HostClock() if device == "cpu" else EventClock(torch)


_measured = {}


def remember(key, measure):
    """`measure()` the first time `key` is asked for, the same answer after: a baseline
    document (reference.py --baseline) is compared with the very same reference run."""
    if key not in _measured:
        _measured[key] = measure()
    return _measured[key]
