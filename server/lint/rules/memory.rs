//! Lessons 6 and 7's memory and step mistakes: a loss kept with its graph across steps
//! (GL301), `torch.cuda.empty_cache()` in the loop (GL302), and a training loop with an
//! optimiser step and no `zero_grad()` anywhere (GL303).

use tree_sitter::Node;

use super::super::context::{
    every_training_step, is_training_loop, loops, periodic, under_no_grad,
};
use super::super::parse::Script;
use super::{Finding, assigned_a_number, at, is_loss_name};

/// The loss name `node` is, when it is a bare name of a loss that is still a tensor.
fn kept_loss<'s>(script: &Script<'s>, node: Node) -> Option<&'s str> {
    let name = script.text(node);
    (node.kind() == "identifier" && is_loss_name(name) && !assigned_a_number(script, node, name))
        .then_some(name)
}

pub(super) fn check(script: &Script, out: &mut Vec<Finding>) {
    for node in script.nodes() {
        match node.kind() {
            "call" if script.method(node) == "append" && every_training_step(script, node) => {
                let arguments = script.arguments(node);
                if let [argument] = arguments.as_slice()
                    && let Some(name) = kept_loss(script, *argument)
                {
                    out.push(at(
                        script,
                        node,
                        "GL301",
                        format!("`{name}` is appended with its autograd graph on every step"),
                    ));
                }
            }
            "augmented_assignment" if every_training_step(script, node) => {
                if node
                    .child_by_field_name("operator")
                    .is_some_and(|op| script.text(op) == "+=")
                    && let Some(right) = node.child_by_field_name("right")
                    && let Some(name) = kept_loss(script, right)
                {
                    out.push(at(
                        script,
                        node,
                        "GL301",
                        format!(
                            "the running total keeps `{name}`'s autograd graph from every step"
                        ),
                    ));
                }
            }
            "call" if script.callee(node).ends_with("empty_cache") => {
                if let Some(outer) = loops(node).last()
                    && !periodic(script, node, *outer)
                {
                    out.push(at(
                        script,
                        node,
                        "GL302",
                        "`empty_cache()` runs on every pass of the loop".into(),
                    ));
                }
            }
            _ => {}
        }
    }
    missing_zero_grad(script, out);
}

/// GL303: the innermost loop holding both `backward()` and an optimiser's `step()`, in
/// a script that never calls `zero_grad` nor sets `.grad = None`.
fn missing_zero_grad(script: &Script, out: &mut Vec<Finding>) {
    let source = script.source;
    if source.contains("zero_grad") || source.contains(".grad = None") {
        return;
    }
    for call in script.calls() {
        if script.method(call) != "step" || under_no_grad(script, call) {
            continue;
        }
        let stepper = script
            .receiver(call)
            .map(|r| script.text(r).to_ascii_lowercase())
            .unwrap_or_default();
        if !(stepper.contains("opt") || stepper.contains("scaler")) {
            continue;
        }
        if let Some(l) = loops(call)
            .into_iter()
            .find(|l| is_training_loop(script, *l))
        {
            out.push(at(
                script,
                l,
                "GL303",
                "this loop calls `backward()` and `step()` but nothing ever calls `zero_grad()`"
                    .into(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{has, in_loop};

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
        let eval = "with torch.no_grad():\n    for x in val:\n        val_loss = crit(model(x))\n        losses.append(val_loss)\n";
        assert!(!has(eval, "GL301"), "not a training loop");
    }

    #[test]
    fn gl302_empty_cache_in_the_loop() {
        assert!(has(&in_loop("torch.cuda.empty_cache()"), "GL302"));
        assert!(!has(
            &in_loop("if step % 1000 == 0:\n    torch.cuda.empty_cache()"),
            "GL302"
        ));
        let after = format!("{}torch.cuda.empty_cache()\n", in_loop("pass"));
        assert!(!has(&after, "GL302"));
    }

    #[test]
    fn gl303_missing_zero_grad() {
        let forgot = "for x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n    optimizer.step()\n";
        assert!(has(forgot, "GL303"));
        assert!(!has(&in_loop("pass"), "GL303"));
        let set_none = "for x, y in loader:\n    for p in model.parameters():\n        p.grad = None\n    loss = crit(model(x), y)\n    loss.backward()\n    optimizer.step()\n";
        assert!(!has(set_none, "GL303"));
        let scheduler = "for epoch in range(3):\n    train(model)\n    scheduler.step()\n";
        assert!(
            !has(scheduler, "GL303"),
            "a scheduler's step is not an optimiser's"
        );
    }
}
