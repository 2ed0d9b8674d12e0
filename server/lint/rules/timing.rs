//! Lesson 5's timing trap (GL103): a host timer read while GPU work queued since the
//! last sync may still be running, so it measures how long the CPU took to queue the
//! work. What counts as a sync is the call graph's answer ([`super::super::calls`]): an
//! `.item()`, a blocking copy, `synchronize()`, or a helper of the script that does one.

use std::cell::RefCell;
use std::collections::HashMap;

use tree_sitter::Node;

use super::super::context::{loops, scope};
use super::super::flow::Flow;
use super::super::parse::contains;
use super::{Finding, at};

/// Host clocks a script times with.
pub(super) const TIMERS: [&str; 7] = [
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.time_ns",
    "time.perf_counter_ns",
    "perf_counter",
    "timeit.default_timer",
];

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    if flow.gpu {
        timers_without_sync(flow, out);
    }
}

/// One call as the timing check sees it.
#[derive(Clone, Copy)]
struct Event<'t> {
    call: Node<'t>,
    start: usize,
    end: usize,
    waits: bool,
    works: bool,
}

/// The script's calls by function, in source order, each with whether it waits for
/// the GPU and whether it queues GPU work, and what each loop's pass does: worked out
/// once, so a script full of timer reads stays fast.
struct Clock<'t> {
    /// By the id of the function holding them (`None` for module level).
    events: HashMap<Option<usize>, Vec<Event<'t>>>,
    /// By loop id: (queues work, waits) over a pass.
    passes: RefCell<HashMap<usize, (bool, bool)>>,
}

impl<'t> Clock<'t> {
    fn new(flow: &Flow<'t, '_>) -> Self {
        let mut events: HashMap<Option<usize>, Vec<Event<'t>>> = HashMap::new();
        for call in &flow.calls {
            events
                .entry(scope(*call).map(|s| s.id()))
                .or_default()
                .push(Event {
                    call: *call,
                    start: call.start_byte(),
                    end: call.end_byte(),
                    waits: flow.graph.waits(flow.script, *call),
                    works: flow.graph.queues_work(flow.script, *call),
                });
        }
        for list in events.values_mut() {
            list.sort_by_key(|e| e.start);
        }
        Self {
            events,
            passes: RefCell::default(),
        }
    }

    /// The calls of `read`'s function that lie within `start..end` (bytes).
    fn between(
        &self,
        read: Node,
        start: usize,
        end: usize,
    ) -> impl Iterator<Item = Event<'t>> + '_ {
        let list = self
            .events
            .get(&scope(read).map(|s| s.id()))
            .map_or(&[][..], Vec::as_slice);
        let first = list.partition_point(|e| e.start < start);
        list[first..]
            .iter()
            .take_while(move |e| e.start < end)
            .filter(move |e| e.end <= end)
            .copied()
    }

    /// (queues work, waits) over one pass of `pass`.
    fn pass(&self, pass: Node) -> (bool, bool) {
        if let Some(known) = self.passes.borrow().get(&pass.id()) {
            return *known;
        }
        let body = pass.child_by_field_name("body").unwrap_or(pass);
        let found = self
            .between(body, body.start_byte(), body.end_byte())
            .fold((false, false), |(w, s), e| (w || e.works, s || e.waits));
        self.passes.borrow_mut().insert(pass.id(), found);
        found
    }

    /// Whether a pass of `pass` queues GPU work and nothing in it waits for the GPU.
    fn pass_only_queues(&self, pass: Node) -> bool {
        let (works, waits) = self.pass(pass);
        works && !waits
    }

    /// Whether GPU work queued between the reads `previous` and `read` is left with no
    /// sync after it. Work inside a loop that waits on every pass is forgiven: the
    /// reading then misses at most that loop's last pass.
    fn pending_work(&self, previous: Node, read: Node) -> bool {
        let start = previous.end_byte();
        let mut pending = None;
        for event in self.between(read, start, read.start_byte()) {
            if event.waits {
                pending = None;
            } else if event.works {
                pending = Some(event);
            }
        }
        pending.is_some_and(|work| {
            !loops(work.call)
                .into_iter()
                .any(|l| l.start_byte() >= start && self.pass(l).1)
        })
    }
}

/// GL103: each host-timer read, against the reading before it.
///
/// - Outside loops, a read is checked over the code since the previous read in its
///   function: GPU work queued after the last sync there is still running.
/// - In a loop, a read that is the first of its pass measures a whole pass, from the
///   previous pass's reading: honest when the pass waits for the GPU somewhere (an
///   `.item()`, a blocking copy, a synchronize, in the loop or in a helper it calls),
///   and not when the pass only queues work. A read after another in the same pass is
///   wrong only when nothing at all waits between the two: otherwise the next pass's
///   wait charges the rest, and the readings add up to the time the GPU took.
fn timers_without_sync(flow: &Flow, out: &mut Vec<Finding>) {
    let script = flow.script;
    let reads: Vec<(Node, Option<usize>, Option<Node>)> = flow
        .calls
        .iter()
        .filter(|c| TIMERS.contains(&script.callee(**c).as_str()))
        .map(|c| (*c, scope(*c).map(|s| s.id()), loops(*c).into_iter().next()))
        .collect();
    if reads.is_empty() {
        return;
    }
    let clock = Clock::new(flow);
    for (i, (read, in_scope, in_loop)) in reads.iter().enumerate() {
        let mut earlier = reads[..i].iter().rev().filter(|p| p.1 == *in_scope);
        let unsynced = match in_loop {
            None => earlier
                .next()
                .is_some_and(|p| clock.pending_work(p.0, *read)),
            Some(pass) => match earlier.find(|p| p.2 == Some(*pass)) {
                Some(p) => {
                    let (works, waits) = clock
                        .between(*read, p.0.end_byte(), read.start_byte())
                        .fold((false, false), |(w, s), e| (w || e.works, s || e.waits));
                    works
                        && !waits
                        && (!conditional(p.0, *read, *pass) || clock.pass_only_queues(*pass))
                }
                None => clock.pass_only_queues(*pass),
            },
        };
        if unsynced {
            out.push(at(
                script,
                *read,
                "GL103",
                format!(
                    "`{}()` is read while GPU work queued since the last sync may still be running",
                    script.callee(*read)
                ),
            ));
        }
    }
}

/// Whether `earlier` sits in a branch of `pass` that does not also hold `read`, so on
/// some passes it is not the reading before `read`.
fn conditional(earlier: Node, read: Node, pass: Node) -> bool {
    let mut current = earlier;
    while let Some(parent) = current.parent() {
        if parent == pass {
            return false;
        }
        if parent.kind() == "if_statement" && !contains(parent, read) {
            return true;
        }
        current = parent;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::has;

    #[test]
    fn gl103_a_timer_read_while_work_may_still_run() {
        let naive = "import torch, time\nt0 = time.time()\nout = model(x.cuda(non_blocking=True))\nt1 = time.time()\n";
        assert!(has(naive, "GL103"));
        let honest = naive.replace("t1 =", "torch.cuda.synchronize()\nt1 =");
        assert!(!has(&honest, "GL103"));
        let data_time = "import torch, time\nend = time.time()\nfor x in loader:\n    data_time = time.time() - end\n";
        assert!(
            !has(data_time, "GL103"),
            "no GPU work between the two reads"
        );
        assert!(
            !has(
                &naive
                    .replace("x.cuda(non_blocking=True)", "x")
                    .replace("import torch, ", "import "),
                "GL103"
            ),
            "never uses a GPU"
        );
    }

    #[test]
    fn gl103_the_sync_helper_lesson_9_teaches_counts() {
        let source = "import torch, time\ndevice = torch.device('cuda')\ndef sync():\n    if device.type == 'cuda':\n        torch.cuda.synchronize()\nfor _ in range(3):\n    model(x)\nsync()\nt0 = time.perf_counter()\nout = model(x)\nsync()\nt1 = time.perf_counter()\n";
        assert!(!has(source, "GL103"), "{source}");
        assert!(has(
            &source.replace("out = model(x)\nsync()", "out = model(x)"),
            "GL103"
        ));
    }

    #[test]
    fn gl103_a_loop_interval_timer_is_honest_when_each_pass_waits() {
        let interval = "import torch, time\nt0 = time.time()\nfor x, y in loader:\n    loss = crit(model(x.cuda(non_blocking=True)), y)\n    loss.backward()\n    opt.step()\n    t1 = time.time()\n    dt = t1 - t0\n    t0 = t1\n";
        assert!(has(interval, "GL103"), "nothing in the pass waits");
        let logged = format!("{interval}    print(f'{{loss.item():.3f}} {{dt:.3f}}')\n");
        assert!(
            !has(&logged, "GL103"),
            "the pass waits at .item() after the read"
        );
        let copied = interval.replace("x.cuda(non_blocking=True)", "x.to(device)");
        assert!(
            !has(&copied, "GL103"),
            "a blocking copy waits for the stream"
        );
    }
}
