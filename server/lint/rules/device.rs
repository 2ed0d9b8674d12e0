//! Lesson 3's device choice: a script that names `"cuda"` but never asks whether CUDA
//! is available (GL501). Scripts that take the device from a flag or from
//! `torch.accelerator` are left alone.

use super::super::flow::Flow;
use super::{Finding, at};

/// Words that show a script chooses its device instead of assuming one.
const CHOOSES: [&str; 4] = ["is_available", "accelerator", "args.cuda", "device_count"];

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    let script = flow.script;
    if CHOOSES.iter().any(|w| script.source.contains(w)) {
        return;
    }
    let is_cuda_literal = |text: &str| {
        let inner = text.trim_matches(|c| c == '"' || c == '\'');
        inner == "cuda" || inner.starts_with("cuda:")
    };
    let first = script.calls().into_iter().find(|call| {
        let method = script.method(*call);
        (method == "cuda" && script.receiver(*call).is_some())
            || (matches!(method, "device" | "to")
                && script
                    .arguments(*call)
                    .first()
                    .is_some_and(|a| a.kind() == "string" && is_cuda_literal(script.text(*a))))
            || script
                .keyword(*call, "device")
                .is_some_and(|d| d.kind() == "string" && is_cuda_literal(script.text(d)))
    });
    if let Some(call) = first {
        out.push(at(
            script,
            call,
            "GL501",
            "the script uses CUDA here and never checks `torch.cuda.is_available()`".into(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{codes, has};

    #[test]
    fn gl501_cuda_assumed_once_per_script() {
        let assumed = "import torch\nmodel = Net().cuda()\nx = torch.zeros(3, device='cuda')\ny = x.to('cuda:0')\n";
        assert_eq!(codes(assumed), ["GL501"]);
        assert!(has("import torch\ndev = torch.device(\"cuda\")\n", "GL501"));
        let checked = "import torch\ndev = 'cuda' if torch.cuda.is_available() else 'cpu'\nmodel = Net().to(dev)\nx = torch.zeros(3, device='cuda')\n";
        assert!(!has(checked, "GL501"));
        let accelerator =
            "import torch\ndevice = torch.accelerator.current_accelerator()\nm = Net().cuda()\n";
        assert!(!has(accelerator, "GL501"));
        assert!(!has("import torch\nx = torch.zeros(3)\n", "GL501"));
    }
}
