"""The comparison's rows and how they are shown: a terminal table, Markdown and JSON.

Every row compares one measurement of ours with the same measurement in a reference
tool (PyTorch, or numpy for CPU matrix products). `ratio` is always ours ÷ reference
in the row's own unit, so whether a ratio above 1 is good depends on the unit: for
milliseconds lower is better (ratio < 1: ours faster), for GB/s higher is better
(ratio > 1: ours faster). The verdict column says it in words.
"""

import json


def Row(experiment, case, unit, better, ours, theirs, note="", reference="torch", detail=None):
    """A measured row; ratio and verdict are derived from `ours` and `theirs`. `detail`
    holds what the row measured as data (sizes, formats, errors) for verdict.py's gates."""
    ratio = ours / theirs if ours and theirs else None
    return {
        "experiment": experiment,
        "case": case,
        "unit": unit,
        "better": better,
        "ours": ours,
        "reference": reference,
        "theirs": theirs,
        "ratio": ratio,
        "verdict": verdict(ratio, better),
        "status": "ok" if ratio is not None else "error",
        "note": note,
        "detail": detail or {},
    }


def na_row(experiment, case, unit, better, why, reference="torch", detail=None):
    """A row that cannot be measured here, with the reason."""
    row = Row(experiment, case, unit, better, None, None, why, reference, detail)
    row.update(status="n/a", verdict="n/a")
    return row


def error_row(experiment, case, unit, better, error, reference="torch"):
    """A row whose measurement failed: it makes reference.py exit non-zero."""
    row = Row(experiment, case, unit, better, None, None, f"FAILED: {error}", reference)
    row.update(status="error", verdict="failed")
    return row


def verdict(ratio, better):
    """'ours 1.30× faster' / 'ours 2.10× slower' / 'same', from an ours ÷ theirs ratio."""
    if ratio is None:
        return "failed"
    speed = 1 / ratio if better == "lower" else ratio
    if abs(speed - 1) < 0.005:
        return "same"
    return f"ours {speed:.2f}× faster" if speed > 1 else f"ours {1 / speed:.2f}× slower"


def _num(x):
    if x is None:
        return "—"
    if x == 0 or 0.01 <= abs(x) < 100_000:
        return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"
    return f"{x:.3e}"


COLUMNS = ["experiment", "case", "unit", "better", "ours", "reference", "theirs", "ratio", "verdict"]


def _cells(row):
    return [
        row["experiment"],
        row["case"],
        row["unit"],
        row["better"],
        _num(row["ours"]),
        row["reference"],
        _num(row["theirs"]),
        "n/a" if row["status"] == "n/a" else _num(row["ratio"]),
        row["verdict"],
    ]


def terminal(rows):
    """A fixed-width table for the console, numbered, with each distinct note once."""
    table = [["#"] + COLUMNS] + [[str(i)] + _cells(r) for i, r in enumerate(rows, start=1)]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in table]
    by_note = {}
    for number, row in enumerate(rows, start=1):
        if row["note"]:
            by_note.setdefault(row["note"], []).append(str(number))
    notes = [f"  #{', #'.join(numbers)}: {note}" for note, numbers in by_note.items()]
    return "\n".join(lines + (["notes:"] + notes if notes else []))


def markdown(rows, environment):
    """The table as Markdown, with the machine and the reading rule above it."""
    out = ["# GPU Lab against reference tools", ""]
    out += [f"- **{k}**: {v}" for k, v in environment.items()]
    out += [
        "",
        "`ratio` = ours ÷ reference in the row's unit. For ms lower is better (ratio < 1:"
        " ours faster); for GB/s higher is better (ratio > 1: ours faster).",
        "",
        "| " + " | ".join(COLUMNS + ["note"]) + " |",
        "|" + "---|" * (len(COLUMNS) + 1),
    ]
    for r in rows:
        cells = _cells(r) + [r["note"]]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def write(out_dir, rows, environment, checks):
    """comparison.md and comparison.json in `out_dir`."""
    (out_dir / "comparison.md").write_text(markdown(rows, environment), encoding="utf-8")
    document = {"environment": environment, "rows": rows, "checks": checks}
    (out_dir / "comparison.json").write_text(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
