//! Small HTML helpers for the fragments the preprocessors write by hand (directive
//! fallbacks, code blocks) and for quiz text. Askama escapes everything in templates;
//! this covers the rest.

/// Escapes text for use in HTML content and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Quiz text as HTML: escaped, with each `backtick span` set as `<code>`, the one piece
/// of Markdown that prompts, options and explanations use. A lone backtick stays as it is.
pub fn inline_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        let code = &rest[open + 1..open + 1 + len];
        out.push_str(&escape(&rest[..open]));
        if code.is_empty() {
            out.push_str("``");
        } else {
            out.push_str("<code>");
            out.push_str(&escape(code));
            out.push_str("</code>");
        }
        rest = &rest[open + len + 2..];
    }
    out.push_str(&escape(rest));
    out
}

/// Quiz text as plain words: the backticks of code spans dropped (for search snippets,
/// CSV files and anywhere else markup has no place).
pub fn without_code_marks(text: &str) -> String {
    if text.matches('`').count() < 2 {
        return text.to_string();
    }
    text.replace('`', "")
}

/// A URL fragment id from heading text: lower-case letters and digits kept, runs of
/// spaces and hyphens become one `-`, everything else dropped.
pub fn slugify(text: &str) -> String {
    let mut slug = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if (c == ' ' || c == '-' || c == '_') && !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn backtick_spans_become_code_and_everything_is_escaped() {
        assert_eq!(
            inline_code("Call `torch.cuda.synchronize()` before <timing>"),
            "Call <code>torch.cuda.synchronize()</code> before &lt;timing&gt;"
        );
        assert_eq!(
            inline_code("`a<b` and `c`"),
            "<code>a&lt;b</code> and <code>c</code>"
        );
        assert_eq!(inline_code("a lone ` stays"), "a lone ` stays");
        assert_eq!(inline_code("no code"), "no code");
        assert_eq!(without_code_marks("`x.item()` syncs"), "x.item() syncs");
    }

    #[test]
    fn slugs_are_stable() {
        assert_eq!(slugify("Common mistakes"), "common-mistakes");
        assert_eq!(
            slugify("Advanced: break it on purpose"),
            "advanced-break-it-on-purpose"
        );
        assert_eq!(slugify("Amdahl's law — the limit"), "amdahls-law-the-limit");
        assert_eq!(slugify("`torch.cuda` 101"), "torchcuda-101");
    }
}
