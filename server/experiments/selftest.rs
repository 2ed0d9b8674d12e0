//! The vocabulary of `gpulab selftest`: each experiment returns [`Check`]s that compare
//! what it computes (on the GPU when there is one, else on the CPU) with a reference,
//! and each check passes, fails with the numbers that disagree, or says plainly that
//! it could not run here (a GPU check on a machine without one).

use serde::Serialize;

/// How one check came out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "lowercase")]
pub enum Outcome {
    /// Agreed with its reference; the detail says by how much.
    Pass(String),
    /// Disagreed, or could not run although it should have.
    Fail(String),
    /// Not run on this machine, and why.
    Skip(String),
}

/// One comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was compared, e.g. `precision: bf16 GEMM vs FP64 (GPU)`.
    pub name: String,
    /// The result.
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl Check {
    /// Passes when `ok`, with `detail` either way.
    pub fn expect(name: impl Into<String>, ok: bool, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        Self {
            name: name.into(),
            outcome: if ok {
                Outcome::Pass(detail)
            } else {
                Outcome::Fail(detail)
            },
        }
    }

    /// A check that could not run here.
    pub fn skip(name: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            outcome: Outcome::Skip(why.into()),
        }
    }

    /// A check whose computation failed before it could compare anything.
    pub fn error(name: impl Into<String>, error: impl std::fmt::Display) -> Self {
        Self {
            name: name.into(),
            outcome: Outcome::Fail(format!("could not run: {error}")),
        }
    }

    /// Whether it failed.
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Fail(_))
    }
}

/// `Check::expect` on `run`'s result, or `Check::error` when `run` failed.
pub fn checked<T, E: std::fmt::Display>(
    name: impl Into<String>,
    run: Result<T, E>,
    judge: impl FnOnce(&T) -> (bool, String),
) -> Check {
    let name = name.into();
    match run {
        Ok(value) => {
            let (ok, detail) = judge(&value);
            Check::expect(name, ok, detail)
        }
        Err(e) => Check::error(name, e),
    }
}

/// [`checked`] for a check of how the OS schedules threads: a run in which the machine
/// preempted the measuring thread long enough to hide what is shown is run again, up to
/// `tries` times in all; the first run that passes counts, and the detail says which.
pub fn checked_tries<T, E: std::fmt::Display>(
    name: impl Into<String>,
    tries: usize,
    mut run: impl FnMut() -> Result<T, E>,
    judge: impl Fn(&T) -> (bool, String),
) -> Check {
    let name = name.into();
    let mut last = Check::error(name.clone(), "not run");
    for attempt in 1..=tries.max(1) {
        last = match run() {
            Ok(value) => {
                let (ok, detail) = judge(&value);
                let detail = if attempt > 1 {
                    format!(
                        "{detail} (run {attempt} of at most {tries}: an earlier run was disturbed)"
                    )
                } else {
                    detail
                };
                Check::expect(name.clone(), ok, detail)
            }
            Err(e) => return Check::error(name, e),
        };
        if !last.failed() {
            break;
        }
    }
    last
}

/// The GPU half of a selftest on a machine without a GPU.
pub fn no_gpu(name: impl Into<String>) -> Check {
    Check::skip(name, "no GPU on this machine: the GPU path was not run")
}

/// Largest absolute difference between `a` and `b`, relative to `b`'s largest magnitude.
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = b
        .iter()
        .fold(0.0f64, |m, x| m.max(x.abs()))
        .max(f64::MIN_POSITIVE);
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_report_pass_fail_and_skip() {
        assert!(!Check::expect("a", true, "ok").failed());
        assert!(Check::expect("a", false, "off by 2").failed());
        assert!(!Check::skip("a", "no GPU").failed());
        assert!(Check::error("a", "boom").failed());
        let c = checked("a", Ok::<_, String>(3), |v| (*v == 3, format!("{v}")));
        assert_eq!(c.outcome, Outcome::Pass("3".into()));
        let mut runs = 0;
        let c = checked_tries(
            "b",
            3,
            || {
                Ok::<_, String>({
                    runs += 1;
                    runs
                })
            },
            |v| (*v == 2, format!("{v}")),
        );
        assert!(!c.failed() && runs == 2, "{c:?}, {runs} runs");
        assert!(
            matches!(&c.outcome, Outcome::Pass(d) if d.contains("run 2 of at most 3")),
            "{c:?}"
        );
        let c = checked_tries("c", 3, || Ok::<_, String>(0), |v| (*v == 1, format!("{v}")));
        assert!(c.failed());
        assert!((max_rel_diff(&[1.0, 2.0], &[1.0, 2.2]) - 0.2 / 2.2).abs() < 1e-12);
        let json = serde_json::to_value(Check::skip("x", "why")).unwrap();
        assert_eq!(json["outcome"], "skip");
    }
}
