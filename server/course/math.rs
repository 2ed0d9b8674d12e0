//! LaTeX math to MathML on the server with pulldown-latex: browsers render MathML
//! natively, so lessons need no JavaScript math library and work offline.

use pulldown_latex::config::DisplayMode;
use pulldown_latex::{Parser, RenderConfig, Storage, push_mathml};

/// Renders `tex` as a `<math>` element; `display` chooses block layout. A LaTeX error is
/// returned as text rather than rendered in red, so `gpulab check` can report it.
pub fn to_mathml(tex: &str, display: bool) -> Result<String, String> {
    let storage = Storage::new();
    let events = Parser::new(tex, &storage)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("math `{tex}`: {e}"))?;
    let config = RenderConfig {
        display_mode: if display {
            DisplayMode::Block
        } else {
            DisplayMode::Inline
        },
        annotation: Some(tex),
        ..RenderConfig::default()
    };
    let mut out = String::new();
    push_mathml(
        &mut out,
        events.into_iter().map(Ok::<_, std::io::Error>),
        config,
    )
    .map_err(|e| format!("math `{tex}`: {e}"))?;
    // pulldown-latex 0.8 writes the control space `\ ` as an escaped entity
    // (`&amp;nbsp;`), which shows up literally; emit a real no-break space instead.
    Ok(join_digit_groups(&out.replace("&amp;nbsp;", "&#160;")))
}

/// A number written with thousands separators (`4{,}096` or `4,096`) comes out of
/// pulldown-latex as separate numbers around a comma operator, which browsers space as
/// a list ("4, 096"). This joins every such run back into one `<mn>4,096</mn>`: a comma
/// between a number and exactly three digits.
fn join_digit_groups(mathml: &str) -> String {
    const SEPARATORS: [&str; 2] = ["</mn><mrow><mo>,</mo></mrow><mn>", "</mn><mo>,</mo><mn>"];
    let mut out = mathml.to_string();
    for separator in SEPARATORS {
        let mut from = 0;
        while let Some(found) = out[from..].find(separator) {
            let at = from + found;
            let before = out[..at].rsplit("<mn>").next().unwrap_or("");
            let after = &out[at + separator.len()..];
            let group = after.split("</mn>").next().unwrap_or("");
            let digits = group.split('.').next().unwrap_or("");
            let joins = !before.is_empty()
                && before.bytes().last().is_some_and(|b| b.is_ascii_digit())
                && before.bytes().all(|b| b.is_ascii_digit() || b == b',')
                && digits.len() == 3
                && digits.bytes().all(|b| b.is_ascii_digit());
            if joins {
                out.replace_range(at..at + separator.len(), ",");
                from = at + 1;
            } else {
                from = at + separator.len();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fractions_to_mathml() {
        let html = to_mathml(r"S = \frac{1}{(1-p) + p/N}", true).unwrap();
        assert!(html.starts_with("<math"), "{html}");
        assert!(html.contains("<mfrac>"), "{html}");
        assert!(html.contains("display=\"block\""), "{html}");
    }

    #[test]
    fn control_space_renders_as_a_space_not_an_entity_name() {
        let html = to_mathml(r"16\ \text{B}", false).unwrap();
        assert!(!html.contains("&amp;nbsp;"), "{html}");
    }

    #[test]
    fn thousands_separators_stay_inside_one_number() {
        for tex in [r"1{,}048{,}576", r"4,096"] {
            let html = to_mathml(tex, false).unwrap();
            let shown = tex.replace("{,}", ",");
            assert!(html.contains(&format!("<mn>{shown}</mn>")), "{tex}: {html}");
        }
        let html = to_mathml(r"\frac{524{,}288}{6{,}912} \approx 75.9", false).unwrap();
        assert!(
            html.contains("<mn>524,288</mn>") && html.contains("<mn>6,912</mn>"),
            "{html}"
        );
        // A comma between other things is left alone.
        let pair = to_mathml(r"(a, 12)", false).unwrap();
        assert!(!pair.contains("a,12"), "{pair}");
        let list = to_mathml(r"1, 2", false).unwrap();
        assert!(!list.contains("<mn>1,2</mn>"), "{list}");
    }

    #[test]
    fn broken_latex_is_an_error() {
        assert!(to_mathml(r"\frac{1}{", false).is_err());
        assert!(to_mathml(r"\notacommand x", false).is_err());
    }
}
