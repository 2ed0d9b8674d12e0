//! The rules, grouped by lesson theme; each group is a function from the analysed
//! script ([`Flow`]) to its findings, with its positive and negative fixtures beside it.

mod device;
mod loader;
mod memory;
mod precision;
mod sync;
mod timing;
mod transfer;

use tree_sitter::Node;

use super::Finding;
use super::flow::{Flow, Step};
use super::parse::Script;

/// Every rule's findings on `flow`'s script, unsorted.
pub fn run(flow: &Flow) -> Vec<Finding> {
    let mut out = Vec::new();
    for group in [
        sync::check,
        timing::check,
        transfer::check,
        loader::check,
        memory::check,
        precision::check,
        device::check,
    ] {
        group(flow, &mut out);
    }
    out
}

/// A finding of `code` at `node`.
fn at(script: &Script, node: Node, code: &'static str, message: String) -> Finding {
    let (line, column) = script.position(node);
    Finding {
        code,
        line,
        column,
        message,
    }
}

/// ` (through `log()` at line 12)` when `step` reaches its node through calls, else
/// nothing: the message then names the call in the loop that makes it run every step.
fn through(script: &Script, step: &Step) -> String {
    let Some(call) = step.via.last() else {
        return String::new();
    };
    let (line, _) = script.position(*call);
    format!(
        " (through `{}()`, called at line {line})",
        script.callee(*call)
    )
}

/// Whether `name` names a loss (`loss`, `train_loss`, `lossD`), as scripts spell it.
fn is_loss_name(name: &str) -> bool {
    name.to_ascii_lowercase().contains("loss")
}

/// Whether, in the scope of `node`, the name `name` is ever assigned a plain number
/// (`loss = loss.item()`, `loss = float(out)`), so that later uses are not tensors.
fn assigned_a_number(script: &Script, node: Node, name: &str) -> bool {
    let scope = super::context::scope(node).unwrap_or_else(|| script.tree.root_node());
    if let Some(names) = script.number_names.borrow().get(&scope.id()) {
        return names.contains(name);
    }
    let names: std::collections::HashSet<String> = super::context::same_scope(scope)
        .into_iter()
        .filter(|n| n.kind() == "assignment")
        .filter(|n| {
            n.child_by_field_name("right").is_some_and(|r| {
                let text = script.text(r);
                text.contains(".item()") || text.starts_with("float(") || text.starts_with("int(")
            })
        })
        .filter_map(|n| n.child_by_field_name("left"))
        .map(|l| script.text(l).to_string())
        .collect();
    let found = names.contains(name);
    script.number_names.borrow_mut().insert(scope.id(), names);
    found
}

#[cfg(test)]
pub(crate) mod fixtures {
    use super::super::check;

    /// The codes found in `source`, one per finding.
    pub(crate) fn codes(source: &str) -> Vec<&'static str> {
        check(source)
            .unwrap_or_else(|e| panic!("{e}\n{source}"))
            .into_iter()
            .map(|f| f.code)
            .collect()
    }

    /// Whether `source` has a finding of `code`.
    pub(crate) fn has(source: &str, code: &str) -> bool {
        codes(source).contains(&code)
    }

    /// A training loop on a GPU with `body` (indented four spaces) inside it.
    pub(crate) fn in_loop(body: &str) -> String {
        let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nfor step, (x, y) in enumerate(loader):\n    x, y = x.to(device), y.to(device)\n    optimizer.zero_grad()\n    loss = criterion(model(x), y)\n    loss.backward()\n    optimizer.step()\n{body}"
        )
    }

    /// An epoch loop around [`in_loop`]'s batch loop, with `body` after the batch loop
    /// (once per epoch).
    pub(crate) fn per_epoch(body: &str) -> String {
        let batch_loop: String = in_loop("")
            .lines()
            .skip(2)
            .map(|l| format!("    {l}\n"))
            .collect();
        let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nfor epoch in range(10):\n{batch_loop}{body}"
        )
    }
}
