//! The shape of the code, checked over its source: no module imports another that
//! imports it back (directly or round a longer loop), and SQL is written only under
//! `server/db/`. A module here is a file (`server/web/state.rs` is `web::state`); its
//! references are its `use` lines and every `crate::`, `super::` and `self::` path in its
//! code (not its comments, so not its rustdoc links, and not its tests'). A module and its
//! own ancestors may refer to each other: that is Rust's nesting, not a loop between
//! layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("server")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `server/web/state.rs` → `["web", "state"]`; `mod.rs` and `lib.rs` name their folder.
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(server()).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a file without its comments and its `#[cfg(test)]` tail.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a `use` tree names, its braces expanded: `a::{b, c::d}` → `a::b`, `a::c::d`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| format!("{prefix}{p}"))
        .collect()
}

/// The `crate::`, `super::` and `self::` paths written in a line of code outside a `use`
/// line (`crate::db::rounds::open(tx)` → `crate::db::rounds::open`).
fn inline_paths(line: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let bytes = line.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    while at < line.len() {
        let rest = &line[at..];
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|s| rest.starts_with(s));
        if starts && (at == 0 || !is_word(bytes[at - 1]) && bytes[at - 1] != b':') {
            let mut end = at;
            while end < line.len() && (is_word(bytes[end]) || line[end..].starts_with("::")) {
                end += if bytes[end] == b':' { 2 } else { 1 };
            }
            paths.push(line[at..end].to_string());
            at = end;
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    paths
}

/// The paths a file's code names: its `use` lines, and every `crate::`, `super::` and
/// `self::` path written elsewhere in it (a call by full path is an import too).
fn paths_in(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        let Some(tree) = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|start| line.strip_prefix(start))
        else {
            paths.extend(inline_paths(line));
            continue;
        };
        let mut statement = tree.to_string();
        while !statement.contains(';') {
            let Some(more) = lines.next() else { break };
            statement.push_str(more);
        }
        let statement = statement.split(';').next().unwrap_or_default();
        if statement.matches('{').count() == statement.matches('}').count() {
            paths.extend(expand(&statement.replace([' ', '\t'], "")));
        }
    }
    paths
}

/// The module `path` (seen from `module`) lands in: its longest prefix that is a module.
fn resolve(module: &[String], path: &str, modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut segments = path.split("::").filter(|s| !s.is_empty());
    let mut at: Vec<String> = match segments.next()? {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().saturating_sub(1)].to_vec(),
        _ => return None,
    };
    for segment in segments {
        if segment == "super" {
            at.pop();
            continue;
        }
        let mut next = at.clone();
        next.push(segment.to_string());
        if !modules.contains(&next) {
            break;
        }
        at = next;
    }
    Some(at)
}

/// The import graph of `sources` (each module with its file's text).
fn graph_of(sources: &[(Vec<String>, String)]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|(m, _)| m.clone()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, text) in sources {
        for path in paths_in(&code_of(text)) {
            let Some(target) = resolve(module, &path, &modules) else {
                continue;
            };
            let nested = target.starts_with(module) || module.starts_with(&target);
            if !nested {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    edges
}

fn graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(&server(), &mut files);
    files.retain(|f| {
        let name = f.file_name().unwrap().to_string_lossy();
        !name.ends_with("_tests.rs") && name != "tests.rs"
    });
    let sources: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|f| (module_of(f), std::fs::read_to_string(f).unwrap()))
        .collect();
    graph_of(&sources)
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn loops(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a Vec<String>) {
            self.index.insert(node, (self.next, self.next));
            self.next += 1;
            self.stack.push(node);
            for target in self.edges.get(node).into_iter().flatten() {
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.index[target].1.min(self.index[node].1);
                    self.index.get_mut(node).unwrap().1 = low;
                } else if self.stack.contains(&target) {
                    let low = self.index[target].0.min(self.index[node].1);
                    self.index.get_mut(node).unwrap().1 = low;
                }
            }
            if self.index[node].0 == self.index[node].1 {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    component.push(top.join("::"));
                    if top == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.found
}

#[test]
fn the_checker_finds_a_loop_where_there_is_one() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let mut edges = BTreeMap::new();
    edges.insert(m("web::state"), BTreeSet::from([m("web::measurements")]));
    edges.insert(
        m("web::measurements"),
        BTreeSet::from([m("web::class_round")]),
    );
    edges.insert(
        m("web::class_round"),
        BTreeSet::from([m("web::state"), m("db")]),
    );
    assert_eq!(
        loops(&edges),
        vec![vec!["web::class_round", "web::measurements", "web::state"]]
    );
    let modules: BTreeSet<Vec<String>> = [m("web"), m("web::state"), m("db"), m("db::jobs")].into();
    assert_eq!(
        resolve(
            &m("web::state"),
            "super::super::db::jobs::JobState",
            &modules
        ),
        Some(m("db::jobs"))
    );
    assert_eq!(
        expand("crate::db::{jobs::{self,NewJob},Db}"),
        vec![
            "crate::db::jobs::self",
            "crate::db::jobs::NewJob",
            "crate::db::Db"
        ]
    );
}

#[test]
fn a_loop_closed_by_a_call_by_full_path_is_found_and_doc_links_are_not_imports() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let source = |module: &str, text: &str| (m(module), text.to_string());
    let sources = [
        source("web", "pub mod state;"),
        source("db", "pub mod rounds;"),
        source("web::state", "use crate::db::rounds::Round;\n"),
        // No `use`: a path in the code closes the loop.
        source(
            "db::rounds",
            "pub fn open() {\n    let limit = crate::web::state::LIMIT;\n}\n",
        ),
    ];
    assert_eq!(
        loops(&graph_of(&sources)),
        vec![vec!["db::rounds", "web::state"]]
    );
    let documented = [
        source("web::state", "use crate::db::rounds::Round;\n"),
        source(
            "db::rounds",
            "//! Shown by [`crate::web::state`].\n/// See [`super::super::web::state`].\nfn f() {}\n",
        ),
    ];
    assert!(loops(&graph_of(&documented)).is_empty());
    assert_eq!(
        inline_paths("x = super::jobs::now(tx.dialect()) + self::a::B; crate::c::d();"),
        ["super::jobs::now", "self::a::B", "crate::c::d"]
    );
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let edges = graph();
    assert!(
        edges.len() > 50,
        "the walk found the modules: {}",
        edges.len()
    );
    let found = loops(&edges);
    assert!(found.is_empty(), "import loops: {found:#?}");
}

#[test]
fn sql_is_written_only_under_server_db() {
    let mut files = Vec::new();
    rust_files(&server(), &mut files);
    let statement = [
        "\"SELECT ",
        "\"INSERT ",
        "\"UPDATE ",
        "\"DELETE FROM",
        "\"CREATE ",
        "\"ALTER ",
        "\"WITH ",
        "\"LISTEN ",
        "\"NOTIFY ",
        "\"PRAGMA ",
    ];
    let calls = [
        "tx.execute(",
        "tx.query(",
        "tx.query_row(",
        "tx.query_opt(",
        "tx.batch(",
        ".batch_execute(",
    ];
    let mut outside = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(server().join("db"))) {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if statement.iter().chain(&calls).any(|s| line.contains(s)) {
                outside.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "SQL outside server/db/:\n{}",
        outside.join("\n")
    );
}
