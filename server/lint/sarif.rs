//! Findings as a SARIF 2.1.0 log (OASIS, errata 01), the format GitHub code scanning
//! and other code-review tools upload: one run of the `gpulab` tool with every rule
//! (its why, fix, lesson and source), one result per finding, and a file that could not
//! be checked as an error notification of an unsuccessful invocation. Columns are in
//! Unicode code points (`columnKind`), as the checker counts them. The output is checked
//! against OASIS's own JSON schema in the tests.

use serde_json::{Value, json};

use super::RULES;
use super::report::Checked;

/// The schema the log declares (OASIS's published URI).
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The SARIF log of a run over `checked`.
pub fn log(checked: &[Checked]) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|rule| {
            json!({
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.name.replace('-', " ")},
                "fullDescription": {"text": rule.why},
                "help": {"text": format!("{} Lesson: {}. Checked against: {}.", rule.fix, rule.lesson_url(), rule.source)},
                "defaultConfiguration": {"level": "warning"},
                "properties": {"lesson": rule.lesson_url(), "tags": ["pytorch", "gpu", "performance"]},
            })
        })
        .collect();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for file in checked {
        let uri = uri(&file.file);
        match &file.outcome {
            Ok(findings) => {
                for f in findings {
                    let index = RULES.iter().position(|r| r.code == f.code).unwrap_or(0);
                    results.push(json!({
                        "ruleId": f.code,
                        "ruleIndex": index,
                        "level": "warning",
                        "message": {"text": f.message},
                        "locations": [location(&uri, Some((f.line, f.column)))],
                    }));
                }
            }
            Err(unchecked) => notifications.push(json!({
                "level": "error",
                "message": {"text": format!("could not check {}: {}", file.file, unchecked.message)},
                "locations": [location(&uri, unchecked.place)],
            })),
        }
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gpulab",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": notifications.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

/// A physical location in `uri`, at a place when one is known.
fn location(uri: &str, place: Option<(usize, usize)>) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": uri}});
    if let Some((line, column)) = place {
        physical["region"] = json!({"startLine": line, "startColumn": column});
    }
    json!({ "physicalLocation": physical })
}

/// A path as a relative URI reference: `/` separators, and every byte outside the
/// unreserved characters percent-encoded.
pub fn uri(path: &str) -> String {
    path.replace('\\', "/")
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::report::Unchecked;
    use super::*;

    #[test]
    fn a_log_has_the_rules_results_and_failed_files() {
        let findings =
            super::super::check("import torch\nscaler = torch.cuda.amp.GradScaler()\n").unwrap();
        let checked = [
            Checked {
                file: "my dir/train.py".into(),
                outcome: Ok(findings),
            },
            Checked {
                file: "broken.py".into(),
                outcome: Err(Unchecked {
                    message: "line 1, column 7: not Python".into(),
                    place: Some((1, 7)),
                }),
            },
        ];
        let log = log(&checked);
        let run = &log["runs"][0];
        assert_eq!(
            run["tool"]["driver"]["rules"].as_array().unwrap().len(),
            RULES.len()
        );
        let result = &run["results"][0];
        assert_eq!(result["ruleId"], "GL402");
        assert_eq!(
            run["tool"]["driver"]["rules"][result["ruleIndex"].as_u64().unwrap() as usize]["id"],
            "GL402"
        );
        let place = &result["locations"][0]["physicalLocation"];
        assert_eq!(place["artifactLocation"]["uri"], "my%20dir/train.py");
        assert_eq!(place["region"]["startLine"], 2);
        assert_eq!(run["invocations"][0]["executionSuccessful"], false);
    }
}
