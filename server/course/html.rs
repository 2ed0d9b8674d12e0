//! Small HTML helpers for the fragments the preprocessors write by hand (directive
//! fallbacks, code blocks). Askama escapes everything in templates; this covers the rest.

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
