//! `docker/.env.example` (set and commented-out settings) and `.dockerignore`, with
//! Docker's rules: the last pattern matching a path or one of its parents decides; `!`
//! lets a path back in; `*` and `?` stay within a path segment, `**` spans any number.

use std::collections::BTreeMap;

use super::binary::read;

/// `NAME=value` lines: set ones, and commented-out ones (which show the default).
pub(super) struct EnvExample {
    pub text: String,
    pub set: BTreeMap<String, String>,
    pub commented: BTreeMap<String, String>,
}

impl EnvExample {
    pub(super) fn load() -> Self {
        let text = read("docker/.env.example");
        let mut set = BTreeMap::new();
        let mut commented = BTreeMap::new();
        for line in text.lines().map(str::trim) {
            let (target, body) = match line.strip_prefix('#') {
                Some(body) => (&mut commented, body.trim()),
                None => (&mut set, line),
            };
            let Some((name, value)) = body.split_once('=') else {
                continue;
            };
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                target.insert(name.to_string(), value.trim().to_string());
            }
        }
        Self {
            text,
            set,
            commented,
        }
    }
}

// ---------------------------------------------------------------------------------------
// .dockerignore, with Docker's rules: the last pattern matching a path or one of its
// parents decides; `!` lets a path back in; `*` and `?` stay within a path segment, `**`
// spans any number of segments.

pub(super) struct DockerIgnore {
    pub patterns: Vec<(bool, Vec<String>)>,
}

impl DockerIgnore {
    pub(super) fn load() -> Self {
        let mut patterns = Vec::new();
        for line in read(".dockerignore").lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, pattern) = match line.strip_prefix('!') {
                Some(p) => (true, p.trim()),
                None => (false, line),
            };
            assert!(
                !pattern.contains(['[', '\\']),
                ".dockerignore: this test does not understand {pattern:?}"
            );
            let segments = pattern
                .trim_start_matches('/')
                .trim_end_matches('/')
                .split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .map(str::to_string)
                .collect();
            patterns.push((negated, segments));
        }
        Self { patterns }
    }

    /// Whether `relative` (a repository path with `/`) is left out of the build context.
    pub(super) fn excludes(&self, relative: &str) -> bool {
        let path: Vec<&str> = relative.split('/').collect();
        let mut excluded = false;
        for (negated, pattern) in &self.patterns {
            let hit = (1..=path.len()).any(|n| glob_segments(pattern, &path[..n]));
            if hit {
                excluded = !negated;
            }
        }
        excluded
    }
}

pub(super) fn glob_segments(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| glob_segments(rest, &path[skip..]))
        }
        Some((first, rest)) => {
            !path.is_empty()
                && glob_segment(first.as_bytes(), path[0].as_bytes())
                && glob_segments(rest, &path[1..])
        }
    }
}

pub(super) fn glob_segment(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| glob_segment(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && glob_segment(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && glob_segment(rest, &name[1..]),
    }
}

#[test]
fn the_dockerignore_reader_applies_dockers_rules() {
    let ignore = DockerIgnore {
        patterns: vec![
            (false, vec!["*".into()]),
            (true, vec!["server".into()]),
            (false, vec!["**".into(), "*.db".into()]),
        ],
    };
    assert!(ignore.excludes("target/x"));
    assert!(!ignore.excludes("server/a/b.rs"));
    assert!(ignore.excludes("server/a/x.db"));
}
