//! Which rules run, as a project chooses them: `--select` / `--ignore` on the command
//! line, or `select` / `ignore` in a `[tool.gpulab]` table of `pyproject.toml` (the
//! nearest one, from the current folder up, that has the table). A selector is a code
//! or a prefix of codes (`GL1` is every sync and timing rule, `GL` all of them); as in
//! ruff, when a select and an ignore both match a code the longer one wins, and an
//! ignore wins a tie. A selector that matches no rule, an unknown key or a value of the
//! wrong type is an error that names it, never silently ignored.

use std::path::{Path, PathBuf};

use super::RULES;

/// The rules a run reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Selectors of the rules to run (every rule when empty).
    pub select: Vec<String>,
    /// Selectors of the rules not to run.
    pub ignore: Vec<String>,
}

impl Default for Selection {
    fn default() -> Self {
        Self {
            select: vec!["GL".into()],
            ignore: Vec::new(),
        }
    }
}

impl Selection {
    /// A selection from selectors, checked against the rule list.
    pub fn new(select: Vec<String>, ignore: Vec<String>) -> Result<Self, String> {
        let select = if select.is_empty() {
            Self::default().select
        } else {
            select
        };
        for selector in select.iter().chain(&ignore) {
            if !RULES.iter().any(|r| r.code.starts_with(selector.as_str())) {
                return Err(format!(
                    "`{selector}` selects no rule (the codes are {})",
                    RULES.iter().map(|r| r.code).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Ok(Self { select, ignore })
    }

    /// Whether findings of `code` are reported.
    pub fn enabled(&self, code: &str) -> bool {
        let longest = |selectors: &[String]| {
            selectors
                .iter()
                .filter(|s| code.starts_with(s.as_str()))
                .map(String::len)
                .max()
        };
        match (longest(&self.select), longest(&self.ignore)) {
            (Some(select), Some(ignore)) => select > ignore,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

/// The `[tool.gpulab]` table of a `pyproject.toml`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolGpulab {
    #[serde(default)]
    select: Vec<String>,
    #[serde(default)]
    ignore: Vec<String>,
}

/// A project's choices, and the file they came from.
#[derive(Debug)]
pub struct ProjectConfig {
    /// The `pyproject.toml` read.
    pub path: PathBuf,
    /// Its `select` (empty when not given).
    pub select: Vec<String>,
    /// Its `ignore`.
    pub ignore: Vec<String>,
}

/// The nearest `pyproject.toml` from `start` upwards that has a `[tool.gpulab]` table,
/// read; `Ok(None)` when there is none.
pub fn find(start: &Path) -> Result<Option<ProjectConfig>, String> {
    for folder in start.ancestors() {
        let path = folder.join("pyproject.toml");
        if path.is_file()
            && let Some(config) = read(&path)?
        {
            return Ok(Some(config));
        }
    }
    Ok(None)
}

/// The `[tool.gpulab]` table of the `pyproject.toml` at `path`, if it has one.
pub fn read(path: &Path) -> Result<Option<ProjectConfig>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read it: {e}", path.display()))?;
    let document: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: not valid TOML: {e}", path.display()))?;
    let Some(table) = document.get("tool").and_then(|t| t.get("gpulab")) else {
        return Ok(None);
    };
    let tool: ToolGpulab = table
        .clone()
        .try_into()
        .map_err(|e| format!("{}: [tool.gpulab]: {e}", path.display()))?;
    Ok(Some(ProjectConfig {
        path: path.to_path_buf(),
        select: tool.select,
        ignore: tool.ignore,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(select: &[&str], ignore: &[&str]) -> Selection {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Selection::new(owned(select), owned(ignore)).unwrap()
    }

    #[test]
    fn the_longer_selector_wins_and_ignore_wins_a_tie() {
        let all = Selection::default();
        assert!(all.enabled("GL101") && all.enabled("GL501"));
        let syncs = selection(&["GL1"], &[]);
        assert!(syncs.enabled("GL103") && !syncs.enabled("GL203"));
        let but_one = selection(&["GL1"], &["GL101"]);
        assert!(!but_one.enabled("GL101") && but_one.enabled("GL102"));
        let back_in = selection(&["GL101"], &["GL1"]);
        assert!(back_in.enabled("GL101") && !back_in.enabled("GL102"));
        let tie = selection(&["GL2"], &["GL2"]);
        assert!(!tie.enabled("GL202"));
    }

    #[test]
    fn a_selector_that_selects_nothing_is_an_error() {
        let error = Selection::new(vec!["E501".into()], Vec::new()).unwrap_err();
        assert!(error.contains("`E501` selects no rule"), "{error}");
    }

    #[test]
    fn pyproject_is_read_and_its_mistakes_named() {
        let dir = std::env::temp_dir().join(format!("gpulab-config-{}", std::process::id()));
        let nested = dir.join("src/train");
        std::fs::create_dir_all(&nested).unwrap();
        let file = dir.join("pyproject.toml");
        std::fs::write(
            &file,
            "[project]\nname = 'x'\n[tool.gpulab]\nignore = ['GL203']\n",
        )
        .unwrap();
        let found = find(&nested).unwrap().expect("found from a subfolder");
        assert_eq!(found.ignore, ["GL203"]);
        std::fs::write(&file, "[tool.gpulab]\nignroe = ['GL203']\n").unwrap();
        let error = find(&nested).unwrap_err();
        assert!(error.contains("unknown field `ignroe`"), "{error}");
        std::fs::write(&file, "[tool.gpulab]\nselect = 'GL1'\n").unwrap();
        assert!(find(&nested).is_err(), "a string where a list belongs");
        std::fs::write(&file, "[tool.ruff]\nline-length = 99\n").unwrap();
        assert!(read(&file).unwrap().is_none(), "no [tool.gpulab] table");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
