//! Lesson 5's sync points and timing trap: a value read to the host every step
//! (GL101), `torch.cuda.synchronize()` every step (GL102), a host timer read after GPU
//! work with no sync between (GL103), and a tensor printed every step (GL104).

use tree_sitter::Node;

use super::super::context::{calls_in, every_training_step, same_scope, scope};
use super::super::parse::Script;
use super::{Finding, assigned_a_number, at, is_loss_name};

/// Methods that copy a tensor's value to the host and so wait for the GPU.
const SYNC_METHODS: [&str; 4] = ["item", "cpu", "numpy", "tolist"];

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

pub(super) fn check(script: &Script, out: &mut Vec<Finding>) {
    for call in script.calls() {
        let method = script.method(call);
        if SYNC_METHODS.contains(&method)
            && script.receiver(call).is_some()
            && script.arguments(call).is_empty()
            && every_training_step(script, call)
        {
            out.push(at(
                script,
                call,
                "GL101",
                format!("`.{method}()` runs on every training step: each call waits for the GPU"),
            ));
        }
        if method == "synchronize"
            && every_training_step(script, call)
            && !times_nearby(script, call)
        {
            out.push(at(
                script,
                call,
                "GL102",
                format!("`{}()` runs on every training step", script.callee(call)),
            ));
        }
        if script.callee(call) == "print"
            && every_training_step(script, call)
            && let Some(name) = printed_tensor(script, call)
        {
            out.push(at(
                script,
                call,
                "GL104",
                format!("`print` formats the tensor `{name}` on every training step"),
            ));
        }
    }
    timers_without_sync(script, out);
}

/// Whether the block holding `call` also reads a host timer: a synchronize placed for
/// an honest measurement, which GL103 asks for.
fn times_nearby(script: &Script, call: Node) -> bool {
    let Some(block) = call.parent().and_then(|statement| statement.parent()) else {
        return false;
    };
    calls_in(script, block).any(|c| TIMERS.contains(&script.callee(c).as_str()))
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

/// GL103: pairs of timer reads in one scope with GPU work between them and no sync.
fn timers_without_sync(script: &Script, out: &mut Vec<Finding>) {
    if !script.source.contains("cuda") {
        return;
    }
    let mut scopes: Vec<Option<Node>> = Vec::new();
    let timers: Vec<Node> = script
        .calls()
        .into_iter()
        .filter(|c| TIMERS.contains(&script.callee(*c).as_str()))
        .collect();
    for timer in &timers {
        let s = scope(*timer);
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    for s in scopes {
        let root = s.unwrap_or_else(|| script.tree.root_node());
        let mut calls: Vec<Node> = calls_in(script, root).collect();
        calls.sort_by_key(Node::start_byte);
        let reads: Vec<Node> = timers.iter().copied().filter(|t| scope(*t) == s).collect();
        for pair in reads.windows(2) {
            let (start, end) = (pair[0].end_byte(), pair[1].start_byte());
            let first = calls.partition_point(|c| c.start_byte() < start);
            let between = calls[first..]
                .iter()
                .take_while(|c| c.start_byte() < end)
                .filter(|c| c.end_byte() <= end);
            let mut gpu_work = false;
            let mut synced = false;
            for c in between {
                let method = script.method(*c);
                let callee = script.callee(*c).to_ascii_lowercase();
                synced |= SYNC_METHODS.contains(&method)
                    || method == "synchronize"
                    || method == "elapsed_time";
                gpu_work |= matches!(method, "backward" | "step" | "forward")
                    || method.to_ascii_lowercase().contains("model")
                    || callee.ends_with("net")
                    || callee.contains("model(");
            }
            if gpu_work && !synced {
                out.push(at(
                    script,
                    pair[1],
                    "GL103",
                    format!(
                        "`{}()` is read after GPU work with no sync since the previous reading",
                        script.callee(pair[1])
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{has, in_loop};

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
    }

    #[test]
    fn gl101_not_behind_a_periodic_if_after_the_loop_or_without_grad() {
        assert!(!has(
            &in_loop("if step % 100 == 0:\n    print(loss.item())"),
            "GL101"
        ));
        let after = format!("{}print(loss.item())\n", in_loop("pass"));
        assert!(!has(&after, "GL101"));
        assert!(!has(
            &in_loop("with torch.no_grad():\n    acc = out.argmax(1).cpu()"),
            "GL101"
        ));
        let eval = "with torch.no_grad():\n    for x, y in val:\n        total += crit(model(x), y).item()\n";
        assert!(!has(eval, "GL101"));
        assert!(!has(
            &in_loop("x2 = x.to('cpu', non_blocking=True)"),
            "GL101"
        ));
    }

    #[test]
    fn gl102_synchronize_every_step_but_not_around_a_timer() {
        assert!(has(&in_loop("torch.cuda.synchronize()"), "GL102"));
        let timed = in_loop("torch.cuda.synchronize()\nt1 = time.perf_counter()");
        assert!(!has(&timed, "GL102"));
        assert!(!has(
            &in_loop("if step % 50 == 0:\n    torch.cuda.synchronize()"),
            "GL102"
        ));
    }

    #[test]
    fn gl103_a_timer_read_after_gpu_work_without_sync() {
        let naive =
            "import torch, time\nt0 = time.time()\nout = model(x.cuda())\nt1 = time.time()\n";
        assert!(has(naive, "GL103"));
        let honest = "import torch, time\nt0 = time.time()\nout = model(x.cuda())\ntorch.cuda.synchronize()\nt1 = time.time()\n";
        assert!(!has(honest, "GL103"));
        let data_time = "import torch, time\nend = time.time()\nfor x in loader:\n    data_time = time.time() - end\n";
        assert!(
            !has(data_time, "GL103"),
            "no GPU work between the two reads"
        );
        let cpu_only = "import time\nt0 = time.time()\nout = model(x)\nt1 = time.time()\n";
        assert!(!has(cpu_only, "GL103"), "a script that never mentions CUDA");
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
        let number = "for x in loader:\n    loss = crit(model(x))\n    loss.backward()\n    loss = loss.item()\n    print(loss)\n";
        assert!(!has(number, "GL104"), "loss was made a number");
    }
}
