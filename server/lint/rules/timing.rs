//! Lesson 5's timing trap (GL103): a host timer read while GPU work queued since the
//! last sync may still be running, so it measures how long the CPU took to queue the
//! work. What counts as a sync is the call graph's answer ([`super::super::calls`]): an
//! `.item()`, a blocking copy, `synchronize()`, or a helper of the script that does one.

use tree_sitter::Node;

use super::super::context::{calls_in, loops, scope};
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
    let timers: Vec<Node> = flow
        .calls
        .iter()
        .copied()
        .filter(|c| TIMERS.contains(&script.callee(*c).as_str()))
        .collect();
    for (i, read) in timers.iter().enumerate() {
        let earlier = timers[..i]
            .iter()
            .rev()
            .filter(|p| scope(**p) == scope(*read));
        let unsynced = match loops(*read).into_iter().next() {
            None => earlier
                .clone()
                .next()
                .is_some_and(|p| pending_work(flow, p.end_byte(), read.start_byte(), *read)),
            Some(pass) => {
                let same_pass = earlier
                    .clone()
                    .find(|p| loops(**p).into_iter().next() == Some(pass));
                match same_pass {
                    Some(p) => {
                        let (work, waits) = between(flow, p.end_byte(), read.start_byte(), *read);
                        work && !waits
                            && (!conditional(*p, *read, pass) || pass_only_queues(flow, pass))
                    }
                    None => pass_only_queues(flow, pass),
                }
            }
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

/// Whether a pass of `pass` queues GPU work and nothing in it waits for the GPU.
fn pass_only_queues(flow: &Flow, pass: Node) -> bool {
    let body: Vec<Node> = pass
        .child_by_field_name("body")
        .map(|b| calls_in(b).collect())
        .unwrap_or_default();
    body.iter().any(|c| flow.graph.queues_work(flow.script, *c))
        && !body.iter().any(|c| flow.graph.waits(flow.script, *c))
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

/// Whether the calls between `start` and `end` (bytes, in `read`'s function) queue GPU
/// work, and whether any of them waits for the GPU.
fn between(flow: &Flow, start: usize, end: usize, read: Node) -> (bool, bool) {
    let root = scope(read).unwrap_or_else(|| flow.script.tree.root_node());
    let calls = calls_in(root).filter(|c| c.start_byte() >= start && c.end_byte() <= end);
    calls.fold((false, false), |(work, waits), c| {
        (
            work || flow.graph.queues_work(flow.script, c),
            waits || flow.graph.waits(flow.script, c),
        )
    })
}

/// Whether GPU work queued between `start` and `end` (bytes, in `read`'s function) is
/// left with no sync after it. Work inside a loop that waits on every pass is
/// forgiven: the reading then misses at most that loop's last pass.
fn pending_work(flow: &Flow, start: usize, end: usize, read: Node) -> bool {
    let script = flow.script;
    let root = scope(read).unwrap_or_else(|| script.tree.root_node());
    let mut calls: Vec<Node> = calls_in(root)
        .filter(|c| c.start_byte() >= start && c.end_byte() <= end)
        .collect();
    calls.sort_by_key(Node::start_byte);
    let mut pending = None;
    for call in calls {
        if flow.graph.waits(script, call) {
            pending = None;
        } else if flow.graph.queues_work(script, call) {
            pending = Some(call);
        }
    }
    pending.is_some_and(|work| {
        !loops(work).into_iter().any(|l| {
            l.start_byte() >= start
                && l.child_by_field_name("body")
                    .is_some_and(|b| calls_in(b).any(|c| flow.graph.waits(script, c)))
        })
    })
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
