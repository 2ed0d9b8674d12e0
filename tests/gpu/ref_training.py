"""The training run (server/experiments/training/) in PyTorch, eager and torch.compile.

The same step as ours: Linear(features, hidden) → ReLU → Linear(hidden, classes),
mean cross-entropy, SGD or Adam with our learning rate and constants, batch `s` the
tickets s·batch … (wrapping; the data set is stored twice on the device so a batch is
one slice, as ours). Shapes, data set size and optimiser constants come from our
result's `params` and `setup`; the synthetic tickets and the initial weights are
rebuilt bit for bit with our xorshift generator (server/cpu.rs `random_matrix`, seeds
from server/experiments/training/model.rs), so the loss curves must agree: a curve that
does not is a failed check, a sign the two steps are not the same computation.

Step time as ours: on a GPU the median interval between CUDA events recorded after
each step; on the CPU the host clock around each step; the loss is read (`.item()`)
every `log_every` steps, between steps. torch.compile compiles the model (forward and
backward through AOTAutograd); the optimiser step stays eager. Its first step, which
compiles, is reported separately as the compile time and stays in the median.
"""

import time

import numpy

from ref_report import Row, error_row
from ref_timing import remember

SEEDS = {"x": 11, "teacher": 12, "w1": 21, "b1": 22, "w2": 23, "b2": 24}
# As tests/gpu.rs for FP32. Under BF16 our scheme (BF16 forward GEMMs, FP32 backward on
# rounded values) is not autocast's, so that curve is reported, not checked.
CURVE_TOLERANCE = {"fp32": 1e-3}
MASK = (1 << 64) - 1


def random_matrix(length, seed):
    """server/cpu.rs random_matrix: xorshift64, values in [-1, 1) as float32."""
    state = ((seed * 0x9E3779B97F4A7C15) & MASK) | 1
    out = numpy.empty(length, dtype=numpy.float64)
    for i in range(length):
        state ^= (state << 13) & MASK
        state ^= state >> 7
        state ^= (state << 17) & MASK
        out[i] = (state >> 40) / float(1 << 24) * 2.0 - 1.0
    return out.astype(numpy.float32)  # exact: each value has at most 24 significant bits


def tickets(setup):
    """Features (dataset × features) and teacher labels, as model.rs Tickets::generate."""
    d, f, c = setup["dataset"], setup["features"], setup["classes"]
    x = random_matrix(d * f, SEEDS["x"]).reshape(d, f)
    teacher = random_matrix(f * c, SEEDS["teacher"]).reshape(f, c)
    score = numpy.zeros((d, c), dtype=numpy.float32)
    for k in range(f):  # float32, summed in order, like Rust's iterator sum
        score += x[:, k : k + 1] * teacher[k]
    labels = c - 1 - numpy.argmax(score[:, ::-1], axis=1)  # ties go to the last, as max_by
    return x, labels


def initial_weights(setup, hidden):
    """Mlp::init: uniform(±1/√fan_in) from fixed seeds; w1 is features × hidden."""
    f, c = setup["features"], setup["classes"]

    def scaled(length, seed, fan_in):
        return random_matrix(length, seed) / numpy.sqrt(numpy.float32(fan_in))

    return (
        scaled(f * hidden, SEEDS["w1"], f).reshape(f, hidden),
        scaled(hidden, SEEDS["b1"], f),
        scaled(hidden * c, SEEDS["w2"], hidden).reshape(hidden, c),
        scaled(c, SEEDS["b2"], hidden),
    )


def _model(torch, setup, hidden, device):
    f, c = setup["features"], setup["classes"]
    model = torch.nn.Sequential(torch.nn.Linear(f, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, c))
    w1, b1, w2, b2 = initial_weights(setup, hidden)
    with torch.no_grad():
        for param, value in zip(model.parameters(), (w1.T, b1, w2.T, b2)):
            param.copy_(torch.from_numpy(numpy.ascontiguousarray(value)))
    return model.to(device)


def _optimizer(torch, params, setup, parameters):
    if params["optimizer"] == "sgd":
        return torch.optim.SGD(parameters, lr=setup["lr"])
    betas = (setup["adam_beta1"], setup["adam_beta2"])
    return torch.optim.Adam(parameters, lr=setup["lr"], betas=betas, eps=setup["adam_eps"])


def train(torch, device, params, setup, data, compiled):
    """Step times (ms), the loss curve at our logging steps, and the first step's time."""
    b, steps, log_every = params["batch"], params["steps"], params["log_every"]
    x, labels = data
    x_all = torch.from_numpy(numpy.concatenate([x, x])).to(device)
    y_all = torch.from_numpy(numpy.concatenate([labels, labels])).long().to(device)
    model = _model(torch, setup, params["hidden"], device)
    opt = _optimizer(torch, params, setup, model.parameters())
    forward = torch.compile(model) if compiled else model
    autocast = torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=params["precision"] == "bf16")
    gpu = device != "cpu"

    def step(s):
        first = (s * b) % setup["dataset"]
        with autocast:
            logits = forward(x_all[first : first + b])
        loss = torch.nn.functional.cross_entropy(logits.float(), y_all[first : first + b])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    curve, times, first_step_ms = [], [], None
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)] if gpu else None
    if gpu:
        torch.cuda.synchronize()
        marks[0].record()
    for s in range(steps):
        start = time.perf_counter()
        loss = step(s)
        if gpu:
            marks[s + 1].record()
        else:
            times.append((time.perf_counter() - start) * 1e3)
        if s == 0:
            if gpu:
                torch.cuda.synchronize()
            first_step_ms = (time.perf_counter() - start) * 1e3
        if (s + 1) % log_every == 0 or s + 1 == steps:
            curve.append((s + 1, loss.item()))
    if gpu:
        torch.cuda.synchronize()
        times = [marks[i].elapsed_time(marks[i + 1]) for i in range(steps)]
    return times, curve, first_step_ms


def curve_gap(ours, theirs):
    """Largest relative difference between our loss curve and theirs, step by step."""
    theirs = dict(theirs)
    if [p["step"] for p in ours] != sorted(theirs):
        return float("inf")
    return max(abs(theirs[p["step"]] - p["loss"]) / max(abs(p["loss"]), 1e-3) for p in ours)


def measure(torch, device, result, compile_too=True):
    """Rows for eager (and compiled) step time, and the loss-curve checks."""
    params, setup = result["params"], result["setup"]
    name = f"{params['precision']} {params['optimizer']} b={params['batch']} h={params['hidden']} ×{params['steps']}"
    data = tickets(setup)
    ours = result["step_ms"]["median"]
    rows, checks = [], []
    tolerance = CURVE_TOLERANCE.get(params["precision"])
    for compiled in [False, True] if compile_too else [False]:
        mode = "torch.compile" if compiled else "eager"
        case = f"{name} {mode}"
        try:
            times, curve, first_ms = remember(
                ("training", case), lambda: train(torch, device, params, setup, data, compiled)
            )
        except Exception as error:  # a failed compile must fail the run, with its reason
            rows.append(error_row("training", case, "ms/step", "lower", f"{type(error).__name__}: {error}"))
            continue
        gap = curve_gap(result["loss_curve"], curve)
        note = f"loss curves differ by ≤ {gap:.1e} " + (
            f"(tolerance {tolerance:.0e})" if tolerance else "(not checked: autocast is another BF16 scheme)"
        )
        if compiled:
            note += f"; first step (compiles) {first_ms / 1e3:.1f} s"
        detail = {"mode": mode, "where": device, "precision": params["precision"]}
        rows.append(Row("training", case, "ms/step", "lower", ours, float(numpy.median(times)), note, detail=detail))
        checks.append(
            {
                "name": f"training loss curve, ours vs torch {mode} ({name})",
                "passed": tolerance is None or bool(gap <= tolerance),
                "detail": note,
            }
        )
    return rows, checks
