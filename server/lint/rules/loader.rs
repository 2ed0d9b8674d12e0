//! Lesson 4's input pipeline, one `DataLoader(...)` call at a time: batches left in
//! pageable memory (GL202), items decoded and transformed in the training process
//! (GL203), and worker processes started by code that runs at import with no
//! `__main__` guard (GL204). GL202 and GL203 are about a waiting GPU and are silent on
//! a script that never uses one; GL204 is not. What every call needs to know about the
//! script (its assignments, the classes that read files, the loops that run at import)
//! is worked out once, so a script with many loaders stays fast.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::super::flow::Flow;
use super::super::parse::{Script, preorder};
use super::{Finding, at};

/// What the `DataLoader` rules need to know about the whole script.
struct Pipeline<'t, 's> {
    /// Each plain name to the values it is assigned anywhere in the script.
    assigned: HashMap<&'s str, Vec<Node<'t>>>,
    /// Classes whose `__getitem__` reads a file or applies a transform.
    reading: HashSet<&'s str>,
    /// Whether a step loop runs at import (the script trains when imported).
    trains_at_import: bool,
    /// The names the loops that run at import iterate over.
    iterated_at_import: HashSet<&'s str>,
}

impl<'t, 's> Pipeline<'t, 's> {
    fn new(flow: &Flow<'t, 's>) -> Self {
        let script = flow.script;
        let mut assigned: HashMap<&'s str, Vec<Node<'t>>> = HashMap::new();
        let mut trains_at_import = false;
        let mut iterated_at_import = HashSet::new();
        for node in script.nodes() {
            match node.kind() {
                "assignment" => {
                    if let (Some(left), Some(right)) = (
                        node.child_by_field_name("left"),
                        node.child_by_field_name("right"),
                    ) && left.kind() == "identifier"
                    {
                        assigned.entry(script.text(left)).or_default().push(right);
                    }
                }
                "for_statement" | "while_statement" if flow.runs_at_import(node) => {
                    trains_at_import |= flow.is_step_loop(node);
                    if let Some(iterable) = node.child_by_field_name("right") {
                        iterated_at_import.extend(
                            preorder(iterable)
                                .into_iter()
                                .filter(|n| n.kind() == "identifier")
                                .map(|n| script.text(n)),
                        );
                    }
                }
                _ => {}
            }
        }
        Self {
            assigned,
            reading: reading_classes(script),
            trains_at_import,
            iterated_at_import,
        }
    }

    /// Whether code that runs at import iterates the loader `call` builds (a loop over
    /// the name it is assigned to) or trains at all. Building a loader starts no worker;
    /// iterating it does.
    fn iterated_at_import(&self, script: &Script, call: Node) -> bool {
        self.trains_at_import
            || call
                .parent()
                .filter(|p| p.kind() == "assignment")
                .and_then(|a| a.child_by_field_name("left"))
                .is_some_and(|name| self.iterated_at_import.contains(script.text(name)))
    }

    /// Whether the dataset `expr` does real work per item — a torchvision dataset of
    /// files or images, anything built with a `transform`, or a class of this script
    /// whose `__getitem__` opens, reads, decodes or transforms — so that loading it in
    /// the training process costs time the GPU waits through. An in-memory
    /// `TensorDataset`, a pre-tokenised dataset or anything this file does not show is
    /// given the benefit of the doubt.
    fn works_per_item(&self, script: &Script, expr: Node, depth: usize) -> bool {
        match expr.kind() {
            "call" => {
                let method = script.method(expr);
                FILE_DATASETS.contains(&method)
                    || script.keyword(expr, "transform").is_some()
                    || script.arguments(expr).iter().any(|a| {
                        a.kind() == "identifier"
                            && script.text(*a).to_ascii_lowercase().contains("transform")
                    })
                    || self.reading.contains(method)
            }
            "identifier" if depth < 3 => {
                self.assigned.get(script.text(expr)).is_some_and(|values| {
                    values
                        .iter()
                        .any(|v| self.works_per_item(script, *v, depth + 1))
                })
            }
            _ => false,
        }
    }
}

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    let mut pipeline = None;
    for call in &flow.calls {
        if flow.script.method(*call) == "DataLoader" {
            let pipeline = pipeline.get_or_insert_with(|| Pipeline::new(flow));
            dataloader(flow, pipeline, *call, out);
        }
    }
}

/// GL202, GL203 and GL204 on one `DataLoader(...)` call.
fn dataloader<'t>(
    flow: &Flow<'t, '_>,
    pipeline: &Pipeline,
    call: Node<'t>,
    out: &mut Vec<Finding>,
) {
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
        && dataset.is_some_and(|d| pipeline.works_per_item(script, d, 0))
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
        && pipeline.iterated_at_import(script, call)
    {
        out.push(at(
            script,
            call,
            "GL204",
            "this `DataLoader` may start worker processes, and the code that iterates it runs at import with no `if __name__ == \"__main__\":` guard".into(),
        ));
    }
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

/// The classes this script defines whose `__getitem__` opens, reads, loads or decodes
/// a file, or applies a transform (worked out once per script).
fn reading_classes<'s>(script: &Script<'s>) -> HashSet<&'s str> {
    let mut out = HashSet::new();
    for def in script.nodes() {
        let is_getitem = def.kind() == "function_definition"
            && def
                .child_by_field_name("name")
                .is_some_and(|n| script.text(n) == "__getitem__");
        let class = def
            .parent()
            .and_then(|block| block.parent())
            .filter(|c| c.kind() == "class_definition");
        if is_getitem
            && let Some(name) = class.and_then(|c| c.child_by_field_name("name"))
            && super::super::context::calls_in(def).any(|c| {
                let callee = script.callee(c).to_ascii_lowercase();
                ["open", "read", "load", "decode", "transform"]
                    .iter()
                    .any(|w| callee.contains(w))
            })
        {
            out.insert(script.text(name));
        }
    }
    out
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
