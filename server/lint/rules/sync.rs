//! Lesson 5's sync points and timing trap: a value read to the host every step
//! (GL101), `torch.cuda.synchronize()` every step for no measurement (GL102), a host
//! timer read while GPU work may still be running (GL103), and a tensor printed every
//! step (GL104). All four are about waiting for a GPU, so a script that never uses one
//! gets none of them.

use tree_sitter::Node;

use super::super::calls::SYNC_METHODS;
use super::super::context::{calls_in, loops, same_scope, scope};
use super::super::flow::{Flow, Step};
use super::super::parse::{Script, contains};
use super::{Finding, assigned_a_number, at, is_loss_name, through};

/// Host clocks a script times with.
const TIMERS: [&str; 7] = [
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.time_ns",
    "time.perf_counter_ns",
    "perf_counter",
    "timeit.default_timer",
];

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    if !flow.gpu {
        return;
    }
    let script = flow.script;
    for call in &flow.calls {
        let call = *call;
        let method = script.method(call);
        let per_step = || flow.every_step(call);
        if SYNC_METHODS.contains(&method)
            && script.receiver(call).is_some()
            && script.arguments(call).is_empty()
            && let Some(step) = per_step()
        {
            out.push(at(
                script,
                call,
                "GL101",
                format!(
                    "`.{method}()` runs on every training step{}: each call waits for the GPU",
                    through(script, &step)
                ),
            ));
        }
        if method == "synchronize"
            && let Some(step) = per_step()
            && !for_timing(flow, &step, call)
        {
            out.push(at(
                script,
                call,
                "GL102",
                format!(
                    "`{}()` runs on every training step{}",
                    script.callee(call),
                    through(script, &step)
                ),
            ));
        }
        if script.callee(call) == "print"
            && let Some(name) = printed_tensor(script, call)
            && let Some(step) = per_step()
        {
            out.push(at(
                script,
                call,
                "GL104",
                format!(
                    "`print` formats the tensor `{name}` on every training step{}",
                    through(script, &step)
                ),
            ));
        }
    }
    timers_without_sync(flow, out);
}

/// Whether a timer is read in the step loop, or in the function holding the sync: a
/// synchronize placed for an honest measurement, which GL103 asks for.
fn for_timing(flow: &Flow, step: &Step, sync: Node) -> bool {
    let script = flow.script;
    let is_timer =
        |c: Node| TIMERS.contains(&script.callee(c).as_str()) || script.method(c) == "elapsed_time";
    let body = step.step_loop.child_by_field_name("body");
    body.is_some_and(|b| calls_in(b).any(is_timer))
        || scope(sync).is_some_and(|s| calls_in(s).any(is_timer))
}

/// A loss tensor `print` is given: a bare name, or one interpolated in an f-string.
fn printed_tensor<'s>(script: &Script<'s>, call: Node) -> Option<&'s str> {
    let mut names = Vec::new();
    for argument in script.arguments(call) {
        match argument.kind() {
            "identifier" => names.push(argument),
            "string" => {
                for part in same_scope(argument) {
                    if part.kind() == "interpolation"
                        && let Some(expression) = part.child_by_field_name("expression")
                        && expression.kind() == "identifier"
                    {
                        names.push(expression);
                    }
                }
            }
            _ => {}
        }
    }
    names
        .into_iter()
        .map(|n| script.text(n))
        .find(|name| is_loss_name(name) && !assigned_a_number(script, call, name))
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
    use super::super::fixtures::{has, in_loop, per_epoch};

    #[test]
    fn gl101_a_value_read_every_step() {
        assert!(has(&in_loop("history.append(loss.item())"), "GL101"));
        assert!(has(
            &in_loop("if loss.item() > 5:\n    print('spike')"),
            "GL101"
        ));
        assert!(has(
            &in_loop("acc = (pred == y).float().mean().cpu()"),
            "GL101"
        ));
        assert!(
            has(
                &in_loop("with torch.no_grad():\n    acc = out.argmax(1).cpu()"),
                "GL101"
            ),
            "no_grad does not make a copy to the host free"
        );
    }

    #[test]
    fn gl101_not_periodic_per_epoch_after_the_loop_nor_numpy_nor_on_a_cpu() {
        assert!(!has(
            &in_loop("if step % 100 == 0:\n    print(loss.item())"),
            "GL101"
        ));
        assert!(!has(
            &format!("{}print(loss.item())\n", in_loop("pass")),
            "GL101"
        ));
        assert!(!has(
            &per_epoch("print(f'epoch {epoch}: {loss.item():.3f}')"),
            "GL101"
        ));
        assert!(!has(&in_loop("seen.extend(y_cpu.numpy())"), "GL101"));
        assert!(!has(
            &in_loop("x2 = x.to('cpu', non_blocking=True)"),
            "GL101"
        ));
        let cpu_only = "for x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n    opt.step()\n    history.append(loss.item())\n";
        assert!(!has(cpu_only, "GL101"), "no GPU to wait for");
    }

    #[test]
    fn gl101_found_in_a_helper_called_every_step() {
        let source = "import torch\ndef log(loss):\n    history.append(loss.item())\n\nfor x, y in loader:\n    loss = crit(model(x.cuda()), y.cuda())\n    loss.backward()\n    opt.step()\n    log(loss)\n";
        let found = super::super::super::check(source).unwrap();
        let finding = found
            .iter()
            .find(|f| f.code == "GL101")
            .expect("found in log()");
        assert_eq!(finding.line, 3);
        assert!(
            finding.message.contains("`log()`, called at line 9"),
            "{}",
            finding.message
        );
    }

    #[test]
    fn gl101_found_when_backward_is_in_a_function_defined_in_the_loop() {
        let source = "import torch\nfor x, y in loader:\n    def closure():\n        loss = crit(model(x.cuda()), y.cuda())\n        loss.backward()\n        return loss\n    loss = closure()\n    losses.append(loss.item())\n";
        assert!(
            has(source, "GL101"),
            "the loop steps through its nested def"
        );
    }

    #[test]
    fn gl101_names_the_cpu_call_not_the_numpy_after_it() {
        let found =
            super::super::super::check(&in_loop("preds.append(logits.argmax(1).cpu().numpy())"))
                .unwrap();
        let finding = found
            .iter()
            .find(|f| f.code == "GL101")
            .expect("the .cpu() waits");
        assert!(
            finding.message.starts_with("`.cpu()`"),
            "{}",
            finding.message
        );
    }

    #[test]
    fn gl102_synchronize_every_step_but_not_for_a_measurement() {
        assert!(has(&in_loop("torch.cuda.synchronize()"), "GL102"));
        assert!(!has(
            &in_loop("torch.cuda.synchronize()\nt1 = time.perf_counter()"),
            "GL102"
        ));
        let guarded =
            in_loop("if device.type == 'cuda':\n    torch.cuda.synchronize()\nt1 = time.time()");
        assert!(
            !has(&guarded, "GL102"),
            "a sync under an if, right before the timer"
        );
        assert!(!has(
            &in_loop("if step % 50 == 0:\n    torch.cuda.synchronize()"),
            "GL102"
        ));
        assert!(!has(&per_epoch("torch.cuda.synchronize()"), "GL102"));
    }

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

    #[test]
    fn gl104_a_loss_tensor_printed_every_step() {
        assert!(has(&in_loop("print(loss)"), "GL104"));
        assert!(has(&in_loop("print(f'step {step}: {loss}')"), "GL104"));
        assert!(!has(&in_loop("print(f'step {step}')"), "GL104"));
        assert!(!has(
            &in_loop("if step % 10 == 0:\n    print(loss)"),
            "GL104"
        ));
        assert!(!has(&per_epoch("print(loss)"), "GL104"));
        let number = "import torch\nfor x in loader:\n    loss = crit(model(x.cuda()))\n    loss.backward()\n    loss = loss.item()\n    print(loss)\n";
        assert!(!has(number, "GL104"), "loss was made a number");
    }
}
