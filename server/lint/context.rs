//! Where a node sits, so rules flag what runs every step and nothing else: the loops
//! around it (only the loop *body* counts: `for x in y.tolist():` evaluates its iterable
//! once), whether one of them is a training loop (its body calls `.backward()`), whether
//! it runs under `torch.no_grad()` / `torch.inference_mode()` (a `with` block or a
//! decorator), and whether a periodic `if step % N == 0` guards it. Scopes stop at a
//! `def`, `lambda` or `class`: a helper defined inside a loop is not in that loop.

use tree_sitter::Node;

use super::parse::{Script, contains, preorder};

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

/// Whether the loop's body calls `.backward()` (or `torch.autograd.backward`).
pub fn is_training_loop(script: &Script, loop_node: Node) -> bool {
    if let Some(known) = script.training_loops.borrow().get(&loop_node.id()) {
        return *known;
    }
    let training = loop_node
        .child_by_field_name("body")
        .is_some_and(|body| calls_in(script, body).any(|c| script.method(c) == "backward"));
    script
        .training_loops
        .borrow_mut()
        .insert(loop_node.id(), training);
    training
}

/// The calls under `node`, in its own scope.
pub fn calls_in<'t>(_script: &Script, node: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    same_scope(node).into_iter().filter(|n| n.kind() == "call")
}

/// The innermost training loop whose body holds `node`.
pub fn training_loop<'t>(script: &Script, node: Node<'t>) -> Option<Node<'t>> {
    loops(node)
        .into_iter()
        .find(|l| is_training_loop(script, *l))
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
            "decorated_definition" => {
                let mut cursor = parent.walk();
                if parent
                    .named_children(&mut cursor)
                    .filter(|c| c.kind() == "decorator")
                    .any(|d| no_grad(script.text(d)))
                {
                    return true;
                }
            }
            _ => {}
        }
        current = parent;
    }
    false
}

/// Whether an `if` between `node` and `until` (exclusive) tests a remainder, as in
/// `if step % 100 == 0:`: the guarded code runs every N-th step, not every step.
pub fn periodic(script: &Script, node: Node, until: Node) -> bool {
    let mut current = node;
    while let Some(parent) = current.parent() {
        if parent == until {
            return false;
        }
        if matches!(parent.kind(), "if_statement" | "elif_clause")
            && let Some(condition) = parent.child_by_field_name("condition")
            && !contains(condition, node)
            && preorder(condition).into_iter().any(|n| {
                n.kind() == "binary_operator"
                    && n.child_by_field_name("operator")
                        .is_some_and(|op| script.text(op) == "%")
            })
        {
            return true;
        }
        current = parent;
    }
    false
}

/// Whether `node` runs on every step of a training loop: inside one, with gradients on
/// and not behind a periodic `if`.
pub fn every_training_step(script: &Script, node: Node) -> bool {
    training_loop(script, node)
        .is_some_and(|outer| !under_no_grad(script, node) && !periodic(script, node, outer))
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

    const LOOP: &str =
        "for step, (x, y) in enumerate(loader):\n    loss = f(x, y)\n    loss.backward()\n";

    #[test]
    fn a_call_in_the_loop_body_runs_every_step() {
        let source = format!("{LOOP}    probe(loss)\n");
        assert!(with_call(&source, "probe", every_training_step));
    }

    #[test]
    fn the_iterable_a_helper_and_code_after_the_loop_do_not() {
        let iterable = "for x in loader.probe():\n    x.backward()\n";
        assert!(!with_call(iterable, "probe", every_training_step));
        let helper = format!("{LOOP}    def log():\n        probe(loss)\n");
        assert!(!with_call(&helper, "probe", every_training_step));
        let after = format!("{LOOP}probe(loss)\n");
        assert!(!with_call(&after, "probe", every_training_step));
    }

    #[test]
    fn a_periodic_if_and_no_grad_guard_a_call() {
        let periodic =
            format!("{LOOP}    if step % 100 == 0 and rank == 0:\n        probe(loss)\n");
        assert!(!with_call(&periodic, "probe", every_training_step));
        let plain_if = format!("{LOOP}    if verbose:\n        probe(loss)\n");
        assert!(with_call(&plain_if, "probe", every_training_step));
        let no_grad = format!("{LOOP}    with torch.no_grad():\n        probe(loss)\n");
        assert!(!with_call(&no_grad, "probe", every_training_step));
        let decorated = "@torch.no_grad()\ndef evaluate():\n    for x in data:\n        x.backward()\n        probe(x)\n";
        assert!(!with_call(decorated, "probe", every_training_step));
    }

    #[test]
    fn a_loop_without_backward_is_not_a_training_loop() {
        let eval = "for x, y in loader:\n    out = model(x)\n    probe(out)\n";
        assert!(!with_call(eval, "probe", every_training_step));
    }
}
