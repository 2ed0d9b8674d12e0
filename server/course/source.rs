//! Where the course text is read from: the copy of `content/` embedded in the binary (so
//! `gpulab` serves the course from any directory), or a folder on disk given with
//! `--content` (for authors editing lessons, and for tests with broken fixture courses).

use std::path::{Path, PathBuf};

#[derive(rust_embed::Embed)]
#[folder = "content/"]
struct EmbeddedContent;

/// A place lesson files are read from.
#[derive(Debug, Clone)]
pub enum ContentSource {
    /// The `content/` folder as it was when the binary was built.
    Embedded,
    /// A folder on disk with a `course.toml` at its root.
    Dir(PathBuf),
}

impl ContentSource {
    /// The source for an optional `--content` folder.
    pub fn from_option(dir: Option<&Path>) -> Self {
        dir.map_or(Self::Embedded, |d| Self::Dir(d.to_path_buf()))
    }

    /// How a file of this source is named in problem messages.
    pub fn display_path(&self, relative: &str) -> String {
        match self {
            Self::Embedded => format!("content/{relative}"),
            Self::Dir(dir) => dir.join(relative).display().to_string(),
        }
    }

    /// The files directly in folder `dir` whose names end with `suffix`, as relative
    /// paths in name order; empty when the folder does not exist.
    pub fn list(&self, dir: &str, suffix: &str) -> Vec<String> {
        let prefix = format!("{dir}/");
        let mut names: Vec<String> = match self {
            Self::Embedded => EmbeddedContent::iter()
                .map(|p| p.into_owned())
                .filter(|p| {
                    p.strip_prefix(&prefix)
                        .is_some_and(|rest| !rest.contains('/'))
                })
                .collect(),
            Self::Dir(root) => std::fs::read_dir(root.join(dir))
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .filter(|e| e.path().is_file())
                        .filter_map(|e| e.file_name().into_string().ok())
                        .map(|name| format!("{prefix}{name}"))
                        .collect()
                })
                .unwrap_or_default(),
        };
        names.retain(|n| n.ends_with(suffix));
        names.sort();
        names
    }

    /// Reads a UTF-8 file; `Ok(None)` when it does not exist.
    pub fn read(&self, relative: &str) -> Result<Option<String>, String> {
        match self {
            Self::Embedded => match EmbeddedContent::get(relative) {
                None => Ok(None),
                Some(file) => String::from_utf8(file.data.into_owned())
                    .map(Some)
                    .map_err(|_| "file is not valid UTF-8".to_string()),
            },
            Self::Dir(dir) => match std::fs::read(dir.join(relative)) {
                Ok(bytes) => String::from_utf8(bytes)
                    .map(Some)
                    .map_err(|_| "file is not valid UTF-8".to_string()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.to_string()),
            },
        }
    }
}
