//! Lesson 4's copies: `pin_memory()` before a copy that waits anyway (GL201) and a
//! tensor built on the CPU and moved on every step (GL205); the `DataLoader` rules
//! (GL202-GL204) are [`super::loader`]. Both are silent on a script that never uses a
//! GPU.

use tree_sitter::Node;

use super::super::calls::is_blocking_copy;
use super::super::context::{loops, scope};
use super::super::flow::Flow;
use super::super::parse::Script;
use super::{Finding, at, through};

/// Factories that build a tensor (on the CPU unless given `device=`).
const FACTORIES: [&str; 10] = [
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.rand",
    "torch.randn",
    "torch.randint",
    "torch.arange",
    "torch.linspace",
    "torch.eye",
];

/// Factories that always build from Python or NumPy data on the CPU and then copy,
/// even when given `device=` (`internal_new_from_data` in PyTorch's `tensor_new.cpp`).
const FROM_DATA: [&str; 2] = ["torch.tensor", "torch.as_tensor"];

/// The copy `call`'s result goes straight into: `call(...).to(...)` or `.cuda()`.
fn moved_at_once<'t>(script: &Script, call: Node<'t>) -> Option<Node<'t>> {
    call.parent()
        .filter(|p| p.kind() == "attribute")
        .and_then(|attribute| attribute.parent())
        .filter(|outer| outer.kind() == "call" && matches!(script.method(*outer), "to" | "cuda"))
}

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    let script = flow.script;
    for call in &flow.calls {
        let call = *call;
        let method = script.method(call);
        if flow.gpu
            && method == "pin_memory"
            && script.receiver(call).is_some()
            && moved_at_once(script, call).is_some_and(|copy| is_blocking_copy(script, copy))
            && (scope(call).is_some() || !loops(call).is_empty())
        {
            out.push(at(
                script,
                call,
                "GL201",
                "`.pin_memory()` before a blocking copy: an extra host copy, and the copy still waits"
                    .into(),
            ));
        }
        let callee = script.callee(call);
        let literal = FROM_DATA.contains(&callee.as_str())
            && script
                .arguments(call)
                .first()
                .is_some_and(|a| is_literal(*a));
        if flow.gpu
            && (FACTORIES.contains(&callee.as_str()) || literal)
            && script.keyword(call, "device").is_none()
            && moved_at_once(script, call).is_some()
            && let Some(step) = flow.every_step(call)
        {
            let what = if literal {
                "builds the same constant on the CPU and copies it to the device"
            } else {
                "is built on the CPU and copied to the device"
            };
            out.push(at(
                script,
                call,
                "GL205",
                format!(
                    "`{callee}(...)` {what} on every step{}",
                    through(script, &step)
                ),
            ));
        }
    }
}

/// Whether `node` is a literal: a number, or a list or tuple of literals.
fn is_literal(node: Node) -> bool {
    match node.kind() {
        "integer" | "float" | "true" | "false" => true,
        "unary_operator" => node.named_child(0).is_some_and(is_literal),
        "list" | "tuple" => super::super::parse::children(node)
            .into_iter()
            .all(is_literal),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{has, in_loop, per_epoch};

    #[test]
    fn gl201_pin_memory_before_a_blocking_copy() {
        let helper = "import torch\ndef get_batch():\n    x = torch.from_numpy(a)\n    return x.pin_memory().to('cuda')\n";
        assert!(has(helper, "GL201"));
        assert!(has(&in_loop("z = x.pin_memory().cuda()"), "GL201"));
        let overlapped = helper.replace(".to('cuda')", ".to('cuda', non_blocking=True)");
        assert!(
            !has(&overlapped, "GL201"),
            "pinned so the copy can overlap: a deliberate trade"
        );
        let once = "import torch\nstaging = torch.empty(32, 128, pin_memory=True)\nbuf = staging.pin_memory().to('cuda')\n";
        assert!(!has(once, "GL201"), "once at module level");
    }

    #[test]
    fn gl205_tensor_built_on_the_cpu_every_step() {
        assert!(has(
            &in_loop("mask = torch.ones(32, 128).to(device)"),
            "GL205"
        ));
        assert!(has(
            &in_loop("t = torch.tensor([1.0, -2.0]).cuda()"),
            "GL205"
        ));
        assert!(
            !has(&in_loop("t = torch.tensor(batch_ids).cuda()"), "GL205"),
            "per-step data has to cross the bus"
        );
        assert!(!has(
            &in_loop("mask = torch.ones(32, 128, device=device)"),
            "GL205"
        ));
        assert!(!has(&per_epoch("t = torch.zeros(3).to(device)"), "GL205"));
        let before = "import torch\nmask = torch.ones(32).to('cuda')\nfor x in loader:\n    model(x).sum().backward()\n";
        assert!(!has(before, "GL205"), "built once before the loop");
    }
}
