//! Where a call runs, computed rather than guessed. The **step loop** is the innermost
//! loop whose body performs a training step itself — `backward()` or an optimiser's
//! `step()`, directly or through a same-file function that does one outside its own
//! loops — and not merely inside a nested loop: an epoch loop around the batch loop is
//! not a step loop, so what it runs after the batch loop runs once per epoch. A node
//! runs **on every step** when it sits in a step loop's body and nothing between makes
//! it skip passes ([`context::not_every_pass`]), or when it sits in a function that a
//! call on every step runs (followed a few calls deep, so `log(loss)` in the loop
//! finds the `.item()` inside `def log`). A node **runs at import** when module-level
//! code outside `if __name__ == "__main__":` reaches it, which is what re-importing the
//! script in a worker process repeats.

use std::cell::RefCell;
use std::collections::HashMap;

use tree_sitter::Node;

use super::calls::{Calls, uses_gpu};
use super::context::{loops, not_every_pass};
use super::parse::{Script, contains};

/// How many calls deep "runs on every step" and "runs at import" are followed.
const CALL_DEPTH: usize = 3;

/// One script with its call graph and the answers rules ask of it.
pub struct Flow<'t, 's> {
    /// The parsed script.
    pub script: &'t Script<'s>,
    /// Whether the script runs on a GPU at all (device rules are silent when not).
    pub gpu: bool,
    /// Every call, in source order.
    pub calls: Vec<Node<'t>>,
    /// The script's own functions and their callers.
    pub graph: Calls<'t>,
    step_loops: RefCell<HashMap<usize, bool>>,
    /// `every_step` answers by (node id, call depth): a helper called from many
    /// places is worked out once, so call chains cannot blow up.
    steps: RefCell<HashMap<(usize, usize), Option<Step<'t>>>>,
    /// `runs_at_import` answers by (node id, call depth).
    imports: RefCell<HashMap<(usize, usize), bool>>,
    /// How many `every_step` answers were worked out (not looked up).
    worked_out: std::cell::Cell<usize>,
}

/// How a node comes to run on every training step.
#[derive(Debug, Clone)]
pub struct Step<'t> {
    /// The step loop it runs in.
    pub step_loop: Node<'t>,
    /// The calls that lead from the step loop to it, the one in the loop last (empty
    /// when it is in the loop's body itself).
    pub via: Vec<Node<'t>>,
}

impl<'t, 's> Flow<'t, 's> {
    /// Works out the call graph of `script`.
    pub fn new(script: &'t Script<'s>) -> Self {
        let calls = script.calls();
        let graph = Calls::new(script, &calls);
        Self {
            script,
            gpu: uses_gpu(script),
            calls,
            graph,
            step_loops: RefCell::default(),
            steps: RefCell::default(),
            imports: RefCell::default(),
            worked_out: std::cell::Cell::new(0),
        }
    }

    /// Whether `loop_node`'s body performs a training step itself (not only inside a
    /// loop nested in it).
    pub fn is_step_loop(&self, loop_node: Node) -> bool {
        if let Some(known) = self.step_loops.borrow().get(&loop_node.id()) {
            return *known;
        }
        let step = loop_node.child_by_field_name("body").is_some_and(|body| {
            super::context::calls_in(body).any(|c| {
                let around = loops(c);
                let Some(depth) = around.iter().position(|l| *l == loop_node) else {
                    return false;
                };
                around[..depth].iter().all(|inner| self.is_sub_step(*inner))
                    && self.graph.performs_step(self.script, c)
            })
        });
        self.step_loops.borrow_mut().insert(loop_node.id(), step);
        step
    }

    /// Whether `loop_node` splits one training step into parts rather than iterating
    /// data: its iterable names optimisers, schedulers or gradient-accumulation
    /// micro-steps (`for opt in optimizers:`, `for micro in range(grad_accum_steps):`).
    /// A loop that holds one performs the step as much as if it did it itself.
    fn is_sub_step(&self, loop_node: Node) -> bool {
        let over = loop_node
            .child_by_field_name("right")
            .map(|r| self.script.text(r).to_ascii_lowercase())
            .unwrap_or_default();
        ["opt", "sched", "accum", "micro"]
            .iter()
            .any(|w| over.contains(w))
    }

    /// The innermost step loop whose body holds `node`, in `node`'s own function.
    pub fn step_loop(&self, node: Node<'t>) -> Option<Node<'t>> {
        loops(node).into_iter().find(|l| self.is_step_loop(*l))
    }

    /// How `node` runs on every training step, if it does.
    pub fn every_step(&self, node: Node<'t>) -> Option<Step<'t>> {
        self.every_step_within(node, 0)
    }

    fn every_step_within(&self, node: Node<'t>, depth: usize) -> Option<Step<'t>> {
        if let Some(known) = self.steps.borrow().get(&(node.id(), depth)) {
            return known.clone();
        }
        let step = self.work_out_every_step(node, depth);
        self.steps
            .borrow_mut()
            .insert((node.id(), depth), step.clone());
        step
    }

    fn work_out_every_step(&self, node: Node<'t>, depth: usize) -> Option<Step<'t>> {
        self.worked_out.set(self.worked_out.get() + 1);
        if let Some(step_loop) = self.step_loop(node) {
            return (!not_every_pass(self.script, node, step_loop, true)).then(|| Step {
                step_loop,
                via: Vec::new(),
            });
        }
        let def = enclosing_function(node)?;
        if depth >= CALL_DEPTH || not_every_pass(self.script, node, def, false) {
            return None;
        }
        self.graph.callers(def).iter().find_map(|call| {
            let mut step = self.every_step_within(*call, depth + 1)?;
            step.via.insert(0, *call);
            Some(step)
        })
    }

    /// Whether `node` runs when the script is imported: module-level code outside an
    /// `if __name__ == "__main__":` guard reaches it, itself or through calls.
    pub fn runs_at_import(&self, node: Node<'t>) -> bool {
        self.runs_at_import_within(node, 0)
    }

    fn runs_at_import_within(&self, node: Node<'t>, depth: usize) -> bool {
        if let Some(known) = self.imports.borrow().get(&(node.id(), depth)) {
            return *known;
        }
        let runs = match enclosing_function(node) {
            None => !self.under_main_guard(node),
            Some(def) if def.kind() == "function_definition" && depth < CALL_DEPTH + 1 => self
                .graph
                .callers(def)
                .iter()
                .any(|c| self.runs_at_import_within(*c, depth + 1)),
            Some(_) => false,
        };
        self.imports.borrow_mut().insert((node.id(), depth), runs);
        runs
    }

    /// Whether `node` sits under `if __name__ == "__main__":`.
    fn under_main_guard(&self, node: Node) -> bool {
        let mut current = node;
        while let Some(parent) = current.parent() {
            if parent.kind() == "if_statement"
                && let Some(condition) = parent.child_by_field_name("condition")
                && !contains(condition, node)
            {
                let text = self.script.text(condition);
                if text.contains("__name__") && text.contains("__main__") {
                    return true;
                }
            }
            current = parent;
        }
        false
    }
}

/// The function or lambda whose body holds `node` (class bodies run where the class
/// statement runs, so they are looked through), or `None` at module level.
fn enclosing_function(node: Node) -> Option<Node> {
    let mut current = node;
    while let Some(parent) = current.parent() {
        if matches!(parent.kind(), "function_definition" | "lambda") {
            return Some(parent);
        }
        current = parent;
    }
    None
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn with_probe<R>(source: &str, f: impl for<'t> FnOnce(&Flow<'t, '_>, Node<'t>) -> R) -> R {
        let script = Script::parse(source, Duration::from_secs(5)).unwrap();
        let flow = Flow::new(&script);
        let probe = flow
            .calls
            .iter()
            .copied()
            .find(|c| script.method(*c) == "probe")
            .expect("the source calls probe()");
        f(&flow, probe)
    }

    fn every_step(source: &str) -> bool {
        with_probe(source, |flow, probe| flow.every_step(probe).is_some())
    }

    const STEP: &str =
        "        loss = crit(model(x), y)\n        loss.backward()\n        opt.step()\n";

    #[test]
    fn the_batch_loop_is_the_step_loop_and_the_epoch_loop_is_not() {
        let inner =
            format!("for epoch in range(3):\n    for x, y in loader:\n{STEP}        probe()\n");
        assert!(every_step(&inner));
        let per_epoch =
            format!("for epoch in range(3):\n    for x, y in loader:\n{STEP}    probe()\n");
        assert!(
            !every_step(&per_epoch),
            "after the batch loop: once per epoch"
        );
        let iterable = "for x in loader.probe():\n    x.backward()\n";
        assert!(!every_step(iterable));
        let eval = "for x, y in loader:\n    out = model(x)\n    probe()\n";
        assert!(!every_step(eval), "no step, no step loop");
    }

    #[test]
    fn a_step_done_in_a_helper_makes_its_caller_a_step_loop() {
        let helper = "def train_step(x):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n    return loss\n\nfor x in loader:\n    loss = train_step(x)\n    probe()\n";
        assert!(every_step(helper));
        let defined_in_loop = "for x in loader:\n    def closure():\n        loss = model(x).sum()\n        loss.backward()\n        return loss\n    loss = closure()\n    probe()\n";
        assert!(every_step(defined_in_loop));
        let accumulated = "for step in range(9):\n    for micro in range(grad_accum_steps):\n        model(x).sum().backward()\n    for opt in optimizers:\n        opt.step()\n    probe()\n";
        assert!(
            every_step(accumulated),
            "micro-steps and optimiser loops are parts of a step"
        );
        let epoch_function = "def train_epoch():\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n\nfor epoch in range(3):\n    train_epoch()\n    probe()\n";
        assert!(!every_step(epoch_function), "the helper loops itself");
    }

    #[test]
    fn a_helper_called_every_step_runs_every_step_and_one_called_per_epoch_does_not() {
        let logged = format!(
            "def log(loss):\n    probe()\n\nfor x, y in loader:\n{}    log(loss)\n",
            STEP.replace("        ", "    ")
        );
        let step = with_probe(&logged, |flow, probe| {
            flow.every_step(probe).map(|s| s.via.len())
        });
        assert_eq!(step, Some(1));
        let periodic = logged.replace("    log(loss)", "    if i % 10 == 0:\n        log(loss)");
        assert!(!every_step(&periodic));
        let method = "class T:\n    def log(self):\n        probe()\n    def fit(self):\n        for x in self.loader:\n            self.model(x).sum().backward()\n            self.opt.step()\n            self.log()\n";
        assert!(every_step(method));
    }

    #[test]
    fn a_call_fan_out_is_worked_out_once_per_call_and_depth() {
        let fan_out = |loop_body: &str| {
            let mut source = String::from("def h0(loss):\n    return loss.item()\n");
            for level in 1..3 {
                source.push_str(&format!("def h{level}(loss):\n"));
                source.push_str(&format!("    h{}(loss)\n", level - 1).repeat(40));
            }
            source.push_str(&format!(
                "for x in loader:\n    loss = model(x).sum()\n{loop_body}"
            ));
            source.push_str(&"    h2(loss)\n".repeat(40));
            source
        };
        let every_step = |source: &str| {
            let script = Script::parse(source, Duration::from_secs(5)).unwrap();
            let flow = Flow::new(&script);
            let item = *flow
                .calls
                .iter()
                .find(|c| script.method(**c) == "item")
                .unwrap();
            let found = flow.every_step(item).is_some();
            (found, flow.worked_out.get(), flow.calls.len())
        };
        let (found, _, _) = every_step(&fan_out("    loss.backward()\n"));
        assert!(found, "loop -> h2 -> h1 -> h0 runs every step");
        // Not a step loop: all 40^3 call chains to the .item() lead nowhere, and each
        // (call, depth) is still worked out only once.
        let (found, worked_out, calls) = every_step(&fan_out(""));
        assert!(!found);
        assert!(
            worked_out <= (CALL_DEPTH + 1) * calls,
            "{worked_out} answers worked out for {calls} calls"
        );
    }

    #[test]
    fn import_reaches_module_code_and_what_it_calls_but_not_a_guarded_main() {
        let at_import = |source: &str| with_probe(source, |flow, probe| flow.runs_at_import(probe));
        assert!(at_import("probe()\n"));
        assert!(at_import("def main():\n    probe()\n\nmain()\n"));
        assert!(!at_import(
            "def main():\n    probe()\n\nif __name__ == '__main__':\n    main()\n"
        ));
        assert!(
            !at_import("class Trainer:\n    def run(self):\n        probe()\n"),
            "a library module"
        );
    }
}
