"""The matmul crossover (server/experiments/matmul.rs) and the precision shoot-out
(server/experiments/precision.rs) in PyTorch, and numpy for CPU products.

Matmul: square n × n FP32 products at every size our sweep timed, read from our JSON:
on the CPU (`torch.matmul` on CPU tensors, host clock; with --numpy also numpy's
`a @ b`), on the GPU with the inputs resident (CUDA events, TF32 off) and with both
inputs first copied from pageable host memory (events around the copies and the
product), as ours. Precision: one n × n product per format — FP32 (TF32 off), TF32
(`set_float32_matmul_precision("high")`), FP16 and BF16 inputs and output with FP32
accumulation (reduced-precision reductions off, as our CUBLAS_COMPUTE_32F) — timed
with events, plus its largest error against an FP64 product of the same inputs. A
format our CPU backend only emulates (its time is FP32's) is n/a.
"""

from ref_report import Row, na_row
from ref_timing import clock_for, remember, repeat


def _inputs(torch, n, device, dtype=None):
    generator = torch.Generator().manual_seed(n)
    a = torch.rand(n, n, generator=generator) * 2 - 1
    b = torch.rand(n, n, generator=generator) * 2 - 1
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def _fp32_exact(torch):
    """FP32 products in FP32 arithmetic (no TF32), as our FP32 rows."""
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.set_float32_matmul_precision("highest")


def _timed_product(torch, n, device, samples, dtype=None, products=1):
    """Milliseconds per product: each sample is `products` back-to-back products between
    two events (ours reads its count from products_per_sample in matmul.rs and reports it
    per row), divided by `products`, so neither side's launch call is in the figure."""
    a, b = _inputs(torch, n, device, dtype)
    c = torch.empty_like(a)
    products = max(1, products)

    def work():
        for _ in range(products):
            torch.matmul(a, b, out=c)

    ms = repeat(clock_for(torch, device), samples, work)
    return {key: (value / products if key != "samples" else value) for key, value in ms.items()}


def _timed_with_copy(torch, n, device, samples):
    host_a, host_b = _inputs(torch, n, "cpu")
    a, b = torch.empty_like(host_a, device=device), torch.empty_like(host_b, device=device)
    c = torch.empty_like(a)

    def work():
        a.copy_(host_a)
        b.copy_(host_b)
        torch.matmul(a, b, out=c)

    return repeat(clock_for(torch, device), samples, work)


def _numpy_product(n, samples):
    import numpy

    from ref_timing import HostClock

    rng = numpy.random.default_rng(n)
    a = (rng.random((n, n), dtype=numpy.float32) * 2 - 1).astype(numpy.float32)
    b = (rng.random((n, n), dtype=numpy.float32) * 2 - 1).astype(numpy.float32)
    c = numpy.empty_like(a)
    return repeat(HostClock(), samples, lambda: numpy.matmul(a, b, out=c))


def measure_matmul(torch, device, result, with_numpy=False):
    """Rows for every size and column our matmul sweep timed."""
    _fp32_exact(torch)
    rows = []
    for r in result["rows"]:
        n = r["size"]
        if r.get("cpu_ms"):
            samples = r["cpu_ms"]["samples"]
            ours = r["cpu_ms"]["median"]
            ms = remember(("matmul cpu torch", n), lambda: _timed_product(torch, n, "cpu", samples))["median"]
            rows.append(Row("matmul", f"cpu fp32 n={n}", "ms", "lower", ours, ms, detail={"size": n, "where": "cpu"}))
            if with_numpy:
                ms = remember(("matmul cpu numpy", n), lambda: _numpy_product(n, samples))["median"]
                rows.append(
                    Row("matmul", f"cpu fp32 n={n}", "ms", "lower", ours, ms, reference="numpy", detail={"size": n, "where": "cpu"})
                )
        if r.get("gpu_ms") and device != "cpu":
            samples = r["gpu_ms"]["samples"]
            products = r.get("products") or 1  # documents before back-to-back timing: 1
            ms = remember(
                ("matmul gpu", n, products), lambda: _timed_product(torch, n, device, samples, products=products)
            )["median"]
            how = f"CUDA events around {products} back-to-back products, TF32 off"
            rows.append(
                Row("matmul", f"gpu fp32 n={n}", "ms", "lower", r["gpu_ms"]["median"], ms, how,
                    detail={"size": n, "where": "gpu", "format": "fp32"})
            )
        if r.get("gpu_with_copy_ms") and device != "cpu":
            samples = r["gpu_with_copy_ms"]["samples"]
            ms = remember(("matmul gpu copy", n), lambda: _timed_with_copy(torch, n, device, samples))["median"]
            rows.append(
                Row(
                    "matmul",
                    f"gpu fp32 n={n} + copy in",
                    "ms",
                    "lower",
                    r["gpu_with_copy_ms"]["median"],
                    ms,
                    "both inputs copied from pageable host memory, then the product",
                    detail={"size": n, "where": "gpu+copy", "format": "fp32"},
                )
            )
    return rows


FORMATS = {"fp32": ("float32", "highest"), "tf32": ("float32", "high"), "fp16": ("float16", None), "bf16": ("bfloat16", None)}


def _format_product(torch, device, name, n, samples):
    """Milliseconds per product in format `name`, and its largest relative error."""
    a64, b64 = _inputs(torch, n, device, torch.float64)
    reference = torch.matmul(a64, b64)
    dtype_name, fp32_precision = FORMATS[name]
    _fp32_exact(torch)
    if fp32_precision:
        torch.set_float32_matmul_precision(fp32_precision)
    dtype = getattr(torch, dtype_name)
    a, b = a64.to(dtype), b64.to(dtype)
    c = torch.matmul(a, b)
    error = (c.double() - reference).abs().max().item() / reference.abs().max().item()
    ms = repeat(clock_for(torch, device), samples, lambda: torch.matmul(a, b, out=c))
    _fp32_exact(torch)
    return ms, error


def measure_precision(torch, device, result):
    """One row per format of our precision shoot-out."""
    n = result["size"]
    rows = []
    for r in result["rows"]:
        name = r["precision"]
        case = f"{name} n={n}"
        if r.get("emulated"):
            why = f"our CPU backend emulates {name} (its time is FP32's)"
            rows.append(na_row("precision", case, "ms", "lower", why, detail={"size": n, "format": name}))
            continue
        samples = r["ms"]["samples"]
        ms, error = remember(("precision", name, n), lambda: _format_product(torch, device, name, n, samples))
        note = f"max rel. error vs FP64: ours {r['max_rel_error']:.1e}, torch {error:.1e}"
        detail = {"size": n, "format": name, "where": device, "ours_error": r["max_rel_error"], "theirs_error": error}
        rows.append(Row("precision", case, "ms", "lower", r["ms"]["median"], ms["median"], note, detail=detail))
    return rows
