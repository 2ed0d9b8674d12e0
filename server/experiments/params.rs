//! Parameters from outside (a JSON body, a lesson directive, the command line) become
//! typed, validated values in one way everywhere. A field left out takes its default,
//! as `gpulab bench`'s flags do (every experiment's parameters are
//! `#[serde(default, deny_unknown_fields)]`, so no field is required and the OpenAPI
//! document says so). The order keeps each mistake's answer stable: a body that is not
//! JSON, or has the wrong shape (an unknown field, a wrong type), is malformed (400,
//! showing an example); a categorical value
//! outside its choices, a number outside its [`Rule`], or a cross-field check failing
//! is invalid (422, naming the bound and whether it is this server's cap).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Why parameters were refused; the text is what the student reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// Not JSON, or not the expected shape (400).
    #[error("the body must be JSON like {example}: {detail}")]
    Malformed {
        /// A valid body (the defaults).
        example: String,
        /// What serde saw.
        detail: String,
    },
    /// Well-formed but outside a bound (422).
    #[error("{0}")]
    Invalid(String),
}

/// One bound on one parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rule {
    /// A whole number in `min..=max`.
    Range {
        /// The parameter.
        field: &'static str,
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
        /// Whether `max` is this server's configured cap (said in the message).
        cap: bool,
    },
    /// One of a few names.
    OneOf {
        /// The parameter.
        field: &'static str,
        /// The accepted values.
        choices: &'static [&'static str],
    },
}

impl Rule {
    /// The parameter the rule bounds.
    pub fn field(&self) -> &'static str {
        match self {
            Self::Range { field, .. } | Self::OneOf { field, .. } => field,
        }
    }

    /// The message when `value` breaks the rule, or `None` when it keeps it (or is of
    /// a type the rule does not judge: that is a shape error for serde).
    pub fn violation(&self, value: &Value) -> Option<String> {
        match self {
            Self::Range {
                field,
                min,
                max,
                cap,
            } => {
                let n = value.as_u64()?;
                (!(*min..=*max).contains(&n)).then(|| {
                    format!(
                        "{field} must be between {min} and {max}{}",
                        if *cap { " (this server's cap)" } else { "" }
                    )
                })
            }
            Self::OneOf { field, choices } => {
                let s = value.as_str()?;
                (!choices.contains(&s))
                    .then(|| format!("{field} must be one of {}", choices.join(", ")))
            }
        }
    }
}

/// Turns a JSON body (`None`: no body, read as `{}`) into typed parameters: choices
/// are checked first (422), then the shape (400).
pub fn parse<P: DeserializeOwned + Serialize>(
    body: Option<&Value>,
    rules: &[Rule],
    defaults: &Value,
) -> Result<P, ParamError> {
    let empty = Value::Object(Map::new());
    let body = body.unwrap_or(&empty);
    if let Value::Object(fields) = body {
        for rule in rules.iter().filter(|r| matches!(r, Rule::OneOf { .. })) {
            if let Some(message) = fields.get(rule.field()).and_then(|v| rule.violation(v)) {
                return Err(ParamError::Invalid(message));
            }
        }
    }
    let malformed = |e: serde_json::Error| ParamError::Malformed {
        example: defaults.to_string(),
        detail: e.to_string(),
    };
    let params = P::deserialize(body).map_err(malformed)?;
    // A field left out takes its default, but within this server's bounds: a default
    // above a lower cap (a class box's --max-matmul-size 1024 against the 4096 default)
    // becomes the cap, so leaving a field out is never refused. A field given out of
    // bounds is still the learner's to fix (check_rules: 422).
    let given = |field: &str| body.as_object().is_some_and(|f| f.contains_key(field));
    let mut typed = serde_json::to_value(&params).unwrap_or_default();
    let mut clamped = false;
    for rule in rules {
        if let Rule::Range {
            field, min, max, ..
        } = *rule
            && !given(field)
            && let Some(value) = typed.get_mut(field)
            && let Some(n) = value.as_u64()
            && !(min..=max).contains(&n)
        {
            *value = Value::from(n.clamp(min, max));
            clamped = true;
        }
    }
    if !clamped {
        return Ok(params);
    }
    P::deserialize(typed).map_err(malformed)
}

/// Checks every numeric rule against typed parameters (422 with the first broken one).
pub fn check_rules<P: Serialize>(params: &P, rules: &[Rule]) -> Result<(), ParamError> {
    let value = serde_json::to_value(params).unwrap_or_default();
    for rule in rules {
        if let Some(message) = value.get(rule.field()).and_then(|v| rule.violation(v)) {
            return Err(ParamError::Invalid(message));
        }
    }
    Ok(())
}

/// The defaults with `overrides` laid over them, typed (a lesson directive's body, or
/// the command line's flags).
pub fn overlay<P: DeserializeOwned>(
    defaults: &Value,
    overrides: &Map<String, Value>,
) -> Result<P, ParamError> {
    let mut merged = defaults.clone();
    if let Value::Object(fields) = &mut merged {
        for (key, value) in overrides {
            fields.insert(key.clone(), value.clone());
        }
    }
    P::deserialize(&merged).map_err(|e| ParamError::Malformed {
        example: defaults.to_string(),
        detail: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct P {
        size: u64,
        #[serde(default = "fp32")]
        precision: String,
    }

    fn fp32() -> String {
        "fp32".into()
    }

    const RULES: &[Rule] = &[
        Rule::Range {
            field: "size",
            min: 16,
            max: 64,
            cap: true,
        },
        Rule::OneOf {
            field: "precision",
            choices: &["fp32", "bf16"],
        },
    ];

    fn run(body: Value) -> Result<P, ParamError> {
        let p: P = parse(Some(&body), RULES, &json!({"size": 32}))?;
        check_rules(&p, RULES)?;
        Ok(p)
    }

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Sized {
        size: u64,
        steps: u64,
    }

    impl Default for Sized {
        fn default() -> Self {
            Self {
                size: 4096,
                steps: 8,
            }
        }
    }

    #[test]
    fn a_default_above_this_servers_cap_becomes_the_cap_and_a_given_value_does_not() {
        let rules = &RULES[..1];
        let defaults = json!({"size": 4096, "steps": 8});
        let parsed = |body: Value| parse::<Sized>(Some(&body), rules, &defaults);
        assert_eq!(parsed(json!({})).unwrap(), Sized { size: 64, steps: 8 });
        assert_eq!(
            parse::<Sized>(None, rules, &defaults).unwrap(),
            Sized { size: 64, steps: 8 }
        );
        // Given, it is the learner's value: check_rules refuses it, naming the cap.
        let given = parsed(json!({"size": 4096})).unwrap();
        assert_eq!(given.size, 4096);
        assert!(check_rules(&given, rules).is_err());
    }

    #[test]
    fn shape_errors_are_malformed_and_bounds_are_invalid() {
        assert_eq!(
            run(json!({"size": 32})).unwrap(),
            P {
                size: 32,
                precision: "fp32".into()
            }
        );
        let malformed = |body| matches!(run(body), Err(ParamError::Malformed { .. }));
        assert!(malformed(json!({})));
        assert!(malformed(json!({"size": -5})));
        assert!(malformed(json!({"size": "big"})));
        assert!(malformed(json!({"size": 32, "extra": 1})));
        assert!(malformed(json!([1, 2])));
        assert_eq!(
            run(json!({"size": 65})).unwrap_err().to_string(),
            "size must be between 16 and 64 (this server's cap)"
        );
        assert_eq!(
            run(json!({"size": 32, "precision": "fp8"})).unwrap_err(),
            ParamError::Invalid("precision must be one of fp32, bf16".into())
        );
        let err = run(json!({"size": 32, "precision": 8})).unwrap_err();
        assert!(matches!(err, ParamError::Malformed { .. }), "{err}");
        assert!(
            err.to_string().contains(r#"JSON like {"size":32}"#),
            "{err}"
        );
    }

    #[test]
    fn overlays_keep_the_defaults_they_do_not_name() {
        let mut overrides = Map::new();
        overrides.insert("precision".into(), json!("bf16"));
        let p: P = overlay(&json!({"size": 32, "precision": "fp32"}), &overrides).unwrap();
        assert_eq!((p.size, p.precision.as_str()), (32, "bf16"));
    }
}
