//! Parsing: the script as a tree-sitter syntax tree (the Python grammar the editors use),
//! parsed under a time budget, with the first syntax error found and placed; plus the
//! small helpers every rule needs to read a node (its text, its place, a call's dotted
//! name).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, Parser, Tree};

use super::LintError;

/// A parsed script.
pub struct Script<'s> {
    /// The source text.
    pub source: &'s str,
    /// Its syntax tree (free of errors: [`Script::parse`] refuses one with any).
    pub tree: Tree,
    /// The names each scope (by node id) assigns a plain number, once worked out.
    pub number_names: RefCell<HashMap<usize, HashSet<String>>>,
}

impl<'s> Script<'s> {
    /// Parses `source`, giving up after `budget`; a syntax error is an error.
    pub fn parse(source: &'s str, budget: Duration) -> Result<Self, LintError> {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .expect("the Python grammar matches the tree-sitter library it was built for");
        let deadline = Instant::now() + budget;
        let mut past_deadline = |_: &tree_sitter::ParseState| {
            if Instant::now() > deadline {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let bytes = source.as_bytes();
        let tree = parser
            .parse_with_options(
                &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
                None,
                Some(ParseOptions::new().progress_callback(&mut past_deadline)),
            )
            .ok_or(LintError::Timeout)?;
        let script = Self {
            source,
            tree,
            number_names: RefCell::default(),
        };
        if let Some(error) = script.first_error() {
            return Err(error);
        }
        Ok(script)
    }

    /// The first node the parser could not read, as an error.
    fn first_error(&self) -> Option<LintError> {
        let root = self.tree.root_node();
        if !root.has_error() {
            return None;
        }
        let node = preorder(root)
            .into_iter()
            .find(|n| n.is_error() || n.is_missing())?;
        let (line, column) = self.position(node);
        let message = if node.is_missing() {
            format!("the parser expected `{}` here", node.kind())
        } else {
            let text: String = self.text(node).chars().take(40).collect();
            let text = text.lines().next().unwrap_or_default().to_string();
            format!("this is not valid Python near `{text}`")
        };
        Some(LintError::Syntax {
            line,
            column,
            message,
        })
    }

    /// The text of `node`.
    pub fn text(&self, node: Node) -> &'s str {
        self.source.get(node.byte_range()).unwrap_or_default()
    }

    /// 1-based line and 1-based column (in characters) where `node` starts.
    pub fn position(&self, node: Node) -> (usize, usize) {
        let point = node.start_position();
        let line_start = node.start_byte() - point.column;
        let prefix = self
            .source
            .get(line_start..node.start_byte())
            .unwrap_or_default();
        (point.row + 1, prefix.chars().count() + 1)
    }

    /// Every node of the tree, parents before children.
    pub fn nodes(&self) -> Vec<Node<'_>> {
        preorder(self.tree.root_node())
    }

    /// Every `call` node.
    pub fn calls(&self) -> Vec<Node<'_>> {
        self.nodes()
            .into_iter()
            .filter(|n| n.kind() == "call")
            .collect()
    }

    /// A call's callee as written, without spaces: `torch.cuda.synchronize`,
    /// `loss.item`, `print`; for a chained call such as `x.cpu().numpy()` the callee of
    /// the outer call is `x.cpu().numpy`.
    pub fn callee(&self, call: Node) -> String {
        call.child_by_field_name("function")
            .map(|f| self.text(f).split_whitespace().collect())
            .unwrap_or_default()
    }

    /// The method or function name a call ends with: `item` for `loss.item()`.
    pub fn method(&self, call: Node) -> &'s str {
        let Some(function) = call.child_by_field_name("function") else {
            return "";
        };
        match function.kind() {
            "attribute" => function
                .child_by_field_name("attribute")
                .map(|a| self.text(a))
                .unwrap_or_default(),
            "identifier" => self.text(function),
            _ => "",
        }
    }

    /// The object a method is called on: `loss` in `loss.item()`.
    pub fn receiver<'t>(&self, call: Node<'t>) -> Option<Node<'t>> {
        let function = call.child_by_field_name("function")?;
        (function.kind() == "attribute")
            .then(|| function.child_by_field_name("object"))
            .flatten()
    }

    /// A call's keyword argument `name`, if given.
    pub fn keyword<'t>(&self, call: Node<'t>, name: &str) -> Option<Node<'t>> {
        let arguments = call.child_by_field_name("arguments")?;
        children(arguments)
            .into_iter()
            .filter(|a| a.kind() == "keyword_argument")
            .find(|a| {
                a.child_by_field_name("name")
                    .is_some_and(|n| self.text(n) == name)
            })
            .and_then(|a| a.child_by_field_name("value"))
    }

    /// Whether a call passes `**kwargs` (so any keyword may be in it).
    pub fn has_dict_splat(&self, call: Node) -> bool {
        call.child_by_field_name("arguments")
            .is_some_and(|a| children(a).iter().any(|c| c.kind() == "dictionary_splat"))
    }

    /// The call's arguments (positional and keyword, splats included).
    pub fn arguments<'t>(&self, call: Node<'t>) -> Vec<Node<'t>> {
        call.child_by_field_name("arguments")
            .map(children)
            .unwrap_or_default()
    }
}

/// The named children of `node`.
pub fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// `node` and everything under it, parents first.
pub fn preorder(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    loop {
        out.push(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() || cursor.node() == node {
                return out;
            }
        }
    }
}

/// Whether `inner` lies within `outer` (or is it).
pub fn contains(outer: Node, inner: Node) -> bool {
    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(source: &str) -> Script<'_> {
        Script::parse(source, Duration::from_secs(5)).unwrap()
    }

    #[test]
    fn callee_method_and_keywords_read_a_call() {
        let script = parse("torch.utils.data.DataLoader(ds, num_workers = 4, **kw)\n");
        let call = script.calls()[0];
        assert_eq!(script.callee(call), "torch.utils.data.DataLoader");
        assert_eq!(script.method(call), "DataLoader");
        assert_eq!(
            script.keyword(call, "num_workers").map(|n| script.text(n)),
            Some("4")
        );
        assert!(script.keyword(call, "pin_memory").is_none());
        assert!(script.has_dict_splat(call));
    }

    #[test]
    fn positions_are_one_based_in_characters() {
        let script = parse("s = 'é'; x.item()\n");
        let call = script.calls()[0];
        assert_eq!(script.position(call), (1, 10));
    }

    #[test]
    fn a_missing_token_is_named() {
        let Err(LintError::Syntax { line, message, .. }) =
            Script::parse("x = (1,\ny = 2\n", Duration::from_secs(5))
        else {
            panic!("expected a syntax error");
        };
        assert!(line <= 2, "{line}");
        assert!(!message.is_empty());
    }

    #[test]
    fn a_zero_budget_times_out_on_a_long_script() {
        let source = "x = [1, 2, 3]\n".repeat(20_000);
        let outcome = Script::parse(&source, Duration::ZERO);
        assert!(
            matches!(outcome, Err(LintError::Timeout)),
            "{:?}",
            outcome.err()
        );
    }
}
