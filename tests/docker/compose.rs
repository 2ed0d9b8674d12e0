//! `docker/compose.yaml`, read with a YAML library (`yaml_serde`) into a small view that
//! keeps mappings in file order and every scalar as the text the file wrote, so the
//! checks compare strings the way a reader of the file would. The same view reads
//! `docker/compose.postgres.yaml` (with its `<<` merge keys applied) and the Kubernetes
//! manifests (several documents in a file).

use serde::Deserialize;
use yaml_serde::Value;

use super::binary::read;

/// A YAML value: mapping (in file order), sequence or scalar (as text).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Yaml {
    /// `key: value` entries in file order.
    Map(Vec<(String, Yaml)>),
    /// A list.
    Seq(Vec<Yaml>),
    /// Any scalar, as text (`1`, `true` and `"1"` all read as strings).
    Str(String),
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        other => panic!("not a scalar: {other:?}"),
    }
}

impl From<&Value> for Yaml {
    fn from(value: &Value) -> Self {
        match value {
            Value::Mapping(entries) => Yaml::Map(
                entries
                    .iter()
                    .map(|(k, v)| (scalar(k), Yaml::from(v)))
                    .collect(),
            ),
            Value::Sequence(items) => Yaml::Seq(items.iter().map(Yaml::from).collect()),
            Value::Tagged(tagged) => panic!("tags are not used in compose.yaml: {tagged:?}"),
            other => Yaml::Str(scalar(other)),
        }
    }
}

/// Parses `text` as YAML, failing the test on invalid YAML.
pub(super) fn parse_yaml(text: &str) -> Yaml {
    let value: Value = yaml_serde::from_str(text).unwrap_or_else(|e| panic!("invalid YAML: {e}"));
    Yaml::from(&value)
}

/// Parses `text` as YAML and applies its `<<` merge keys, as Compose does: a service that
/// says `<<: *gpulab` gets every key of the `&gpulab` mapping it does not set itself.
pub(super) fn parse_yaml_merged(text: &str) -> Yaml {
    let mut value: Value =
        yaml_serde::from_str(text).unwrap_or_else(|e| panic!("invalid YAML: {e}"));
    value
        .apply_merge()
        .unwrap_or_else(|e| panic!("invalid `<<` merge key: {e}"));
    Yaml::from(&value)
}

/// Every non-empty document of a multi-document YAML file (`---` between them).
pub(super) fn yaml_documents(relative: &str) -> Vec<Yaml> {
    let text = read(relative);
    yaml_serde::Deserializer::from_str(&text)
        .map(|document| {
            let value = Value::deserialize(document)
                .unwrap_or_else(|e| panic!("{relative}: invalid YAML: {e}"));
            Yaml::from(&value)
        })
        .filter(|document| *document != Yaml::Str(String::new()))
        .collect()
}

impl Yaml {
    /// Like [`Yaml::at`], naming `file` when the path is missing.
    pub(super) fn at_in(&self, file: &str, path: &str) -> &Yaml {
        path.split('.').fold(self, |value, key| {
            value
                .get(key)
                .unwrap_or_else(|| panic!("{file} has no `{path}` (at `{key}`)"))
        })
    }

    pub(super) fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at a dotted path, or a failure naming the path.
    pub(super) fn at(&self, path: &str) -> &Yaml {
        path.split('.').fold(self, |value, key| {
            value
                .get(key)
                .unwrap_or_else(|| panic!("docker/compose.yaml has no `{path}` (at `{key}`)"))
        })
    }

    pub(super) fn str(&self) -> &str {
        match self {
            Yaml::Str(s) => s,
            other => panic!("expected a scalar, found {other:?}"),
        }
    }

    pub(super) fn seq(&self) -> &[Yaml] {
        match self {
            Yaml::Seq(items) => items,
            other => panic!("expected a list, found {other:?}"),
        }
    }

    pub(super) fn keys(&self) -> Vec<&str> {
        match self {
            Yaml::Map(entries) => entries.iter().map(|(k, _)| k.as_str()).collect(),
            other => panic!("expected a mapping, found {other:?}"),
        }
    }
}

/// A compose duration ("90s", "1m30s", "2m") in seconds.
pub(super) fn duration_secs(text: &str) -> u64 {
    let mut total = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number
            .parse()
            .unwrap_or_else(|_| panic!("bad duration {text}"));
        total += match c {
            'h' => n * 3600,
            'm' => n * 60,
            's' => n,
            _ => panic!("unsupported duration unit in {text}"),
        };
        number.clear();
    }
    assert!(number.is_empty(), "duration {text} lacks a unit");
    total
}

pub(super) struct Compose {
    pub root: Yaml,
    pub service_name: String,
}

impl Compose {
    pub(super) fn load() -> Self {
        let root = parse_yaml(&read("docker/compose.yaml"));
        let services = root.at("services").keys();
        assert_eq!(
            services.len(),
            1,
            "docker/compose.yaml: one service expected, found {services:?}"
        );
        let service_name = services[0].to_string();
        Self { root, service_name }
    }

    pub(super) fn service(&self, path: &str) -> &Yaml {
        self.root
            .at(&format!("services.{}.{path}", self.service_name))
    }

    pub(super) fn service_opt(&self, key: &str) -> Option<&Yaml> {
        self.root.at("services").get(&self.service_name)?.get(key)
    }
}

// ---------------------------------------------------------------------------------------
// docker/.env.example.

#[test]
fn the_compose_view_reads_what_it_claims_to() {
    let yaml = parse_yaml(
        "name: x # comment\nservices:\n  a:\n    ports:\n      - \"1:2\"\n    test: [\"CMD-SHELL\", \"curl http://127.0.0.1:9/h || exit 1\"]\n    devices:\n      - driver: nvidia\n        count: 1\n        capabilities: [gpu]\nvolumes:\n  v:\n    name: v\n",
    );
    assert_eq!(yaml.at("name").str(), "x");
    assert_eq!(yaml.at("services.a.ports").seq()[0].str(), "1:2");
    assert_eq!(
        yaml.at("services.a.test").seq()[1].str(),
        "curl http://127.0.0.1:9/h || exit 1"
    );
    let device = &yaml.at("services.a.devices").seq()[0];
    assert_eq!(device.at("count").str(), "1");
    assert_eq!(device.at("capabilities").seq(), &[Yaml::Str("gpu".into())]);
    assert_eq!(yaml.at("volumes.v.name").str(), "v");
    assert_eq!(
        yaml.keys(),
        ["name", "services", "volumes"],
        "file order is kept"
    );
    assert_eq!(duration_secs("1m30s"), 90);

    let merged = parse_yaml_merged(
        "x-base: &base\n  image: i\n  init: true\nservices:\n  a:\n    <<: *base\n    init: false\n",
    );
    assert_eq!(merged.at_in("f", "services.a.image").str(), "i");
    assert_eq!(
        merged.at_in("f", "services.a.init").str(),
        "false",
        "a key the service sets wins over the merged one"
    );
    assert!(merged.at_in("f", "services.a").get("<<").is_none());
}
