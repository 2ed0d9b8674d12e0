//! Lesson 4's input pipeline, one `DataLoader(...)` call at a time: batches left in
//! pageable memory (GL202), items decoded and transformed in the training process
//! (GL203), and worker processes started by code that runs at import with no
//! `__main__` guard (GL204). GL202 and GL203 are about a waiting GPU and are silent on
//! a script that never uses one; GL204 is not.

use tree_sitter::Node;

use super::super::context::scope;
use super::super::flow::Flow;
use super::super::parse::Script;
use super::{Finding, at};

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    for call in &flow.calls {
        if flow.script.method(*call) == "DataLoader" {
            dataloader(flow, *call, out);
        }
    }
}

/// GL202, GL203 and GL204 on one `DataLoader(...)` call.
fn dataloader(flow: &Flow, call: Node, out: &mut Vec<Finding>) {
    let script = flow.script;
    let splat = script.has_dict_splat(call);
    if flow.gpu && !splat && script.keyword(call, "pin_memory").is_none() {
        out.push(at(
            script,
            call,
            "GL202",
            "this `DataLoader` returns batches in pageable memory (no `pin_memory=True`)".into(),
        ));
    }
    let workers = script.keyword(call, "num_workers").map(|w| script.text(w));
    let dataset = script
        .keyword(call, "dataset")
        .or_else(|| script.arguments(call).into_iter().next());
    if flow.gpu
        && !splat
        && workers.is_none_or(|w| w == "0")
        && let Some(dataset) = dataset
        && works_per_item(script, dataset, 0)
    {
        out.push(at(
            script,
            call,
            "GL203",
            "this `DataLoader` decodes and transforms every item in the training process (`num_workers=0`)"
                .into(),
        ));
    }
    if (splat || workers.is_some_and(|w| w != "0"))
        && flow.runs_at_import(call)
        && iterated_at_import(flow, call)
    {
        out.push(at(
            script,
            call,
            "GL204",
            "this `DataLoader` may start worker processes, and the code that iterates it runs at import with no `if __name__ == \"__main__\":` guard".into(),
        ));
    }
}

/// Whether code that runs at import iterates the loader `call` builds (a `for` over a
/// name it is assigned to) or trains at all (a step loop runs at import). Building a
/// loader starts no worker; iterating it does.
fn iterated_at_import(flow: &Flow, call: Node) -> bool {
    let script = flow.script;
    let name = call
        .parent()
        .filter(|p| p.kind() == "assignment")
        .and_then(|a| a.child_by_field_name("left"))
        .map(|l| script.text(l));
    script.nodes().into_iter().any(|l| {
        matches!(l.kind(), "for_statement" | "while_statement")
            && flow.runs_at_import(l)
            && (flow.is_step_loop(l)
                || name.is_some_and(|name| {
                    l.child_by_field_name("right").is_some_and(|iterable| {
                        super::super::parse::preorder(iterable)
                            .into_iter()
                            .any(|n| n.kind() == "identifier" && script.text(n) == name)
                    })
                }))
    })
}

/// Dataset classes (torchvision's) that read and decode a file or an image per item.
const FILE_DATASETS: [&str; 16] = [
    "ImageFolder",
    "DatasetFolder",
    "MNIST",
    "FashionMNIST",
    "KMNIST",
    "EMNIST",
    "CIFAR10",
    "CIFAR100",
    "SVHN",
    "STL10",
    "CocoDetection",
    "CocoCaptions",
    "VOCDetection",
    "VOCSegmentation",
    "ImageNet",
    "CelebA",
];

/// Whether the dataset `expr` does real work per item — a torchvision dataset of files
/// or images, anything built with a `transform`, or a class of this script whose
/// `__getitem__` opens, reads, decodes or transforms — so that loading it in the
/// training process costs time the GPU waits through. An in-memory `TensorDataset`,
/// a pre-tokenised dataset or anything this file does not show is given the benefit
/// of the doubt.
fn works_per_item(script: &Script, expr: Node, depth: usize) -> bool {
    if depth > 2 {
        return false;
    }
    match expr.kind() {
        "call" => {
            let method = script.method(expr);
            FILE_DATASETS.contains(&method)
                || script.keyword(expr, "transform").is_some()
                || script.arguments(expr).iter().any(|a| {
                    a.kind() == "identifier"
                        && script.text(*a).to_ascii_lowercase().contains("transform")
                })
                || class_reads_items(script, method)
        }
        "identifier" => {
            let name = script.text(expr);
            let root = scope(expr).unwrap_or_else(|| script.tree.root_node());
            super::super::context::same_scope(root)
                .into_iter()
                .chain(super::super::context::same_scope(script.tree.root_node()))
                .filter(|n| n.kind() == "assignment")
                .filter(|n| {
                    n.child_by_field_name("left")
                        .is_some_and(|l| script.text(l) == name)
                })
                .filter_map(|n| n.child_by_field_name("right"))
                .any(|r| works_per_item(script, r, depth + 1))
        }
        _ => false,
    }
}

/// Whether this script defines a class `name` whose `__getitem__` opens, reads, loads
/// or decodes a file, or applies a transform.
fn class_reads_items(script: &Script, name: &str) -> bool {
    script.nodes().into_iter().any(|class| {
        class.kind() == "class_definition"
            && class
                .child_by_field_name("name")
                .is_some_and(|n| script.text(n) == name)
            && script.nodes().into_iter().any(|def| {
                def.kind() == "function_definition"
                    && super::super::parse::contains(class, def)
                    && def
                        .child_by_field_name("name")
                        .is_some_and(|n| script.text(n) == "__getitem__")
                    && super::super::context::calls_in(def).any(|c| {
                        let callee = script.callee(c).to_ascii_lowercase();
                        ["open", "read", "load", "decode", "transform"]
                            .iter()
                            .any(|w| callee.contains(w))
                    })
            })
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::has;

    #[test]
    fn gl202_gl203_dataloader_arguments_and_datasets() {
        let bare = "import torch\nds = torchvision.datasets.MNIST('.', transform=ToTensor())\nloader = DataLoader(ds, batch_size=32)\nmodel.cuda()\n";
        assert!(has(bare, "GL202") && has(bare, "GL203"));
        let good = bare.replace("batch_size=32", "num_workers=4, pin_memory=True");
        assert!(!has(&good, "GL202") && !has(&good, "GL203"));
        let in_memory = "import torch\nloader = DataLoader(TensorDataset(x, y), batch_size=32, pin_memory=True)\nmodel.cuda()\n";
        assert!(
            !has(in_memory, "GL203"),
            "indexing tensors in memory costs microseconds"
        );
        let custom = "import torch\nclass Frames(Dataset):\n    def __getitem__(self, i):\n        return self.transform(Image.open(self.paths[i]))\nloader = DataLoader(Frames(), num_workers=0)\nx.cuda()\n";
        assert!(has(custom, "GL203"));
        let splat = "import torch\nloader = torch.utils.data.DataLoader(ds, **kwargs)\nx.cuda()\n";
        assert!(
            !has(splat, "GL202") && !has(splat, "GL203"),
            "** may carry both"
        );
        let cpu_script = "ds = MNIST('.', transform=t)\nloader = DataLoader(ds)\nfor x, y in loader:\n    model(x).sum().backward()\n";
        assert!(
            !has(cpu_script, "GL202") && !has(cpu_script, "GL203"),
            "never uses a GPU"
        );
    }

    #[test]
    fn gl204_workers_started_at_import() {
        let unguarded =
            "loader = DataLoader(ds, num_workers=4, pin_memory=True)\nfor x in loader:\n    pass\n";
        assert!(has(unguarded, "GL204"));
        let called = "def main():\n    loader = DataLoader(ds, num_workers=4)\n    for x in loader:\n        pass\n\nmain()\n";
        assert!(
            has(called, "GL204"),
            "module-level code calls the function that starts them"
        );
        let guarded = "def main():\n    loader = DataLoader(ds, num_workers=4, pin_memory=True)\n\nif __name__ == \"__main__\":\n    main()\n";
        assert!(!has(guarded, "GL204"));
        let built_only = "loader = DataLoader(ds, num_workers=4)\n\nif __name__ == '__main__':\n    for x in loader:\n        pass\n";
        assert!(
            !has(built_only, "GL204"),
            "building a loader at import starts no worker"
        );
        let library = "class Trainer:\n    def run(self):\n        loader = DataLoader(self.ds, num_workers=4)\n";
        assert!(
            !has(library, "GL204"),
            "a module others import runs nothing at import"
        );
        assert!(!has("loader = DataLoader(ds, pin_memory=True)\n", "GL204"));
    }
}
