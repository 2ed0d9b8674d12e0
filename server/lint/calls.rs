//! The script's own functions and who calls them: a call to `train_step(...)`,
//! `sync()` or `self.log(...)` is resolved to the `def` of that name in the same file
//! (methods through `self`/`cls` in their class), so a sync, an `.item()` or a
//! `backward()` is followed into the helpers a loop calls instead of being missed
//! there. What each function does is worked out to a fixed point a few calls deep:
//! whether it performs a training step outside any loop of its own (so a loop that
//! calls it is a step loop), whether it waits for the GPU, and whether it queues GPU
//! work. Calls on other objects (`trainer.fit()`) and imported functions are unknown
//! and resolve to nothing: the checker reads one file.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::context::{calls_in, loops};
use super::parse::{Script, children};

/// How many calls deep a property is propagated (a helper of a helper of a helper).
const DEPTH: usize = 3;

/// Methods that copy a value to the host and so wait for the GPU.
pub const SYNC_METHODS: [&str; 3] = ["item", "cpu", "tolist"];

/// The call graph of one script.
pub struct Calls<'t> {
    /// Each call (by id) to the same-file functions it may run.
    targets: HashMap<usize, Vec<Node<'t>>>,
    /// Each function (by id) to the calls that may run it.
    callers: HashMap<usize, Vec<Node<'t>>>,
    /// Functions that perform a training step outside any loop of their own.
    steps: HashSet<usize>,
    /// Functions that wait for the GPU.
    syncs: HashSet<usize>,
    /// Functions that queue GPU work.
    work: HashSet<usize>,
}

impl<'t> Calls<'t> {
    /// Resolves every call in `script` and works out what each function does.
    pub fn new(script: &'t Script, calls: &[Node<'t>]) -> Self {
        let defs: Vec<Node<'t>> = script
            .nodes()
            .into_iter()
            .filter(|n| n.kind() == "function_definition")
            .collect();
        let mut by_name: HashMap<&str, Vec<Node<'t>>> = HashMap::new();
        for def in &defs {
            if let Some(name) = def.child_by_field_name("name") {
                by_name.entry(script.text(name)).or_default().push(*def);
            }
        }
        let mut targets = HashMap::new();
        let mut callers: HashMap<usize, Vec<Node<'t>>> = HashMap::new();
        for call in calls {
            let found = resolve(script, &by_name, *call);
            for def in &found {
                callers.entry(def.id()).or_default().push(*call);
            }
            if !found.is_empty() {
                targets.insert(call.id(), found);
            }
        }
        let mut graph = Self {
            targets,
            callers,
            steps: HashSet::new(),
            syncs: HashSet::new(),
            work: HashSet::new(),
        };
        for _ in 0..DEPTH {
            for def in &defs {
                let body = def.child_by_field_name("body").unwrap_or(*def);
                let calls: Vec<Node> = calls_in(body).collect();
                if calls
                    .iter()
                    .any(|c| loops(*c).is_empty() && graph.performs_step(script, *c))
                {
                    graph.steps.insert(def.id());
                }
                if calls.iter().any(|c| graph.waits(script, *c)) {
                    graph.syncs.insert(def.id());
                }
                if calls.iter().any(|c| graph.queues_work(script, *c)) {
                    graph.work.insert(def.id());
                }
            }
        }
        graph
    }

    /// The same-file functions `call` may run.
    pub fn targets(&self, call: Node) -> &[Node<'t>] {
        self.targets.get(&call.id()).map_or(&[], Vec::as_slice)
    }

    /// The calls that may run the function `def`.
    pub fn callers(&self, def: Node) -> &[Node<'t>] {
        self.callers.get(&def.id()).map_or(&[], Vec::as_slice)
    }

    /// Whether `call` performs a training step: `backward()`, an optimiser's `step()`,
    /// or a same-file function that does one outside its own loops.
    pub fn performs_step(&self, script: &Script, call: Node) -> bool {
        is_step_call(script, call)
            || self
                .targets(call)
                .iter()
                .any(|d| self.steps.contains(&d.id()))
    }

    /// Whether `call` makes the CPU wait for the GPU: `.item()`, `.cpu()`, `.tolist()`,
    /// `synchronize()`, `elapsed_time()`, a blocking copy to a device, or a same-file
    /// function that does one of these.
    pub fn waits(&self, script: &Script, call: Node) -> bool {
        let method = script.method(call);
        (SYNC_METHODS.contains(&method) && script.receiver(call).is_some())
            || matches!(method, "synchronize" | "elapsed_time")
            || is_blocking_copy(script, call)
            || self
                .targets(call)
                .iter()
                .any(|d| self.syncs.contains(&d.id()))
    }

    /// Whether `call` queues GPU work: a forward pass (a call to something named like a
    /// model or net), `backward()`, an optimiser's `step()`, or a same-file function
    /// that does one of these.
    pub fn queues_work(&self, script: &Script, call: Node) -> bool {
        let method = script.method(call).to_ascii_lowercase();
        let callee = script.callee(call).to_ascii_lowercase();
        is_step_call(script, call)
            || method == "forward"
            || method.contains("model")
            || callee.ends_with("net")
            || self
                .targets(call)
                .iter()
                .any(|d| self.work.contains(&d.id()))
    }
}

/// `backward()` on anything (or `torch.autograd.backward`), or `step()` on an object
/// named like an optimiser or a gradient scaler (not a learning-rate scheduler).
pub fn is_step_call(script: &Script, call: Node) -> bool {
    match script.method(call) {
        "backward" => true,
        "step" => script.receiver(call).is_some_and(|r| {
            let name = script.text(r).to_ascii_lowercase();
            (name.contains("opt") || name.contains("scaler")) && !name.contains("sched")
        }),
        _ => false,
    }
}

/// `x.to(device)` or `x.cuda()` without `non_blocking=True`: PyTorch queues the copy
/// and then waits for its stream (`memcpy_and_sync`), so everything queued before it
/// finishes first. A `.to()` whose first argument does not name a device is a dtype
/// cast and waits for nothing.
pub fn is_blocking_copy(script: &Script, call: Node) -> bool {
    let method = script.method(call);
    if script.receiver(call).is_none() || !matches!(method, "to" | "cuda") {
        return false;
    }
    if script
        .keyword(call, "non_blocking")
        .is_some_and(|v| script.text(v) != "False")
    {
        return false;
    }
    if method == "cuda" {
        return true;
    }
    let target = script
        .keyword(call, "device")
        .or_else(|| script.arguments(call).into_iter().next());
    target.is_some_and(|t| names_a_device(script.text(t)))
}

/// Whether an expression reads like a device: `device`, `"cuda:0"`, `args.device`,
/// `local_rank`, `gpu_id`.
pub fn names_a_device(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    ["device", "cuda", "gpu", "rank", "dev"]
        .iter()
        .any(|w| text.contains(w))
}

/// The functions a call may run: a bare name resolves to the module's and enclosing
/// functions' `def`s of that name (not methods); `self.name` / `cls.name` to the
/// methods of that name in the class around the call.
fn resolve<'t>(
    script: &Script,
    by_name: &HashMap<&str, Vec<Node<'t>>>,
    call: Node<'t>,
) -> Vec<Node<'t>> {
    let Some(function) = call.child_by_field_name("function") else {
        return Vec::new();
    };
    let named = |name: &str| {
        by_name
            .get(name)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .copied()
    };
    match function.kind() {
        "identifier" => named(script.text(function))
            .filter(|d| class_of(*d).is_none())
            .collect(),
        "attribute" => {
            let object = function
                .child_by_field_name("object")
                .map(|o| script.text(o));
            let Some(class) =
                class_of_call(call).filter(|_| matches!(object, Some("self" | "cls")))
            else {
                return Vec::new();
            };
            let name = function
                .child_by_field_name("attribute")
                .map(|a| script.text(a))
                .unwrap_or_default();
            named(name)
                .filter(|d| class_of(*d) == Some(class))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The class whose body directly defines `def` (a method), if any.
fn class_of(def: Node) -> Option<Node> {
    let mut parent = def.parent()?;
    if parent.kind() == "decorated_definition" {
        parent = parent.parent()?;
    }
    let class = parent.parent()?;
    (parent.kind() == "block" && class.kind() == "class_definition").then_some(class)
}

/// The class around the method holding `call`.
fn class_of_call(call: Node) -> Option<Node> {
    let mut current = call;
    while let Some(parent) = current.parent() {
        if parent.kind() == "function_definition" {
            return class_of(parent);
        }
        current = parent;
    }
    None
}

/// Whether the script runs on a GPU at all: it names CUDA, MPS, XPU, NCCL or an
/// accelerator in its code (not its comments), or moves tensors to something named
/// like a GPU or a rank (`.to(local_rank)`).
pub fn uses_gpu(script: &Script) -> bool {
    script.nodes().into_iter().any(|n| match n.kind() {
        "identifier" | "string_content" => {
            let text = script.text(n).to_ascii_lowercase();
            text.contains("cuda")
                || text.contains("accelerator")
                || text.contains("nccl")
                || text == "mps"
                || text.starts_with("mps:")
                || text == "xpu"
        }
        "call" => {
            script.method(n) == "to"
                && children(n.child_by_field_name("arguments").unwrap_or(n))
                    .first()
                    .is_some_and(|a| {
                        let text = script.text(*a).to_ascii_lowercase();
                        text.contains("rank") || text.contains("gpu")
                    })
        }
        _ => false,
    })
}
