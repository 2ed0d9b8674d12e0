//! Lesson 8's mixed-precision mistakes: the deprecated `torch.cuda.amp` spellings
//! (GL401 autocast, GL402 GradScaler), FP16 autocast with no gradient scaler (GL403),
//! and the two TF32 switch styles mixed in one script (GL404).

use tree_sitter::Node;

use super::super::flow::Flow;
use super::super::parse::{Script, children};
use super::{Finding, at};

/// The deprecated autocast spellings.
const OLD_AUTOCAST: [&str; 2] = ["torch.cuda.amp.autocast", "torch.cpu.amp.autocast"];
/// The deprecated scaler spellings.
const OLD_SCALER: [&str; 2] = ["torch.cuda.amp.GradScaler", "torch.cpu.amp.GradScaler"];

/// `(code, message)` for a deprecated dotted name, if it is one.
fn deprecated(dotted: &str) -> Option<(&'static str, String)> {
    if OLD_AUTOCAST.contains(&dotted) {
        let device = if dotted.contains(".cpu.") {
            "cpu"
        } else {
            "cuda"
        };
        return Some((
            "GL401",
            format!("`{dotted}` is deprecated: use `torch.autocast(\"{device}\", ...)`"),
        ));
    }
    if OLD_SCALER.contains(&dotted) {
        let device = if dotted.contains(".cpu.") {
            "cpu"
        } else {
            "cuda"
        };
        return Some((
            "GL402",
            format!("`{dotted}` is deprecated: use `torch.amp.GradScaler(\"{device}\")`"),
        ));
    }
    None
}

/// Deprecated names imported with `from torch.cuda.amp import autocast, GradScaler`.
fn deprecated_imports(script: &Script, node: Node, out: &mut Vec<Finding>) {
    let Some(module) = node.child_by_field_name("module_name") else {
        return;
    };
    let module = script.text(module);
    if module != "torch.cuda.amp" && module != "torch.cpu.amp" {
        return;
    }
    for name in children(node).into_iter().skip(1) {
        let imported = match name.kind() {
            "aliased_import" => name.child_by_field_name("name").map(|n| script.text(n)),
            "dotted_name" => Some(script.text(name)),
            _ => None,
        };
        if let Some(imported) = imported
            && let Some((code, message)) = deprecated(&format!("{module}.{imported}"))
        {
            out.push(at(script, name, code, message));
        }
    }
}

/// Whether an autocast call asks for FP16 (`dtype=torch.float16` or `torch.half`).
fn autocasts_to_fp16(script: &Script, call: Node) -> bool {
    script.method(call) == "autocast"
        && script.arguments(call).iter().any(|a| {
            let text = script.text(*a);
            text.contains("torch.float16") || text.contains("torch.half")
        })
}

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    let script = flow.script;
    let nodes = script.nodes();
    let has_backward = script.source.contains(".backward(");
    let has_scaler = script.source.contains("GradScaler");
    let mut tf32_flags = Vec::new();
    let mut fp32_precision = Vec::new();
    for node in &nodes {
        match node.kind() {
            // The outermost attribute of a dotted name (`torch.cuda.amp.autocast` in
            // `torch.cuda.amp.autocast(...)`), once.
            "attribute" if node.parent().is_none_or(|p| p.kind() != "attribute") => {
                let dotted: String = script.text(*node).split_whitespace().collect();
                if let Some((code, message)) = deprecated(&dotted) {
                    out.push(at(script, *node, code, message));
                }
                if dotted.ends_with(".allow_tf32") && is_assigned(*node) {
                    tf32_flags.push(*node);
                }
                if dotted.ends_with(".fp32_precision") && is_assigned(*node) {
                    fp32_precision.push(*node);
                }
            }
            "import_from_statement" => deprecated_imports(script, *node, out),
            "call" if has_backward && !has_scaler && autocasts_to_fp16(script, *node) => {
                out.push(at(
                    script,
                    *node,
                    "GL403",
                    "autocast to FP16 in a script that trains with no `GradScaler`".into(),
                ));
            }
            _ => {}
        }
    }
    if let (Some(first_flag), Some(first_new)) = (tf32_flags.first(), fp32_precision.first()) {
        let later = if first_flag.start_byte() > first_new.start_byte() {
            first_flag
        } else {
            first_new
        };
        out.push(at(
            script,
            *later,
            "GL404",
            "TF32 is set with both `allow_tf32` and `fp32_precision`".into(),
        ));
    }
}

/// Whether `node` is the target of an assignment.
fn is_assigned(node: Node) -> bool {
    node.parent()
        .is_some_and(|p| p.kind() == "assignment" && p.child_by_field_name("left") == Some(node))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{codes, has};

    #[test]
    fn gl401_gl402_deprecated_spellings_each_once() {
        let old = "import torch\nwith torch.cuda.amp.autocast():\n    out = model(x)\nscaler = torch.cuda.amp.GradScaler()\n";
        assert_eq!(codes(old), ["GL401", "GL402"]);
        let imported = "from torch.cuda.amp import autocast, GradScaler as Scaler\n";
        assert_eq!(codes(imported), ["GL401", "GL402"]);
        let new = "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    out = model(x)\nscaler = torch.amp.GradScaler('cuda')\nwith torch.amp.autocast('cuda'):\n    pass\n";
        assert!(!has(new, "GL401") && !has(new, "GL402"));
    }

    #[test]
    fn gl403_fp16_needs_a_scaler_bf16_does_not() {
        let fp16 = "import torch\nwith torch.autocast('cuda', dtype=torch.float16):\n    loss = crit(model(x), y)\nloss.backward()\n";
        assert!(has(fp16, "GL403"));
        let bf16 = fp16.replace("float16", "bfloat16");
        assert!(!has(&bf16, "GL403"), "bf16 needs no scaler");
        let scaled = format!("scaler = torch.amp.GradScaler('cuda')\n{fp16}");
        assert!(!has(&scaled, "GL403"));
        let inference =
            "import torch\nwith torch.autocast('cuda', dtype=torch.half):\n    out = model(x)\n";
        assert!(
            !has(inference, "GL403"),
            "no training, no gradients to underflow"
        );
    }

    #[test]
    fn gl404_tf32_styles_mixed() {
        let mixed = "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cuda.matmul.fp32_precision = 'tf32'\n";
        assert!(has(mixed, "GL404"));
        let old = "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True\n";
        assert!(!has(old, "GL404"));
        let read = "import torch\nprint(torch.backends.cuda.matmul.allow_tf32)\ntorch.backends.cuda.matmul.fp32_precision = 'tf32'\n";
        assert!(!has(read, "GL404"), "reading a flag is not setting it");
    }
}
