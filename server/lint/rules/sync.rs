//! Lesson 5's sync points: a value read to the host every step (GL101),
//! `torch.cuda.synchronize()` every step for no measurement (GL102), and a tensor
//! printed every step (GL104); the timing trap (GL103) is [`super::timing`]. All are
//! about waiting for a GPU, so a script that never uses one gets none of them.

use tree_sitter::Node;

use super::super::calls::SYNC_METHODS;
use super::super::context::{calls_in, same_scope, scope};
use super::super::flow::{Flow, Step};
use super::super::parse::Script;
use super::timing::TIMERS;
use super::{Finding, assigned_a_number, at, is_loss_name, through};

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
