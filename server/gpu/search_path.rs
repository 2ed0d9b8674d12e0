//! Where NVRTC and cuBLAS may be, beyond the loader's own path: the toolkit's folders,
//! then every Python environment a newcomer may have put NVIDIA's pip wheels in —
//! activated or not. `uv venv` and most editors make a `.venv` in the project folder
//! and never activate it; pyenv keeps its Pythons under `~/.pyenv/versions`; and a
//! `pip install` with a Python built elsewhere lands in that Python's own
//! site-packages, which only it can name (`site.getsitepackages()`). And `gpulab`
//! itself may come from a wheel (`pip install gpulab`): the environment it was installed
//! into is searched right after the activated ones, so the NVIDIA wheels installed
//! beside it are found whether or not that environment is active (a notebook kernel's
//! venv, `pipx`, Colab's `/usr/local` with PyTorch's `nvidia/*/lib` in `dist-packages`).
//!
//! Windows puts all of these elsewhere: the CUDA Toolkit under `%ProgramFiles%\NVIDIA
//! GPU Computing Toolkit\CUDA\v12.9` (named by `CUDA_PATH` and `CUDA_PATH_V12_9`),
//! its DLLs in `bin` (`bin\x64` from CUDA 13 on); a Python environment's packages in
//! `Lib\site-packages`; python.org's Pythons under `%LOCALAPPDATA%\Programs\Python`,
//! pip's `--user` packages under `%APPDATA%\Python\Python3XY`, pyenv-win's under
//! `~\.pyenv\pyenv-win\versions`, and conda's base in `~\miniconda3` or `~\anaconda3`.
//!
//! [`python_prefixes`] is the order, as a pure function of the environment
//! ([`SearchEnv`], which names the OS), so each OS's rule is tested on any machine
//! without touching its Pythons.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::platform::Os;

/// What the search depends on, read from the process by [`SearchEnv::current`].
#[derive(Debug, Clone)]
pub struct SearchEnv {
    /// Whose folder conventions apply.
    pub os: Os,
    /// `CUDA_HOME` and `CUDA_PATH`, when set.
    pub cuda_roots: Vec<PathBuf>,
    /// Windows: the toolkit installer's `CUDA_PATH_V<major>_<minor>` variables, as
    /// (name, folder).
    pub cuda_versioned_roots: Vec<(String, PathBuf)>,
    /// `VIRTUAL_ENV` (an activated virtualenv).
    pub virtual_env: Option<PathBuf>,
    /// `CONDA_PREFIX` (an activated conda environment).
    pub conda_prefix: Option<PathBuf>,
    /// The Python environment this executable was installed into by its wheel: the
    /// folder above the `bin` (Windows: `Scripts`) that holds it, when it is one.
    pub own_prefix: Option<PathBuf>,
    /// The working directory: it and each parent may hold a `.venv`.
    pub cwd: Option<PathBuf>,
    /// `HOME` (on Windows `USERPROFILE` when `HOME` is unset).
    pub home: Option<PathBuf>,
    /// `PYENV_ROOT`, else `~/.pyenv` (pyenv-win keeps its Pythons one level down).
    pub pyenv_root: Option<PathBuf>,
    /// Windows: `ProgramFiles` (the CUDA Toolkit's installs).
    pub program_files: Option<PathBuf>,
    /// Windows: `APPDATA` (pip's `--user` packages).
    pub app_data: Option<PathBuf>,
    /// Windows: `LOCALAPPDATA` (python.org's installs).
    pub local_app_data: Option<PathBuf>,
    /// The site-packages folders the machine's Python itself reports.
    pub python_site_packages: Vec<PathBuf>,
}

impl Default for SearchEnv {
    fn default() -> Self {
        Self::empty(Os::CURRENT)
    }
}

impl SearchEnv {
    /// Nothing set, on `os` (what tests start from).
    pub fn empty(os: Os) -> Self {
        Self {
            os,
            cuda_roots: Vec::new(),
            cuda_versioned_roots: Vec::new(),
            virtual_env: None,
            conda_prefix: None,
            own_prefix: None,
            cwd: None,
            home: None,
            pyenv_root: None,
            program_files: None,
            app_data: None,
            local_app_data: None,
            python_site_packages: Vec::new(),
        }
    }

    /// This process's environment (asks Python once per process).
    pub fn current() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let os = Os::CURRENT;
        let home =
            var("HOME").or_else(|| (os == Os::Windows).then(|| var("USERPROFILE")).flatten());
        let cuda_versioned_roots = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, PathBuf::from(value))))
            .filter(|(name, _)| name.to_ascii_uppercase().starts_with("CUDA_PATH_V"))
            .collect();
        Self {
            os,
            cuda_roots: ["CUDA_HOME", "CUDA_PATH"]
                .iter()
                .filter_map(|v| var(v))
                .collect(),
            cuda_versioned_roots,
            virtual_env: var("VIRTUAL_ENV"),
            conda_prefix: var("CONDA_PREFIX"),
            own_prefix: std::env::current_exe()
                .ok()
                .and_then(|exe| installed_prefix(&exe, os)),
            cwd: std::env::current_dir().ok(),
            pyenv_root: var("PYENV_ROOT").or_else(|| home.as_ref().map(|h| h.join(".pyenv"))),
            home,
            program_files: var("ProgramFiles"),
            app_data: var("APPDATA"),
            local_app_data: var("LOCALAPPDATA"),
            python_site_packages: python_site_packages(os).to_vec(),
        }
    }
}

/// The Python environment whose scripts folder holds `exe` (pip puts a wheel's
/// executables in `<prefix>/bin`, on Windows `<prefix>\Scripts`), or `None` when `exe`
/// is not in one (a cargo build, an unpacked archive).
pub fn installed_prefix(exe: &Path, os: Os) -> Option<PathBuf> {
    let scripts = exe.parent()?;
    let expected = if os == Os::Windows { "Scripts" } else { "bin" };
    let named = scripts
        .file_name()
        .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(expected));
    let prefix = scripts.parent()?;
    let is_python = if os == Os::Windows {
        prefix.join("Lib").is_dir()
    } else {
        prefix.join("pyvenv.cfg").is_file() || has_python_lib(prefix)
    };
    (named && is_python).then(|| prefix.to_path_buf())
}

/// Whether `prefix/lib` holds a `python3.*` folder.
fn has_python_lib(prefix: &Path) -> bool {
    std::fs::read_dir(prefix.join("lib")).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("python3"))
    })
}

/// The numbers in a folder name, compared group by group for "newest first":
/// `v12.10` > `v12.9`, `3.12.4` > `3.11.9`, `Python312` > `Python39`.
fn version_key(path: &Path) -> Vec<u64> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.split(|c: char| !c.is_ascii_digit())
        .filter(|g| !g.is_empty())
        .filter_map(|g| g.parse().ok())
        .collect()
}

/// The folders in `dir` whose names start with `prefix`, newest version first.
fn versions_in(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|p| std::cmp::Reverse(version_key(p)));
    found
}

/// Folders the CUDA toolkit puts its libraries in for `major`, in search order.
pub fn toolkit_dirs(env: &SearchEnv, major: u32) -> Vec<PathBuf> {
    if env.os != Os::Windows {
        let mut dirs: Vec<PathBuf> = env.cuda_roots.iter().map(|r| r.join("lib64")).collect();
        dirs.push(PathBuf::from(format!("/usr/local/cuda-{major}/lib64")));
        dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
        return dirs;
    }
    // CUDA_HOME/CUDA_PATH first (the toolkit the user chose), then this major's own
    // CUDA_PATH_V<major>_<minor>, then every v<major>.* installed, newest first.
    let mut roots: Vec<PathBuf> = env.cuda_roots.clone();
    let mut versioned: Vec<&(String, PathBuf)> = env
        .cuda_versioned_roots
        .iter()
        .filter(|(name, _)| {
            name.to_ascii_uppercase()
                .strip_prefix("CUDA_PATH_V")
                .and_then(|rest| rest.split('_').next())
                == Some(major.to_string().as_str())
        })
        .collect();
    versioned.sort_by_key(|(name, _)| std::cmp::Reverse(version_key(Path::new(name))));
    roots.extend(versioned.into_iter().map(|(_, dir)| dir.clone()));
    if let Some(program_files) = &env.program_files {
        let toolkits = program_files
            .join("NVIDIA GPU Computing Toolkit")
            .join("CUDA");
        roots.extend(versions_in(&toolkits, &format!("v{major}.")));
    }
    let mut dirs = Vec::new();
    for root in roots {
        for bin in [root.join("bin").join("x64"), root.join("bin")] {
            if !dirs.contains(&bin) {
                dirs.push(bin);
            }
        }
    }
    dirs
}

/// Python prefixes (folders with a `lib/python3.*`, on Windows a `Lib`), in search
/// order: the activated virtualenv and conda environment, the one `gpulab` was
/// installed into by its wheel, then a `.venv` in the
/// working directory or any parent (nearest first), the user's own (`~/.local`; on
/// Windows `%APPDATA%\Python\Python3XY`), pyenv's Pythons, then the system's
/// (on Windows python.org's and conda's installs).
pub fn python_prefixes(env: &SearchEnv) -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = Vec::new();
    prefixes.extend(env.virtual_env.clone());
    prefixes.extend(env.conda_prefix.clone());
    prefixes.extend(env.own_prefix.clone());
    if let Some(cwd) = &env.cwd {
        prefixes.extend(cwd.ancestors().map(|dir| dir.join(".venv")));
    }
    if env.os == Os::Windows {
        if let Some(app_data) = &env.app_data {
            prefixes.extend(versions_in(&app_data.join("Python"), "Python3"));
        }
        if let Some(root) = &env.pyenv_root {
            prefixes.extend(versions_in(&root.join("pyenv-win").join("versions"), "3"));
        }
        if let Some(local) = &env.local_app_data {
            prefixes.extend(versions_in(
                &local.join("Programs").join("Python"),
                "Python3",
            ));
        }
        if let Some(home) = &env.home {
            prefixes.extend(["miniconda3", "anaconda3", "miniforge3"].map(|d| home.join(d)));
        }
        return prefixes;
    }
    prefixes.extend(env.home.as_ref().map(|h| h.join(".local")));
    if let Some(root) = &env.pyenv_root {
        prefixes.extend(versions_in(&root.join("versions"), ""));
    }
    prefixes.extend(["/usr/local", "/usr", "/opt/conda"].map(PathBuf::from));
    prefixes
}

/// Every `site-packages` / `dist-packages` folder to look in, in search order: those
/// under [`python_prefixes`], then those Python reports that are not among them.
pub fn site_packages(env: &SearchEnv) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for prefix in python_prefixes(env) {
        if env.os == Os::Windows {
            // A venv or an install: Lib\site-packages; pip's --user folder:
            // site-packages right below Python3XY.
            found.push(prefix.join("Lib").join("site-packages"));
            found.push(prefix.join("site-packages"));
            continue;
        }
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

/// The site-packages folders of the machine's Python (its own, and the user's), asked
/// once per process: `python3` on Linux and macOS; on Windows the `py` launcher, then
/// `python` (a bare `python3` there may be the Store's placeholder). Empty without one.
fn python_site_packages(os: Os) -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let script =
            "import site\nfor d in site.getsitepackages() + [site.getusersitepackages()]: print(d)";
        let pythons: &[(&str, &[&str])] = if os == Os::Windows {
            &[("py", &["-3"]), ("python", &[])]
        } else {
            &[("python3", &[])]
        };
        pythons
            .iter()
            .find_map(|(program, args)| {
                std::process::Command::new(program)
                    .args(*args)
                    .args(["-c", script])
                    .stdin(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .output()
                    .ok()
                    .filter(|out| out.status.success())
            })
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
#[path = "search_path_tests.rs"]
mod tests;
