//! The course's own code through the script doctor: every `python` block of every
//! lesson is linted in the context of the lesson's earlier blocks (the lesson's `.py`
//! download, which runs them in order) and on its own (what a learner pastes into the
//! page). A block draws no finding unless its fence marks the pitfall it shows on
//! purpose (```` ```python lint=GL101 ````), and a marked pitfall must be found.

use std::collections::BTreeSet;

use gpulab::course::outline::CodeBlock;
use gpulab::course::{ContentSource, Course};
use gpulab::lint;

use crate::support::repo_path;

/// The codes a block's fence marks as shown on purpose.
fn marked(block: &CodeBlock) -> BTreeSet<String> {
    block
        .info
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("lint="))
        .flat_map(|codes| codes.split(','))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_python_block_is_clean_but_for_the_pitfalls_it_marks() {
    let course = Course::load(&ContentSource::Dir(repo_path("content"))).expect("loads");
    let mut blocks_checked = 0;
    let mut problems = Vec::new();
    for lesson in &course.lessons {
        let blocks: Vec<&CodeBlock> = lesson
            .outline
            .code
            .iter()
            .filter(|c| matches!(c.lang.as_str(), "python" | "py"))
            .collect();
        let mut script = String::new();
        let mut first_lines = Vec::new();
        for block in &blocks {
            first_lines.push(script.lines().count() + 1);
            script.push_str(block.code.trim_end_matches('\n'));
            script.push('\n');
        }
        let in_context = lint::check(&script)
            .unwrap_or_else(|e| panic!("lesson {}'s code is not valid Python: {e}", lesson.slug));
        for (i, block) in blocks.iter().enumerate() {
            let marks = marked(block);
            let (first, next) = (first_lines[i], first_lines.get(i + 1).copied());
            let alone = lint::check(&block.code)
                .unwrap_or_else(|e| panic!("a block of {} is not valid Python: {e}", lesson.slug));
            // A pitfall may show only with the lesson's earlier blocks (where `device`
            // is a GPU) or only alone (a block that assumes CUDA after earlier ones
            // checked for it): the two views together must give exactly the marks.
            let found: BTreeSet<String> = in_context
                .iter()
                .filter(|f| f.line >= first && next.is_none_or(|n| f.line < n))
                .chain(&alone)
                .map(|f| f.code.to_string())
                .collect();
            if found != marks {
                let first_code_line = block.code.lines().next().unwrap_or_default();
                problems.push(format!(
                    "{} block {} (`{first_code_line}`): marked {marks:?}, found {found:?} ({alone:?} of them alone)",
                    lesson.slug,
                    i + 1
                ));
            }
            blocks_checked += 1;
        }
    }
    assert!(
        blocks_checked >= 40,
        "only {blocks_checked} python blocks found"
    );
    assert!(problems.is_empty(), "{problems:#?}");
}
