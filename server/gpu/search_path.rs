//! Where NVRTC and cuBLAS may be, beyond the loader's own path: the toolkit's folders,
//! then every Python environment a newcomer may have put NVIDIA's pip wheels in —
//! activated or not. `uv venv` and most editors make a `.venv` in the project folder
//! and never activate it; pyenv keeps its Pythons under `~/.pyenv/versions`; and a
//! `pip install` with a Python built elsewhere lands in that Python's own
//! site-packages, which only it can name (`site.getsitepackages()`).
//!
//! [`python_prefixes`] is the order, as a pure function of the environment
//! ([`SearchEnv`]), so the rule is tested without touching this machine's Pythons.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What the search depends on, read from the process by [`SearchEnv::current`].
#[derive(Debug, Clone, Default)]
pub struct SearchEnv {
    /// `CUDA_HOME` and `CUDA_PATH`, when set.
    pub cuda_roots: Vec<PathBuf>,
    /// `VIRTUAL_ENV` (an activated virtualenv).
    pub virtual_env: Option<PathBuf>,
    /// `CONDA_PREFIX` (an activated conda environment).
    pub conda_prefix: Option<PathBuf>,
    /// The working directory: it and each parent may hold a `.venv`.
    pub cwd: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `PYENV_ROOT`, else `~/.pyenv`.
    pub pyenv_root: Option<PathBuf>,
    /// The site-packages folders `python3` itself reports.
    pub python_site_packages: Vec<PathBuf>,
}

impl SearchEnv {
    /// This process's environment (asks `python3` once per process).
    pub fn current() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME");
        Self {
            cuda_roots: ["CUDA_HOME", "CUDA_PATH"]
                .iter()
                .filter_map(|v| var(v))
                .collect(),
            virtual_env: var("VIRTUAL_ENV"),
            conda_prefix: var("CONDA_PREFIX"),
            cwd: std::env::current_dir().ok(),
            pyenv_root: var("PYENV_ROOT").or_else(|| home.as_ref().map(|h| h.join(".pyenv"))),
            home,
            python_site_packages: python3_site_packages().to_vec(),
        }
    }
}

/// Folders the CUDA toolkit puts its libraries in for `major`, in search order.
pub fn toolkit_dirs(env: &SearchEnv, major: u32) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = env.cuda_roots.iter().map(|r| r.join("lib64")).collect();
    dirs.push(PathBuf::from(format!("/usr/local/cuda-{major}/lib64")));
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs
}

/// Python prefixes (folders with a `lib/python3.*`), in search order: the activated
/// virtualenv and conda environment, then a `.venv` in the working directory or any
/// parent (nearest first), `~/.local` (pip's `--user`), pyenv's Pythons, then the
/// system's.
pub fn python_prefixes(env: &SearchEnv) -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = Vec::new();
    prefixes.extend(env.virtual_env.clone());
    prefixes.extend(env.conda_prefix.clone());
    if let Some(cwd) = &env.cwd {
        prefixes.extend(cwd.ancestors().map(|dir| dir.join(".venv")));
    }
    prefixes.extend(env.home.as_ref().map(|h| h.join(".local")));
    if let Some(root) = &env.pyenv_root {
        let mut versions: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        versions.sort();
        versions.reverse(); // newest version first, by name
        prefixes.extend(versions);
    }
    prefixes.extend(["/usr/local", "/usr", "/opt/conda"].map(PathBuf::from));
    prefixes
}

/// Every `site-packages` / `dist-packages` folder to look in, in search order: those
/// under [`python_prefixes`], then those `python3` reports that are not among them.
pub fn site_packages(env: &SearchEnv) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for prefix in python_prefixes(env) {
        let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for python in pythons {
            for packages in ["site-packages", "dist-packages"] {
                found.push(python.join(packages));
            }
        }
    }
    for dir in &env.python_site_packages {
        if !found.contains(dir) {
            found.push(dir.clone());
        }
    }
    found.retain(|d| d.is_dir());
    found
}

/// The site-packages folders of the `python3` on `PATH` (its own, and the user's),
/// asked once per process; empty without a `python3`.
fn python3_site_packages() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let script =
            "import site\nfor d in site.getsitepackages() + [site.getusersitepackages()]: print(d)";
        std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| {
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| Path::new(l.trim()).to_path_buf())
                    .collect()
            })
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packages_in(prefix: &Path) -> PathBuf {
        let dir = prefix.join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_unactivated_venv_above_the_working_directory_is_searched() {
        let root = tempfile::tempdir().unwrap();
        let project_venv = packages_in(&root.path().join("project/.venv"));
        let work = root.path().join("project/src/deep");
        std::fs::create_dir_all(&work).unwrap();
        let env = SearchEnv {
            cwd: Some(work.clone()),
            ..SearchEnv::default()
        };
        assert!(site_packages(&env).contains(&project_venv));
        let prefixes = python_prefixes(&env);
        let nearest = prefixes
            .iter()
            .position(|p| p == &work.join(".venv"))
            .unwrap();
        let above = prefixes
            .iter()
            .position(|p| p == &root.path().join("project/.venv"))
            .unwrap();
        assert!(nearest < above, "the nearest .venv comes first");
    }

    #[test]
    fn the_order_is_activated_then_project_then_user_then_pyenv_then_system() {
        let root = tempfile::tempdir().unwrap();
        let active = packages_in(&root.path().join("active"));
        let conda = packages_in(&root.path().join("conda"));
        let project = packages_in(&root.path().join("work/.venv"));
        let user = packages_in(&root.path().join("home/.local"));
        let pyenv_old = packages_in(&root.path().join("home/.pyenv/versions/3.11.9"));
        let pyenv_new = packages_in(&root.path().join("home/.pyenv/versions/3.12.4"));
        let python_own = root.path().join("opt/python/lib/python3.13/site-packages");
        std::fs::create_dir_all(&python_own).unwrap();
        let env = SearchEnv {
            cuda_roots: vec![],
            virtual_env: Some(root.path().join("active")),
            conda_prefix: Some(root.path().join("conda")),
            cwd: Some(root.path().join("work")),
            home: Some(root.path().join("home")),
            pyenv_root: Some(root.path().join("home/.pyenv")),
            python_site_packages: vec![python_own.clone(), active.clone()],
        };
        let found = site_packages(&env);
        let at = |d: &PathBuf| found.iter().position(|f| f == d).unwrap();
        let order = [
            &active,
            &conda,
            &project,
            &user,
            &pyenv_new,
            &pyenv_old,
            &python_own,
        ];
        for pair in order.windows(2) {
            assert!(
                at(pair[0]) < at(pair[1]),
                "{:?} before {:?}: {found:?}",
                pair[0],
                pair[1]
            );
        }
        assert_eq!(
            found.iter().filter(|f| **f == active).count(),
            1,
            "python3's own list adds no duplicates"
        );
    }

    #[test]
    fn toolkit_folders_come_from_cuda_home_then_the_usual_places() {
        let env = SearchEnv {
            cuda_roots: vec![PathBuf::from("/opt/cuda-13.0")],
            ..SearchEnv::default()
        };
        assert_eq!(
            toolkit_dirs(&env, 13),
            [
                "/opt/cuda-13.0/lib64",
                "/usr/local/cuda-13/lib64",
                "/usr/local/cuda/lib64"
            ]
            .map(PathBuf::from)
        );
    }
}
