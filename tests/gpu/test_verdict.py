"""Unit tests of verdict.py, the GPU run's judge, on GPU-shaped results made up to sit
on each side of every gate (python3 -m unittest discover -s tests/gpu; tests/run.sh)."""

import json
import pathlib
import tarfile
import tempfile
import unittest

import verdict

MIB = 1 << 20


def row(experiment, ratio, detail, reference="torch", status="ok"):
    return {"experiment": experiment, "case": f"{experiment} {detail}", "unit": "x", "ratio": ratio,
            "reference": reference, "status": status, "detail": detail, "verdict": "", "ours": 1, "theirs": 1}


def healthy_rows():
    return [
        row("transfer", 1.02, {"direction": "h2d", "memory": "pinned", "bytes": 1024 * MIB, "device": "cuda"}),
        row("transfer", 0.8, {"direction": "d2h", "memory": "pageable", "bytes": 256 * MIB, "device": "cuda"}),
        # small copies are not gated: launch overhead dominates them
        row("transfer", 0.3, {"direction": "h2d", "memory": "pinned", "bytes": 1 * MIB, "device": "cuda"}),
        row("matmul", 1.1, {"size": 4096, "where": "gpu", "format": "fp32"}),
        row("matmul", 3.0, {"size": 4096, "where": "gpu+copy", "format": "fp32"}),
        row("matmul", 2.0, {"size": 512, "where": "gpu", "format": "fp32"}),
        row("precision", 0.9, {"size": 2048, "format": "bf16", "where": "cuda", "ours_error": 3e-3, "theirs_error": 2e-3}),
        row("training", 1.7, {"mode": "eager", "where": "cuda", "precision": "fp32"}),
    ]


def steps(mode, **override):
    out = []
    for name in verdict.REQUIRED[mode]:
        status, detail = override.get(name, ("ok", ""))
        out.append({"name": name, "status": status, "seconds": 1.0, "exit": 0, "detail": detail})
    return out


class Gates(unittest.TestCase):
    def test_a_healthy_gpu_run_passes_every_gate_it_has(self):
        gates = verdict.ratio_gates({"rows": healthy_rows(), "checks": [{"name": "loss", "passed": True, "detail": ""}]})
        names = [g["name"] for g in gates]
        self.assertEqual(len(gates), 7, names)  # 2 copies, 2 GEMMs, 1 error, training, the check
        self.assertTrue(all(g["status"] == "pass" for g in gates), gates)
        word, reasons = verdict.decide(steps("gpu"), gates, "gpu")
        self.assertEqual(word, "PASS", reasons)

    def test_each_gate_fails_just_outside_its_band(self):
        for index, ratio in [(0, 1.11), (0, 0.89), (1, 0.74), (1, 1.34), (3, 1.19), (3, 0.84)]:
            rows = healthy_rows()
            rows[index]["ratio"] = ratio
            failed = [g for g in verdict.ratio_gates({"rows": rows}) if g["status"] == "fail"]
            self.assertEqual(len(failed), 1, (index, ratio, failed))
            self.assertEqual(verdict.decide(steps("gpu"), failed, "gpu")[0], "FAIL")

    def test_an_error_more_than_four_times_torchs_fails(self):
        rows = healthy_rows()
        rows[6]["detail"]["ours_error"] = 8.1e-3
        failed = [g for g in verdict.ratio_gates({"rows": rows}) if g["status"] == "fail"]
        self.assertEqual([g["name"].startswith("precision error") for g in failed], [True])

    def test_a_slow_training_step_warns_and_a_failed_loss_check_fails(self):
        rows = healthy_rows()
        rows[7]["ratio"] = 2.5
        gates = verdict.ratio_gates({"rows": rows, "checks": [{"name": "loss", "passed": False, "detail": "gap"}]})
        self.assertEqual(sorted(g["status"] for g in gates if g["status"] != "pass"), ["fail", "warn"])

    def test_launch_chains_of_a_hundred_kernels_are_reported_and_shorter_ones_are_not(self):
        launch = [
            row("launch", 1.1, {"kernels": 100, "way": "graph", "device": "cuda"}),
            row("launch", 0.4, {"kernels": 100, "way": "eager", "device": "cuda"}),
            row("launch", 9.0, {"kernels": 10, "way": "graph", "device": "cuda"}),
            row("launch", 0.9, {"kernels": 100, "way": "eager-call", "device": "cuda"}),
        ]
        gates = [g for g in verdict.ratio_gates({"rows": launch}) if g["name"].startswith("launch")]
        self.assertEqual([g["status"] for g in gates], ["pass", "pass"])
        launch[0]["ratio"] = 2.6  # our replay much slower than torch's: a warning, not a failure
        statuses = [g["status"] for g in verdict.ratio_gates({"rows": launch})]
        self.assertEqual(statuses, ["warn", "pass"])

    def test_a_missing_measurement_fails_its_gate(self):
        rows = healthy_rows()
        rows[0]["ratio"] = None
        self.assertIn("fail", [g["status"] for g in verdict.ratio_gates({"rows": rows})])


class Doctor(unittest.TestCase):
    def test_every_doctor_layer_must_be_ok(self):
        layers = [{"name": f"layer {i}", "status": "ok", "detail": ""} for i in range(7)]
        env = {"ours": {"doctor": {"layers": layers}}}
        self.assertEqual(verdict.doctor_gate(env)["status"], "pass")
        self.assertEqual(verdict.doctor_gate(env)["value"], "7/7")
        layers[3] = {"name": "cuBLAS", "status": "failed", "detail": "no libcublas"}
        gate = verdict.doctor_gate(env)
        self.assertEqual((gate["status"], gate["value"]), ("fail", "6/7"))
        self.assertIn("no libcublas", gate["detail"])
        self.assertEqual(verdict.doctor_gate({})["status"], "fail")
        layers[3] = {"name": "NVML", "status": "failed", "detail": "no utility capability", "advisory": True}
        self.assertEqual(verdict.doctor_gate(env)["status"], "warn")


class Steps(unittest.TestCase):
    def test_a_timeout_or_failure_fails_and_running_out_of_budget_is_incomplete(self):
        self.assertEqual(verdict.decide(steps("gpu", selftest=("failed", "1 failed")), [], "gpu")[0], "FAIL")
        self.assertEqual(verdict.decide(steps("gpu", **{"gpu-tests": ("timeout", "")}), [], "gpu")[0], "FAIL")
        late = steps("gpu", **{"warm-probes": ("skipped", "out of time: the 540s budget is spent")})
        self.assertEqual(verdict.decide(late, [], "gpu")[0], "INCOMPLETE")
        self.assertEqual(verdict.decide(steps("gpu")[:3], [], "gpu")[0], "INCOMPLETE")

    def test_the_cpu_mode_may_skip_the_fallback_but_the_gpu_mode_may_not(self):
        skipped = {"injected-fallback": ("skipped", "--cpu: there is no GPU to fall back from")}
        cpu = steps("cpu") + [{"name": "injected-fallback", "status": "skipped", "seconds": 0, "exit": None,
                               "detail": skipped["injected-fallback"][1]}]
        self.assertEqual(verdict.decide(cpu, [], "cpu")[0], "PASS")
        self.assertEqual(verdict.decide(steps("gpu", **skipped), [], "gpu")[0], "FAIL")


class Calibration(unittest.TestCase):
    def probes(self, cold_ms, warm_ms, cold_ratio=2.0, warm_ratio=2.0, converged=True):
        logs = pathlib.Path(tempfile.mkdtemp())
        for when, ms, ratio in (("cold", cold_ms, cold_ratio), ("warm", warm_ms, warm_ratio)):
            calibration = {"target_ms": 5.0, "achieved_ms": ms, "converged": converged}
            (logs / f"{when}-timing.json").write_text(json.dumps({"result": {"kernel_ms": ms, "calibration": calibration}}))
            (logs / f"{when}-streams.json").write_text(json.dumps({"result": {"compute_copy_ratio": ratio, "calibration": calibration}}))
        return logs

    def test_calibration_that_drifts_more_than_ten_percent_fails_on_a_gpu(self):
        _, gates = verdict.calibration(self.probes(5.0, 5.2), "gpu")
        self.assertEqual([g["status"] for g in gates], ["pass"] * 6)
        _, gates = verdict.calibration(self.probes(2.0, 5.0, 1.0, 2.0), "gpu")
        self.assertEqual(sorted(g["status"] for g in gates), ["fail", "fail"] + ["pass"] * 4)
        _, gates = verdict.calibration(self.probes(5.0, 5.0, converged=False), "gpu")
        self.assertEqual(sorted(g["status"] for g in gates), ["fail"] * 4 + ["pass"] * 2)
        _, gates = verdict.calibration(self.probes(2.0, 5.0, converged=False), "cpu")
        self.assertNotIn("fail", [g["status"] for g in gates])
        self.assertIn("warn", [g["status"] for g in gates])

    def test_an_older_builds_probe_fields_still_read(self):
        logs = pathlib.Path(tempfile.mkdtemp())
        (logs / "cold-timing.json").write_text(json.dumps({"result": {"device_ms": 50.0}}))
        (logs / "cold-streams.json").write_text(json.dumps({"result": {"compute_ms": 3.0, "copy_ms": 1.5}}))
        self.assertEqual(verdict.probe_figures(logs, "cold"), {"timing_kernel_ms": 50.0, "streams_compute_over_copy": 2.0})



def lab_run(name, base_sps, ref_sps, nominal, base_peak=100, ref_peak=50, base_loss=0.5, ref_loss=0.5):
    """A `gpulab bench lab --json` document: baseline and reference samples/s with ±5% quartiles."""
    def measured(sps, peak, loss):
        return {"samples_per_sec": {"median": sps, "q1": sps * 0.95, "q3": sps * 1.05},
                "memory": {"peak_reserved": peak}, "final_loss": loss}
    return {"result": {"lab": name, "backend": "cuda", "nominal_speedup": nominal,
                       "baseline": measured(base_sps, base_peak, base_loss),
                       "reference": measured(ref_sps, ref_peak, ref_loss)}}


class Labs(unittest.TestCase):
    def logs(self, *runs):
        logs = pathlib.Path(tempfile.mkdtemp())
        for run in runs:
            (logs / f"lab-{run['result']['lab']}.json").write_text(json.dumps(run))
        return logs

    def test_a_reference_short_of_its_lab_target_is_reported_not_failed(self):
        labs = verdict.lab_figures(self.logs(
            lab_run("feed-the-gpu", 10_000, 50_000, 3.0),
            lab_run("slow-loop-doctor", 10_000, 30_000, 4.0),
            lab_run("fit-the-budget", 10_000, 9_000, None, base_peak=100, ref_peak=70),
            lab_run("mixed-precision", 10_000, 20_000, 1.5, base_loss=0.50, ref_loss=0.505),
        ))
        self.assertEqual([lab["lab"] for lab in labs], ["feed-the-gpu", "fit-the-budget", "mixed-precision", "slow-loop-doctor"])
        self.assertAlmostEqual(labs[0]["reference_gain"], 5.0)
        self.assertAlmostEqual(labs[0]["reference_gain_pessimistic"], 50_000 * 0.95 / (10_000 * 1.05))
        status = {g["name"]: g["status"] for g in verdict.lab_gates(labs)}
        self.assertEqual(status["lab feed-the-gpu: reference speed-up"], "pass")
        # 3× median, but 2.7× on the quartiles: short of the doctor's 4×.
        self.assertEqual(status["lab slow-loop-doctor: reference speed-up"], "warn")
        self.assertEqual(status["lab fit-the-budget: reference memory"], "warn")
        self.assertEqual(status["lab mixed-precision: reference loss"], "pass")
        self.assertEqual(status["lab mixed-precision: reference speed-up"], "pass")
        self.assertNotIn("fail", status.values())

    def test_labs_show_in_the_summary_and_gate_only_on_a_gpu(self):
        work = pathlib.Path(tempfile.mkdtemp())
        out = pathlib.Path(tempfile.mkdtemp())
        logs = work / "logs"
        logs.mkdir()
        (logs / "lab-feed-the-gpu.json").write_text(json.dumps(lab_run("feed-the-gpu", 10_000, 20_000, 3.0)))
        (work / "steps.tsv").write_text("".join(f"{s['name']}\tok\t1.0\t0\t\n" for s in steps("cpu")))
        cpu = verdict.build(work, out, "cpu", 1, 0)
        self.assertEqual(cpu["verdict"], "PASS")
        self.assertFalse([g for g in cpu["gates"] if g["name"].startswith("lab ")])
        self.assertIn("feed-the-gpu", verdict.summary_text(cpu))
        self.assertIn("2.00×", verdict.summary_text(cpu))
        gpu = verdict.build(work, out, "gpu", 1, 0)
        self.assertEqual([g["status"] for g in gpu["gates"] if g["name"].startswith("lab ")], ["warn"])


class Folder(unittest.TestCase):
    def finished(self, extra=()):
        folder = pathlib.Path(tempfile.mkdtemp())
        work = pathlib.Path(tempfile.mkdtemp())
        (work / "logs").mkdir()
        (work / "logs" / "doctor.log").write_text("ok")
        (work / "steps.tsv").write_text("".join(f"{s['name']}\tok\t1.0\t0\t\n" for s in steps("cpu")))
        v = verdict.build(work, folder, "cpu", 1, 0)
        (folder / "verdict.json").write_text(json.dumps(v))
        (folder / "summary.txt").write_text(verdict.summary_text(v))
        with tarfile.open(folder / "logs.tar.gz", "w:gz") as archive:
            archive.add(work / "logs", arcname="logs")
        for name in extra:
            (folder / name).write_text("{}")
        return folder

    def test_a_finished_folder_passes_and_a_ninth_or_unknown_file_does_not(self):
        self.assertEqual(verdict.check_out(self.finished(["ours.json"]), 8), [])
        crowded = self.finished(verdict.FILES[2:-1] + ["extra.log"])
        problems = verdict.check_out(crowded, 8)
        self.assertTrue(any("more than 8" in p for p in problems), problems)
        self.assertTrue(any("unexpected file extra.log" in p for p in problems), problems)

    def test_a_verdict_in_another_format_is_refused(self):
        folder = self.finished()
        v = json.loads((folder / "verdict.json").read_text())
        v["verdict"] = "OK"
        (folder / "verdict.json").write_text(json.dumps(v))
        self.assertTrue(any("not one of" in p for p in verdict.check_out(folder, 8)))


if __name__ == "__main__":
    unittest.main()
