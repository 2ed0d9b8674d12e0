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
    Ok(out.replace("&amp;nbsp;", "&#160;"))
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
    fn broken_latex_is_an_error() {
        assert!(to_mathml(r"\frac{1}{", false).is_err());
        assert!(to_mathml(r"\notacommand x", false).is_err());
    }
}
