//! Lessons 6 and 7's memory and step mistakes: a loss tensor kept across steps with its
//! graph (GL301), `torch.cuda.empty_cache()` on every step (GL302), and a training loop
//! that steps an optimiser while nothing ever clears the gradients (GL303).

use tree_sitter::Node;

use super::super::calls::is_step_call;
use super::super::context::{same_scope, under_no_grad};
use super::super::flow::Flow;
use super::super::parse::{Script, contains};
use super::{Finding, assigned_a_number, at, is_loss_name, through};

/// The loss name `node` is, when it is a bare name of a loss that is still a tensor.
fn kept_loss<'s>(script: &Script<'s>, node: Node) -> Option<&'s str> {
    let name = script.text(node);
    (node.kind() == "identifier" && is_loss_name(name) && !assigned_a_number(script, node, name))
        .then_some(name)
}

/// Whether `name` outlives one pass of `step_loop`: it is not assigned afresh in the
/// loop's body (`losses = []`, `total = 0` each step), and no `name.backward()` there
/// consumes it (a sum of this step's losses is what the step backpropagates).
fn survives_the_step(script: &Script, step_loop: Node, name: &str) -> bool {
    let Some(body) = step_loop.child_by_field_name("body") else {
        return false;
    };
    !same_scope(body).into_iter().any(|n| match n.kind() {
        "assignment" => n
            .child_by_field_name("left")
            .is_some_and(|l| script.text(l) == name),
        "call" => {
            script.method(n) == "backward"
                && script.receiver(n).is_some_and(|r| script.text(r) == name)
        }
        _ => false,
    })
}

pub(super) fn check(flow: &Flow, out: &mut Vec<Finding>) {
    let script = flow.script;
    for node in script.nodes() {
        let kept = match node.kind() {
            "call" if script.method(node) == "append" => {
                match (script.arguments(node).as_slice(), script.receiver(node)) {
                    ([argument], Some(list)) => kept_loss(script, *argument)
                        .map(|name| (name, script.text(list), "is appended to `{list}`")),
                    _ => None,
                }
            }
            "augmented_assignment"
                if node
                    .child_by_field_name("operator")
                    .is_some_and(|op| script.text(op) == "+=") =>
            {
                node.child_by_field_name("right")
                    .and_then(|r| kept_loss(script, r))
                    .zip(node.child_by_field_name("left"))
                    .map(|(name, total)| (name, script.text(total), "is added to `{list}`"))
            }
            "call" if flow.gpu && script.callee(node).ends_with("empty_cache") => {
                if let Some(step) = flow.every_step(node) {
                    out.push(at(
                        script,
                        node,
                        "GL302",
                        format!(
                            "`empty_cache()` runs on every training step{}",
                            through(script, &step)
                        ),
                    ));
                }
                None
            }
            _ => None,
        };
        if let Some((name, holder, how)) = kept
            && !under_no_grad(script, node)
            && let Some(step) = flow.every_step(node)
            && step.via.is_empty()
            && survives_the_step(script, step.step_loop, holder)
        {
            let how = how.replace("{list}", holder);
            out.push(at(
                script,
                node,
                "GL301",
                format!("`{name}` {how}, which outlives the step, with its autograd graph"),
            ));
        }
    }
    missing_zero_grad(flow, out);
}

/// Whether the script clears gradients anywhere: `zero_grad`, `.grad = None` or
/// `.grad.zero_()` in any spacing.
fn clears_gradients(source: &str) -> bool {
    let squeezed: String = source.chars().filter(|c| !c.is_whitespace()).collect();
    squeezed.contains("zero_grad")
        || squeezed.contains(".grad=None")
        || squeezed.contains("grad.zero_()")
        || squeezed.contains("grad.data.zero_()")
}

/// GL303: a step loop that steps an optimiser, in a script that never clears gradients.
fn missing_zero_grad(flow: &Flow, out: &mut Vec<Finding>) {
    let script = flow.script;
    if clears_gradients(script.source) {
        return;
    }
    let mut reported: Vec<Node> = Vec::new();
    for call in &flow.calls {
        if script.method(*call) != "step" || !is_step_call(script, *call) {
            continue;
        }
        if let Some(l) = flow.step_loop(*call)
            && !reported.iter().any(|r| contains(*r, l))
        {
            reported.push(l);
            out.push(at(
                script,
                l,
                "GL303",
                "this loop calls `backward()` and `step()` but nothing clears the gradients".into(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{has, in_loop, per_epoch};

    #[test]
    fn gl301_a_loss_kept_across_steps() {
        assert!(has(&in_loop("losses.append(loss)"), "GL301"));
        assert!(has(&in_loop("total_loss += loss"), "GL301"));
        assert!(!has(&in_loop("losses.append(loss.item())"), "GL301"));
        assert!(!has(&in_loop("total_loss += loss.detach()"), "GL301"));
        assert!(!has(
            &in_loop("with torch.no_grad():\n    total_loss += loss"),
            "GL301"
        ));
        assert!(!has(&per_epoch("history.append(loss)"), "GL301"));
        let eval = "with torch.no_grad():\n    for x in val:\n        val_loss = crit(model(x))\n        losses.append(val_loss)\n";
        assert!(!has(eval, "GL301"), "not a training loop");
    }

    #[test]
    fn gl301_not_a_sum_of_this_steps_losses() {
        let heads = "import torch\nfor x, ys in loader:\n    total_loss = 0\n    for out, y in zip(model(x.cuda()), ys):\n        head_loss = crit(out, y.cuda())\n        total_loss += head_loss\n    total_loss.backward()\n    opt.step()\n    opt.zero_grad()\n";
        assert!(!has(heads, "GL301"), "reset every step");
        let aux = "import torch\nfor x, y in loader:\n    loss = crit(model(x.cuda()), y)\n    aux_loss = crit(aux(x), y)\n    loss += aux_loss\n    loss.backward()\n    opt.step()\n    opt.zero_grad()\n";
        assert!(!has(aux, "GL301"), "the sum is what backward() consumes");
    }

    #[test]
    fn gl302_empty_cache_every_step_not_between_runs() {
        assert!(has(&in_loop("torch.cuda.empty_cache()"), "GL302"));
        assert!(!has(
            &in_loop("if step % 1000 == 0:\n    torch.cuda.empty_cache()"),
            "GL302"
        ));
        assert!(!has(
            &format!("{}torch.cuda.empty_cache()\n", in_loop("pass")),
            "GL302"
        ));
        let sweep = "import torch\nfor lr in [1e-3, 1e-4]:\n    run_experiment(lr)\n    torch.cuda.empty_cache()\n";
        assert!(!has(sweep, "GL302"), "between independent runs");
    }

    #[test]
    fn gl303_missing_gradient_clearing() {
        let forgot = "for x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n    optimizer.step()\n";
        assert!(has(forgot, "GL303"));
        assert!(!has(&in_loop("pass"), "GL303"));
        let set_none = "for x, y in loader:\n    for p in model.parameters():\n        p.grad=None\n    loss = crit(model(x), y)\n    loss.backward()\n    optimizer.step()\n";
        assert!(!has(set_none, "GL303"));
        let zeroed = set_none.replace("p.grad=None", "p.grad.zero_()");
        assert!(!has(&zeroed, "GL303"));
        let scheduler = "for epoch in range(3):\n    train(model)\n    scheduler.step()\n";
        assert!(
            !has(scheduler, "GL303"),
            "a scheduler's step is not an optimiser's"
        );
    }
}
