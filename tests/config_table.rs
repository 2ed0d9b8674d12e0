//! The README's configuration table is the flags' own: rendered from `Config` (flag,
//! environment variable, default, first sentence of the help) and compared with the
//! block between the `config-table` markers. When a flag changes, paste the table this
//! test prints.

#[test]
fn the_readme_table_is_the_flags_table() {
    let readme = std::fs::read_to_string(crate::support::repo_path("README.md")).unwrap();
    let (start, end) = ("<!-- config-table:start -->\n", "<!-- config-table:end -->");
    let begin = readme
        .find(start)
        .expect("README.md has the config-table:start marker")
        + start.len();
    let stop = readme
        .find(end)
        .expect("README.md has the config-table:end marker");
    let expected = gpulab::config::markdown_table();
    assert_eq!(
        &readme[begin..stop],
        expected,
        "README.md's configuration table differs from the flags; replace it with:\n{expected}"
    );
    for limit in ["--max-train-steps", "--queue-length", "--gpu-concurrency"] {
        assert!(expected.contains(limit), "{limit} is in the table");
    }
}
