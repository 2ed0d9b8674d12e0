//! Tests of [`super`]: the search order on Linux and on Windows, each from an
//! environment built in a temporary folder.

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
        ..SearchEnv::empty(Os::Linux)
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
        virtual_env: Some(root.path().join("active")),
        conda_prefix: Some(root.path().join("conda")),
        cwd: Some(root.path().join("work")),
        home: Some(root.path().join("home")),
        pyenv_root: Some(root.path().join("home/.pyenv")),
        python_site_packages: vec![python_own.clone(), active.clone()],
        ..SearchEnv::empty(Os::Linux)
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
        ..SearchEnv::empty(Os::Linux)
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

#[test]
fn windows_toolkits_come_from_cuda_path_then_this_majors_installs_newest_first() {
    let root = tempfile::tempdir().unwrap();
    let program_files = root.path().join("Program Files");
    let toolkits = program_files.join("NVIDIA GPU Computing Toolkit/CUDA");
    for version in ["v12.4", "v12.10", "v12.9", "v13.0"] {
        std::fs::create_dir_all(toolkits.join(version).join("bin")).unwrap();
    }
    let chosen = root.path().join("chosen");
    let env = SearchEnv {
        cuda_roots: vec![chosen.clone()],
        cuda_versioned_roots: vec![
            ("CUDA_PATH_V13_0".into(), toolkits.join("v13.0")),
            ("CUDA_PATH_V12_4".into(), toolkits.join("v12.4")),
            ("CUDA_PATH_V12_9".into(), toolkits.join("v12.9")),
        ],
        program_files: Some(program_files),
        ..SearchEnv::empty(Os::Windows)
    };
    let bins = |v: &str| {
        [
            toolkits.join(v).join("bin/x64"),
            toolkits.join(v).join("bin"),
        ]
    };
    let mut expected = vec![chosen.join("bin/x64"), chosen.join("bin")];
    for v in ["v12.9", "v12.4", "v12.10"] {
        expected.extend(bins(v));
    }
    assert_eq!(toolkit_dirs(&env, 12), expected);
    assert!(toolkit_dirs(&env, 13).contains(&toolkits.join("v13.0/bin/x64")));
    assert!(!toolkit_dirs(&env, 13).contains(&toolkits.join("v12.9/bin")));
}

#[test]
fn windows_pythons_are_found_where_their_installers_put_them() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("Users/learner");
    let packages = |prefix: PathBuf| {
        let dir = prefix.join("Lib/site-packages");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    };
    let project = packages(root.path().join("course/.venv"));
    let user = home.join("AppData/Roaming/Python/Python312/site-packages");
    std::fs::create_dir_all(&user).unwrap();
    let pyenv = packages(home.join(".pyenv/pyenv-win/versions/3.12.4"));
    let python_org_old = packages(home.join("AppData/Local/Programs/Python/Python39"));
    let python_org = packages(home.join("AppData/Local/Programs/Python/Python312"));
    let conda = packages(home.join("miniconda3"));
    let env = SearchEnv {
        cwd: Some(root.path().join("course")),
        home: Some(home.clone()),
        pyenv_root: Some(home.join(".pyenv")),
        app_data: Some(home.join("AppData/Roaming")),
        local_app_data: Some(home.join("AppData/Local")),
        ..SearchEnv::empty(Os::Windows)
    };
    let found = site_packages(&env);
    let order = [
        &project,
        &user,
        &pyenv,
        &python_org,
        &python_org_old,
        &conda,
    ];
    let at = |d: &PathBuf| found.iter().position(|f| f == d);
    for pair in order.windows(2) {
        assert!(
            at(pair[0]).unwrap() < at(pair[1]).unwrap(),
            "{:?} before {:?}: {found:?}",
            pair[0],
            pair[1]
        );
    }
    assert!(
        !found
            .iter()
            .any(|d| d.to_string_lossy().contains("lib/python")),
        "no Unix layout on Windows: {found:?}"
    );
}

#[test]
fn the_environment_gpulab_was_pip_installed_into_is_searched_without_being_activated() {
    // Colab's layout: PyTorch's CUDA 12 wheels under dist-packages of the Python that
    // also holds the gpulab wheel's executable (there /usr/local/bin/gpulab).
    let root = tempfile::tempdir().unwrap();
    let prefix = root.path().join("usr/local");
    let packages = prefix.join("lib/python3.12/dist-packages");
    std::fs::create_dir_all(packages.join("nvidia/cuda_nvrtc/lib")).unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let exe = prefix.join("bin/gpulab");
    assert_eq!(installed_prefix(&exe, Os::Linux), Some(prefix.clone()));
    let env = SearchEnv {
        own_prefix: installed_prefix(&exe, Os::Linux),
        ..SearchEnv::empty(Os::Linux)
    };
    assert!(
        site_packages(&env).contains(&packages),
        "{:?}",
        site_packages(&env)
    );
    // A venv's gpulab (pyvenv.cfg beside bin/) comes right after the activated one.
    let venv = root.path().join("kernel-venv");
    let venv_packages = packages_in(&venv);
    std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    let active = packages_in(&root.path().join("active"));
    let project = packages_in(&root.path().join("work/.venv"));
    let env = SearchEnv {
        virtual_env: Some(root.path().join("active")),
        own_prefix: installed_prefix(&venv.join("bin/gpulab"), Os::Linux),
        cwd: Some(root.path().join("work")),
        ..SearchEnv::empty(Os::Linux)
    };
    let found = site_packages(&env);
    let at = |d: &PathBuf| found.iter().position(|f| f == d).unwrap();
    assert!(at(&active) < at(&venv_packages) && at(&venv_packages) < at(&project));
}

#[test]
fn a_gpulab_outside_a_python_environment_adds_no_prefix() {
    let root = tempfile::tempdir().unwrap();
    // cargo's build folder, and a bin/ that is not a Python environment's.
    assert_eq!(
        installed_prefix(&root.path().join("target/debug/gpulab"), Os::Linux),
        None
    );
    std::fs::create_dir_all(root.path().join("opt/bin")).unwrap();
    assert_eq!(
        installed_prefix(&root.path().join("opt/bin/gpulab"), Os::Linux),
        None
    );
    // Windows: pip's Scripts folder beside Lib.
    let venv = root.path().join("venv");
    std::fs::create_dir_all(venv.join("Lib/site-packages")).unwrap();
    assert_eq!(
        installed_prefix(&venv.join("Scripts/gpulab.exe"), Os::Windows),
        Some(venv.clone())
    );
    assert_eq!(
        installed_prefix(&venv.join("bin/gpulab.exe"), Os::Windows),
        None
    );
}
