//! What a lesson is made of besides its HTML: its sections with their plain text (for
//! search, and for pointing a missed quiz question at the section that teaches it) and
//! its code blocks in order (for the `.py` and `.ipynb` downloads). The Markdown
//! renderer fills an [`Outline`] as it goes, so section ids are the page's own anchors.

/// One `##` or `###` section of a lesson, or the part before the first heading.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The heading's id; `None` for the lesson's opening, before any heading.
    pub id: Option<String>,
    /// The heading's text; empty for the opening.
    pub title: String,
    /// 2 for `##`, 3 for `###`, 0 for the opening.
    pub level: u8,
    /// The section's prose and code as plain text, words separated by single spaces.
    pub text: String,
}

/// One fenced code block (not a widget, experiment or callout).
#[derive(Debug, Clone, PartialEq)]
pub struct CodeBlock {
    /// The fence's language: `python`, `bash`, `text`, … (empty when none was given).
    pub lang: String,
    /// The fence's words after the language, e.g. `lint=GL101` for a block that shows
    /// a script-doctor finding on purpose (empty when none).
    pub info: String,
    /// The code, as written.
    pub code: String,
    /// Index into [`Outline::sections`] of the section it sits in.
    pub section: usize,
}

/// A lesson's sections and code blocks, in page order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outline {
    /// Sections in order; the first is the opening when the lesson has text before its
    /// first heading.
    pub sections: Vec<Section>,
    /// Code blocks in order.
    pub code: Vec<CodeBlock>,
}

impl Outline {
    /// Starts a new section at a heading.
    pub fn heading(&mut self, level: u8, id: &str, title: &str) {
        self.sections.push(Section {
            id: Some(id.to_string()),
            title: title.to_string(),
            level,
            text: String::new(),
        });
    }

    /// Adds prose to the current section, as written (`tidy` evens out the spaces).
    pub fn text(&mut self, text: &str) {
        self.current().text.push_str(text);
    }

    /// Separates what comes next from what came before (a line or block ended).
    pub fn space(&mut self) {
        if let Some(section) = self.sections.last_mut() {
            section.text.push(' ');
        }
    }

    /// Collapses every run of whitespace to one space, once the lesson is read.
    pub fn tidy(&mut self) {
        for section in &mut self.sections {
            section.text = section
                .text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
        }
    }

    /// Adds a code block to the current section (its text is searchable too).
    pub fn code(&mut self, lang: &str, code: &str) {
        self.space();
        self.text(code);
        self.space();
        self.code.push(CodeBlock {
            lang: lang.to_string(),
            info: String::new(),
            code: code.to_string(),
            section: self.sections.len() - 1,
        });
    }

    /// The section text is added to, opening one when the lesson starts with prose.
    fn current(&mut self) -> &mut Section {
        if self.sections.is_empty() {
            self.sections.push(Section {
                id: None,
                title: String::new(),
                level: 0,
                text: String::new(),
            });
        }
        let last = self.sections.len() - 1;
        &mut self.sections[last]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_code_land_in_the_section_they_follow() {
        let mut outline = Outline::default();
        outline.text("An  opening\nline");
        outline.text(".");
        outline.heading(2, "setup", "Set-up");
        outline.text("Install it.");
        outline.code("bash", "pip install torch\n");
        outline.heading(3, "check", "Check");
        outline.code("python", "import torch\n");
        outline.tidy();
        assert_eq!(outline.sections.len(), 3);
        assert_eq!(outline.sections[0].id, None);
        assert_eq!(outline.sections[0].text, "An opening line.");
        assert_eq!(outline.sections[1].text, "Install it. pip install torch");
        assert_eq!(
            outline.code.iter().map(|c| c.section).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }
}
