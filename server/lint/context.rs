//! Where a node sits in its own function, read from the syntax alone: the loops around
//! it (only the loop *body* counts: `for x in y.tolist():` evaluates its iterable once),
//! whether it runs under `torch.no_grad()` / `torch.inference_mode()` (a `with` block or
//! a decorator), whether a periodic `if step % N == 0` guards it, and whether it sits in
//! a branch that leaves the loop (`raise`, `break`, `sys.exit`) or in an `except`
//! clause, which run once rather than every pass. Scopes stop at a `def`, `lambda` or
//! `class`: a helper defined inside a loop is not in that loop. Which loop is the step
//! loop, and what runs in it through calls, is [`super::flow`]'s question.

use tree_sitter::Node;

use super::parse::{Script, children, contains, preorder};

/// Node kinds that start a new scope.
const SCOPES: [&str; 3] = ["function_definition", "lambda", "class_definition"];

/// The loops whose body holds `node`, innermost first, within its own scope.
pub fn loops(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut current = node;
    while let Some(parent) = current.parent() {
        if SCOPES.contains(&parent.kind()) {
            break;
        }
        if matches!(parent.kind(), "for_statement" | "while_statement")
            && parent
                .child_by_field_name("body")
                .is_some_and(|body| contains(body, node))
        {
            out.push(parent);
        }
        current = parent;
    }
    out
}

/// The function, lambda or class holding `node`, or `None` at module level.
pub fn scope(node: Node) -> Option<Node> {
    let mut current = node;
    while let Some(parent) = current.parent() {
        if SCOPES.contains(&parent.kind()) {
            return Some(parent);
        }
        current = parent;
    }
    None
}

/// Every node under `node` in its own scope (not inside a nested `def`, `lambda` or
/// `class`; the nested definition's own node is included), parents first.
pub fn same_scope(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    loop {
        let current = cursor.node();
        out.push(current);
        let descend = current == node || !SCOPES.contains(&current.kind());
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.node() == node {
                return out;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return out;
            }
        }
    }
}

/// The calls under `node`, in its own scope.
pub fn calls_in(node: Node) -> impl Iterator<Item = Node> {
    same_scope(node).into_iter().filter(|n| n.kind() == "call")
}

/// Whether `node` runs with gradients off: inside `with torch.no_grad():` or
/// `with torch.inference_mode():`, or in a function decorated with either.
pub fn under_no_grad(script: &Script, node: Node) -> bool {
    let no_grad = |text: &str| text.contains("no_grad") || text.contains("inference_mode");
    let mut current = node;
    while let Some(parent) = current.parent() {
        match parent.kind() {
            "with_statement" => {
                let body = parent.child_by_field_name("body");
                if body.is_some_and(|b| contains(b, node))
                    && let Some(clause) = parent.named_child(0)
                    && no_grad(script.text(clause))
                {
                    return true;
                }
            }
            "decorated_definition"
                if children(parent)
                    .into_iter()
                    .filter(|c| c.kind() == "decorator")
                    .any(|d| no_grad(script.text(d))) =>
            {
                return true;
            }
            _ => {}
        }
        current = parent;
    }
    false
}

/// Whether something between `node` and `until` (exclusive) makes `node` run on some
/// passes only: an `if` testing a remainder (`if step % 100 == 0:`), a branch that
/// leaves the loop or the program (its last statement is `break`, `raise`, `return`
/// when `leaving_returns`, `sys.exit(...)`), or an `except` clause.
pub fn not_every_pass(script: &Script, node: Node, until: Node, leaving_returns: bool) -> bool {
    let mut current = node;
    while let Some(parent) = current.parent() {
        if parent == until {
            return false;
        }
        match parent.kind() {
            "if_statement" | "elif_clause" => {
                if let Some(condition) = parent.child_by_field_name("condition")
                    && !contains(condition, node)
                    && (is_periodic(script, condition)
                        || leaves(script, parent, node, leaving_returns))
                {
                    return true;
                }
            }
            "else_clause" if leaves(script, parent, node, leaving_returns) => return true,
            "except_clause" => return true,
            _ => {}
        }
        current = parent;
    }
    false
}

/// Whether `condition` tests a remainder, as in `step % 100 == 0`.
fn is_periodic(script: &Script, condition: Node) -> bool {
    preorder(condition).into_iter().any(|n| {
        n.kind() == "binary_operator"
            && n.child_by_field_name("operator")
                .is_some_and(|op| script.text(op) == "%")
    })
}

/// Whether the block of `branch` (an `if`, `elif` or `else`) holding `node` ends by
/// leaving: its last statement is `break`, `raise`, `return` (when `returns`) or a call
/// to `sys.exit`, `exit`, `quit` or `os._exit`.
fn leaves(script: &Script, branch: Node, node: Node, returns: bool) -> bool {
    let Some(block) = children(branch)
        .into_iter()
        .find(|c| c.kind() == "block" && contains(*c, node))
    else {
        return false;
    };
    let Some(last) = children(block).into_iter().last() else {
        return false;
    };
    match last.kind() {
        "break_statement" | "raise_statement" => true,
        "return_statement" => returns,
        "expression_statement" => last.named_child(0).is_some_and(|call| {
            call.kind() == "call"
                && matches!(
                    script.callee(call).as_str(),
                    "sys.exit" | "exit" | "quit" | "os._exit"
                )
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn with_call<R>(source: &str, method: &str, f: impl FnOnce(&Script, Node) -> R) -> R {
        let script = Script::parse(source, Duration::from_secs(5)).unwrap();
        let call = script
            .calls()
            .into_iter()
            .find(|c| script.method(*c) == method)
            .expect("the call is in the source");
        f(&script, call)
    }

    fn skipped(source: &str) -> bool {
        with_call(source, "probe", |script, call| {
            let outer = *loops(call).last().expect("in a loop");
            not_every_pass(script, call, outer, true)
        })
    }

    const LOOP: &str = "for step in range(9):\n";

    #[test]
    fn a_periodic_if_an_exit_branch_and_an_except_clause_run_on_some_passes() {
        assert!(skipped(&format!(
            "{LOOP}    if step % 100 == 0 and rank == 0:\n        probe()\n"
        )));
        assert!(!skipped(&format!(
            "{LOOP}    if verbose:\n        probe()\n"
        )));
        assert!(skipped(&format!(
            "{LOOP}    if bad:\n        probe()\n        sys.exit(1)\n"
        )));
        assert!(skipped(&format!(
            "{LOOP}    if bad:\n        pass\n    else:\n        probe()\n        break\n"
        )));
        assert!(!skipped(&format!(
            "{LOOP}    if bad:\n        probe()\n        continue\n"
        )));
        assert!(skipped(&format!(
            "{LOOP}    try:\n        x = 1\n    except ValueError:\n        probe()\n"
        )));
    }

    #[test]
    fn loops_stop_at_a_helper_and_skip_the_iterable() {
        let helper = format!("{LOOP}    def log():\n        probe()\n");
        assert!(with_call(&helper, "probe", |_, call| loops(call).is_empty()));
        let iterable = "for x in loader.probe():\n    pass\n";
        assert!(with_call(iterable, "probe", |_, call| loops(call).is_empty()));
    }

    #[test]
    fn no_grad_by_block_or_decorator() {
        let block = "with torch.no_grad():\n    probe()\n";
        assert!(with_call(block, "probe", under_no_grad));
        let decorated = "@torch.inference_mode()\ndef evaluate():\n    probe()\n";
        assert!(with_call(decorated, "probe", under_no_grad));
        assert!(!with_call("probe()\n", "probe", under_no_grad));
    }
}
