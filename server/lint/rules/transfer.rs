//! Lesson 4's copies and input pipeline: `pin_memory()` right before a copy (GL201), a
//! `DataLoader` without pinned batches (GL202) or without workers (GL203), workers
//! without a `__main__` guard (GL204), and a tensor built on the CPU and moved inside
//! the training loop (GL205).

use tree_sitter::Node;

use super::super::context::{loops, scope, training_loop};
use super::super::parse::Script;
use super::{Finding, at};

/// Factories that build a tensor (on the CPU unless given `device=`).
const FACTORIES: [&str; 12] = [
    "torch.tensor",
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
    "torch.as_tensor",
];

/// Whether the script talks about a GPU at all (CUDA, the accelerator API, MPS).
fn uses_gpu(script: &Script) -> bool {
    ["cuda", "accelerator", "mps"]
        .iter()
        .any(|w| script.source.contains(w))
}

/// Whether `call`'s result is immediately moved: `call(...).to(...)` or `.cuda()`.
fn moved_at_once(script: &Script, call: Node) -> bool {
    call.parent()
        .filter(|p| p.kind() == "attribute")
        .and_then(|attribute| attribute.parent())
        .filter(|outer| outer.kind() == "call")
        .is_some_and(|outer| matches!(script.method(outer), "to" | "cuda"))
}

/// Whether the script has an `if __name__ == "__main__":` guard.
fn has_main_guard(script: &Script) -> bool {
    script.nodes().into_iter().any(|n| {
        n.kind() == "if_statement"
            && n.child_by_field_name("condition").is_some_and(|c| {
                let text = script.text(c);
                text.contains("__name__") && text.contains("__main__")
            })
    })
}

pub(super) fn check(script: &Script, out: &mut Vec<Finding>) {
    let gpu = uses_gpu(script);
    let guarded = has_main_guard(script);
    for call in script.calls() {
        let method = script.method(call);
        if method == "pin_memory"
            && script.receiver(call).is_some()
            && moved_at_once(script, call)
            && (scope(call).is_some() || !loops(call).is_empty())
        {
            out.push(at(
                script,
                call,
                "GL201",
                "`.pin_memory()` right before the copy pins a fresh buffer on every call".into(),
            ));
        }
        if method == "DataLoader" {
            let splat = script.has_dict_splat(call);
            if gpu && !splat && script.keyword(call, "pin_memory").is_none() {
                out.push(at(
                    script,
                    call,
                    "GL202",
                    "this `DataLoader` returns batches in pageable memory (no `pin_memory=True`)"
                        .into(),
                ));
            }
            let workers = script.keyword(call, "num_workers").map(|w| script.text(w));
            if !splat && workers.is_none_or(|w| w == "0") {
                out.push(at(
                    script,
                    call,
                    "GL203",
                    "this `DataLoader` loads batches in the training process (`num_workers=0`)"
                        .into(),
                ));
            }
            if !guarded && (splat || workers.is_some_and(|w| w != "0")) {
                out.push(at(
                    script,
                    call,
                    "GL204",
                    "this `DataLoader` may start worker processes, and the script has no `if __name__ == \"__main__\":` guard".into(),
                ));
            }
        }
        if FACTORIES.contains(&script.callee(call).as_str())
            && script.keyword(call, "device").is_none()
            && moved_at_once(script, call)
            && training_loop(script, call).is_some()
        {
            out.push(at(
                script,
                call,
                "GL205",
                format!(
                    "`{}(...)` is built on the CPU and copied to the device on every step",
                    script.callee(call)
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{has, in_loop};

    #[test]
    fn gl201_pin_memory_before_each_copy() {
        let helper = "import torch\ndef get_batch():\n    x = torch.from_numpy(a)\n    return x.pin_memory().to('cuda', non_blocking=True)\n";
        assert!(has(helper, "GL201"));
        assert!(has(&in_loop("z = x.pin_memory().cuda()"), "GL201"));
        let once = "import torch\nstaging = torch.empty(32, 128, pin_memory=True)\nbuf = staging.pin_memory().to('cuda')\n";
        assert!(!has(once, "GL201"), "once at module level");
        assert!(!has("def f(t):\n    return t.pin_memory()\n", "GL201"));
    }

    #[test]
    fn gl202_gl203_dataloader_arguments() {
        let bare = "import torch\nloader = DataLoader(ds, batch_size=32)\nmodel.cuda()\n";
        assert!(has(bare, "GL202") && has(bare, "GL203"));
        let good = "import torch\nif __name__ == '__main__':\n    loader = DataLoader(ds, num_workers=4, pin_memory=True)\n    model.cuda()\n";
        assert!(!has(good, "GL202") && !has(good, "GL203"));
        let zero = "loader = DataLoader(ds, num_workers=0, pin_memory=True)\n";
        assert!(has(zero, "GL203"));
        let splat = "import torch\nloader = torch.utils.data.DataLoader(ds, **kwargs)\nx.cuda()\nif __name__ == '__main__':\n    main()\n";
        assert!(
            !has(splat, "GL202") && !has(splat, "GL203"),
            "** may carry both"
        );
        let cpu_script =
            "loader = DataLoader(ds, num_workers=2)\nif __name__ == '__main__':\n    main()\n";
        assert!(
            !has(cpu_script, "GL202"),
            "a script that never mentions a GPU"
        );
    }

    #[test]
    fn gl204_workers_need_a_main_guard() {
        let unguarded =
            "loader = DataLoader(ds, num_workers=4, pin_memory=True)\nfor x in loader:\n    pass\n";
        assert!(has(unguarded, "GL204"));
        let guarded = "def main():\n    loader = DataLoader(ds, num_workers=4, pin_memory=True)\n\nif __name__ == \"__main__\":\n    main()\n";
        assert!(!has(guarded, "GL204"));
        let no_workers = "loader = DataLoader(ds, pin_memory=True)\n";
        assert!(!has(no_workers, "GL204"));
    }

    #[test]
    fn gl205_tensor_built_on_the_cpu_every_step() {
        assert!(has(
            &in_loop("mask = torch.ones(32, 128).to(device)"),
            "GL205"
        ));
        assert!(has(&in_loop("t = torch.tensor([1.0]).cuda()"), "GL205"));
        assert!(!has(
            &in_loop("mask = torch.ones(32, 128, device=device)"),
            "GL205"
        ));
        let before = "import torch\nmask = torch.ones(32).to('cuda')\nfor x in loader:\n    model(x).sum().backward()\n";
        assert!(!has(before, "GL205"), "built once before the loop");
    }
}
