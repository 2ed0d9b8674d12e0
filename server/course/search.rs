//! Search across the course, in memory and offline: every lesson section (its heading,
//! prose and code) and every quiz question (prompt, options and explanation) is a
//! document, ranked by BM25 with the heading counted three times. A query word matches
//! a word that equals it or, from three letters on, starts with it (`sync` finds
//! `synchronize`); every query word must match, and when no document has them all the
//! documents with some of them are shown instead.
//!
//! The same ranking points each quiz question at the lesson section that teaches it
//! ([`SearchIndex::best_section`]), so a missed question can link to where to reread.

use std::collections::HashMap;

use serde::Serialize;

use super::Course;
use super::html::without_code_marks;

/// Longest query read, in characters; the rest is ignored.
pub const MAX_QUERY_CHARS: usize = 200;
/// Most query words used.
const MAX_QUERY_WORDS: usize = 12;
/// Words too common to say anything about a page.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "does", "for", "from", "how", "in", "is",
    "it", "its", "of", "on", "or", "that", "the", "this", "to", "what", "when", "which", "with",
    "you", "your",
];
/// BM25's usual constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Weight of a prefix match against a whole-word one.
const PREFIX_WEIGHT: f64 = 0.7;
/// A quiz question ranks a little below a lesson section that matches as well: the
/// lesson teaches, the question tests.
const QUIZ_WEIGHT: f64 = 0.75;
/// Sections that sum up or drill rather than teach: never "the section that teaches".
const NOT_TEACHING: &[&str] = &[
    "sources",
    "recap",
    "practice",
    "basic",
    "intermediate",
    "advanced",
    "common-mistakes",
];

/// A lesson section as a link target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SectionRef {
    /// The lesson's slug.
    pub slug: String,
    /// `/lessons/<slug>#<id>` (or the lesson itself for its opening).
    pub href: String,
    /// The section's heading (the lesson's title for its opening).
    pub title: String,
    /// "Lesson 4: Where tensors live".
    pub lesson: String,
}

/// What a hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HitKind {
    /// A lesson section.
    Lesson,
    /// A quiz or exam question.
    Quiz,
}

/// A piece of a snippet; `mark` when it matched the query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fragment {
    /// The text.
    pub text: String,
    /// Whether it matched a query word.
    pub mark: bool,
}

/// One search result.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// Lesson section or quiz question.
    pub kind: HitKind,
    /// The section heading or question prompt.
    pub title: String,
    /// Where it is: the lesson, or the quiz.
    pub place: String,
    /// Where the result leads.
    pub href: String,
    /// A passage around the first match, matches marked.
    pub snippet: Vec<Fragment>,
}

impl Hit {
    /// `lesson` or `quiz`, for the page's CSS class.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            HitKind::Lesson => "lesson",
            HitKind::Quiz => "quiz",
        }
    }
}

/// The results of one query.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Results {
    /// Best first.
    pub hits: Vec<Hit>,
    /// True when no document had every word and these have only some.
    pub partial: bool,
}

struct Doc {
    kind: HitKind,
    title: String,
    place: String,
    href: String,
    text: String,
    len: usize,
    /// Set for lesson sections that teach (not recaps, practice or sources).
    teaches: Option<SectionRef>,
}

/// Every searchable document of a course, built once at start-up.
#[derive(Default)]
pub struct SearchIndex {
    docs: Vec<Doc>,
    /// The words of every document's text, and of every title.
    bodies: Postings,
    titles: Postings,
    average_len: f64,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SearchIndex({} documents)", self.docs.len())
    }
}

/// Lower-case words of `text`: letters, digits and `_`; `snake_case` also yields its
/// parts, and digit groups split by commas (`1,048,576`) are read as one number.
pub fn words(text: &str) -> Vec<(usize, usize, String)> {
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_word_char(bytes[i].1) {
            i += 1;
            continue;
        }
        let start = bytes[i].0;
        let mut word = String::new();
        while i < bytes.len() {
            let c = bytes[i].1;
            let digit_comma = c == ','
                && word.ends_with(|d: char| d.is_ascii_digit())
                && bytes.get(i + 1).is_some_and(|(_, d)| d.is_ascii_digit());
            if is_word_char(c) {
                word.extend(c.to_lowercase());
            } else if !digit_comma {
                break;
            }
            i += 1;
        }
        let end = bytes.get(i).map_or(text.len(), |(at, _)| *at);
        if word.contains('_') {
            for part in word.split('_').filter(|p| !p.is_empty()) {
                out.push((start, end, part.to_string()));
            }
        }
        out.push((start, end, word));
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A document's words with their counts.
type Terms = HashMap<String, u32>;

fn counts(text: &str) -> Terms {
    let mut map = Terms::new();
    for (_, _, w) in words(text) {
        *map.entry(w).or_insert(0) += 1;
    }
    map
}

/// Every distinct word of one field across the documents, sorted, each with the
/// documents it occurs in (index, count). The words a query word matches are one run,
/// found by one binary search per query word rather than one per document: linking
/// every quiz question to its section at start-up looks up thousands of words in
/// hundreds of documents, and doing that per document took most of a cold start
/// (0.5 s of 0.8 s on a 2-core VM).
#[derive(Default)]
struct Postings(Vec<(String, Vec<(u32, u32)>)>);

impl Postings {
    fn build(docs: impl Iterator<Item = Terms>) -> Self {
        let mut map: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        for (doc, terms) in docs.enumerate() {
            for (word, n) in terms {
                map.entry(word).or_default().push((doc as u32, n));
            }
        }
        let mut words: Vec<_> = map.into_iter().collect();
        words.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Self(words)
    }

    /// Adds to `tf[doc]` how often `term` occurs in each document, prefix matches
    /// weighted by [`matches`]; per document the words are added in sorted order.
    fn add_frequencies(&self, term: &str, tf: &mut [f64]) {
        // Every word `matches` accepts starts with `term`: they sort together from here.
        let start = self.0.partition_point(|(w, _)| w.as_str() < term);
        for (word, docs) in self.0[start..]
            .iter()
            .take_while(|(w, _)| w.starts_with(term))
        {
            let Some(weight) = matches(term, word) else {
                continue;
            };
            for &(doc, n) in docs {
                tf[doc as usize] += weight * f64::from(n);
            }
        }
    }
}

/// The query's words, stop words dropped (unless nothing else is left).
fn query_terms(query: &str) -> Vec<String> {
    let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
    let all: Vec<String> = words(&query).into_iter().map(|(_, _, w)| w).collect();
    let mut kept: Vec<String> = all
        .iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    if kept.is_empty() {
        kept = all;
    }
    kept.dedup();
    kept.truncate(MAX_QUERY_WORDS);
    kept
}

fn matches(term: &str, word: &str) -> Option<f64> {
    if word == term {
        Some(1.0)
    } else if term.chars().count() >= 3 && word.starts_with(term) {
        Some(PREFIX_WEIGHT)
    } else {
        None
    }
}

impl SearchIndex {
    /// Indexes every lesson section and quiz question of `course`.
    pub fn build(course: &Course) -> Self {
        let mut docs = Vec::new();
        let (mut bodies, mut titles) = (Vec::new(), Vec::new());
        let mut push = |doc: Doc| {
            bodies.push(counts(&doc.text));
            titles.push(counts(&doc.title));
            let len = bodies
                .last()
                .map_or(0, |t| t.values().map(|n| *n as usize).sum());
            docs.push(Doc { len, ..doc });
        };
        for lesson in &course.lessons {
            let place = format!("Lesson {}: {}", lesson.number, lesson.title);
            for section in &lesson.outline.sections {
                let (href, title) = match &section.id {
                    Some(id) => (
                        format!("/lessons/{}#{id}", lesson.slug),
                        section.title.clone(),
                    ),
                    None => (format!("/lessons/{}", lesson.slug), lesson.title.clone()),
                };
                let teaches = section
                    .id
                    .as_deref()
                    .is_some_and(|id| !NOT_TEACHING.iter().any(|n| id.starts_with(n)))
                    .then(|| SectionRef {
                        slug: lesson.slug.clone(),
                        href: href.clone(),
                        title: title.clone(),
                        lesson: place.clone(),
                    });
                push(Doc::new(
                    HitKind::Lesson,
                    title,
                    place.clone(),
                    href,
                    section.text.clone(),
                    teaches,
                ));
            }
        }
        for quiz in &course.quizzes {
            let (base, place) = match course.lesson(&quiz.id) {
                Some((lesson, _, _)) => (
                    format!("/lessons/{}/quiz", lesson.slug),
                    format!("Quiz for lesson {}: {}", lesson.number, lesson.title),
                ),
                None => ("/final-exam".to_string(), quiz.title.clone()),
            };
            for (i, q) in quiz.questions.iter().enumerate() {
                let text = format!("{} {} {}", q.prompt, q.options().join(" · "), q.explanation);
                push(Doc::new(
                    HitKind::Quiz,
                    format!("Question {}: {}", i + 1, without_code_marks(&q.prompt)),
                    place.clone(),
                    format!("{base}#question-{}", q.id),
                    without_code_marks(&text),
                    None,
                ));
            }
        }
        let average_len = docs.iter().map(|d| d.len as f64).sum::<f64>() / docs.len().max(1) as f64;
        Self {
            docs,
            bodies: Postings::build(bodies.into_iter()),
            titles: Postings::build(titles.into_iter()),
            average_len,
        }
    }

    /// BM25 score of each document for `terms`; `None` for a document that misses a
    /// term when `all` is set.
    fn scores(
        &self,
        terms: &[String],
        all: bool,
        keep: impl Fn(&Doc) -> bool,
    ) -> Vec<(usize, f64)> {
        let n = self.docs.len() as f64;
        let mut totals: Vec<Option<f64>> =
            self.docs.iter().map(|d| keep(d).then_some(0.0)).collect();
        for term in terms {
            let tfs = self.frequencies(term);
            let df = tfs.iter().filter(|tf| **tf > 0.0).count() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for ((total, tf), doc) in totals.iter_mut().zip(&tfs).zip(&self.docs) {
                let Some(sum) = total else { continue };
                if *tf == 0.0 {
                    if all {
                        *total = None;
                    }
                    continue;
                }
                let norm = K1 * (1.0 - B + B * doc.len as f64 / self.average_len);
                let weight = if doc.kind == HitKind::Quiz {
                    QUIZ_WEIGHT
                } else {
                    1.0
                };
                *sum += weight * idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = totals
            .into_iter()
            .enumerate()
            .filter_map(|(i, s)| s.filter(|s| *s > 0.0).map(|s| (i, s)))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    /// How often `term` occurs in each document, its title counted three times.
    fn frequencies(&self, term: &str) -> Vec<f64> {
        let mut body = vec![0.0; self.docs.len()];
        let mut title = vec![0.0; self.docs.len()];
        self.bodies.add_frequencies(term, &mut body);
        self.titles.add_frequencies(term, &mut title);
        body.iter().zip(&title).map(|(b, t)| b + 3.0 * t).collect()
    }

    /// The best `limit` documents for `query`.
    pub fn search(&self, query: &str, limit: usize) -> Results {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Results::default();
        }
        let mut ranked = self.scores(&terms, true, |_| true);
        let partial = ranked.is_empty();
        if partial {
            ranked = self.scores(&terms, false, |_| true);
        }
        let hits = ranked
            .into_iter()
            .take(limit)
            .map(|(i, _)| {
                let doc = &self.docs[i];
                Hit {
                    kind: doc.kind,
                    title: doc.title.clone(),
                    place: doc.place.clone(),
                    href: doc.href.clone(),
                    snippet: snippet(&doc.text, &terms),
                }
            })
            .collect();
        Results { hits, partial }
    }

    /// The teaching section that best matches `text`, within lesson `slug` when given.
    pub fn best_section(&self, text: &str, slug: Option<&str>) -> Option<SectionRef> {
        let mut terms: Vec<String> = words(text)
            .into_iter()
            .map(|(_, _, w)| w)
            .filter(|w| !STOP_WORDS.contains(&w.as_str()) && w.chars().count() > 2)
            .collect();
        terms.sort();
        terms.dedup();
        let keep = |d: &Doc| {
            d.teaches
                .as_ref()
                .is_some_and(|t| slug.is_none_or(|s| t.slug == s))
        };
        let (best, _) = *self.scores(&terms, false, keep).first()?;
        self.docs[best].teaches.clone()
    }
}

impl Doc {
    fn new(
        kind: HitKind,
        title: String,
        place: String,
        href: String,
        text: String,
        teaches: Option<SectionRef>,
    ) -> Self {
        Self {
            len: 0, // the number of words: set by `SearchIndex::build`, which counts them
            kind,
            title,
            place,
            href,
            text,
            teaches,
        }
    }
}

/// About 200 characters of `text` around its first match, with every match marked.
fn snippet(text: &str, terms: &[String]) -> Vec<Fragment> {
    const BEFORE: usize = 60;
    const LENGTH: usize = 220;
    let mut found: Vec<(usize, usize, usize)> = words(text)
        .into_iter()
        .filter_map(|(s, e, w)| {
            terms
                .iter()
                .position(|t| matches(t, &w).is_some())
                .map(|term| (s, e, term))
        })
        .collect();
    // `pin_memory` and its parts share one range.
    found.dedup_by_key(|(s, e, _)| (*s, *e));
    // Start at the earliest match whose window holds the most different query words.
    let coverage = |at: usize| {
        let mut seen: Vec<usize> = found
            .iter()
            .filter(|(s, _, _)| *s >= at && *s < at + LENGTH - BEFORE)
            .map(|(_, _, t)| *t)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    };
    let first = found
        .iter()
        .map(|(s, _, _)| (*s, coverage(*s)))
        .fold(None, |best: Option<(usize, usize)>, (s, n)| match best {
            Some((_, m)) if m >= n => best,
            _ => Some((s, n)),
        })
        .map_or(0, |(s, _)| s);
    let found: Vec<(usize, usize)> = found.into_iter().map(|(s, e, _)| (s, e)).collect();
    let floor = |at: usize| {
        (0..=at)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0)
    };
    let mut start = floor(first.saturating_sub(BEFORE));
    if start > 0 {
        // Begin at a word.
        start = text[start..]
            .find(' ')
            .map_or(start, |s| start + s + 1)
            .min(first);
    }
    let mut end = floor((start + LENGTH).min(text.len()));
    if end < text.len() {
        end = text[..end].rfind(' ').filter(|e| *e > first).unwrap_or(end);
    }
    let mut out = Vec::new();
    let mut push = |text: &str, mark: bool| {
        if !text.is_empty() {
            out.push(Fragment {
                text: text.to_string(),
                mark,
            });
        }
    };
    if start > 0 {
        push("…", false);
    }
    let mut at = start;
    for (s, e) in found.into_iter().filter(|(s, e)| *s >= start && *e <= end) {
        push(&text[at..s], false);
        push(&text[s..e], true);
        at = e;
    }
    push(&text[at..end], false);
    if end < text.len() {
        push("…", false);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::course::ContentSource;

    fn index() -> (Course, SearchIndex) {
        let course = Course::load(&ContentSource::Embedded).unwrap();
        let index = SearchIndex::build(&course);
        (course, index)
    }

    #[test]
    fn words_split_code_and_keep_grouped_numbers_whole() {
        let w: Vec<String> = words("Set pin_memory=True; 1,048,576 ops, torch.cuda.synchronize()")
            .into_iter()
            .map(|(_, _, w)| w)
            .collect();
        assert_eq!(
            w,
            vec![
                "set",
                "pin",
                "memory",
                "pin_memory",
                "true",
                "1048576",
                "ops",
                "torch",
                "cuda",
                "synchronize"
            ]
        );
    }

    #[test]
    fn finds_lesson_sections_and_quiz_explanations() {
        let (_, index) = index();
        let results = index.search("pinned memory", 10);
        assert!(!results.partial);
        assert!(!results.hits.is_empty());
        let first = &results.hits[0];
        assert!(first.href.starts_with("/lessons/"), "{first:?}");
        assert!(first.snippet.iter().any(|f| f.mark), "{first:?}");
        // A word that only a quiz explanation uses still finds the question.
        let quiz_hits = index.search("synchronize", 50);
        assert!(
            quiz_hits.hits.iter().any(|h| h.kind == HitKind::Quiz),
            "{quiz_hits:?}"
        );
        assert!(quiz_hits.hits.iter().any(|h| h.kind == HitKind::Lesson));
    }

    #[test]
    fn prefixes_match_and_missing_words_fall_back_to_partial_results() {
        let (_, index) = index();
        let prefix = index.search("synchro", 5);
        assert!(!prefix.hits.is_empty());
        let mixed = index.search("synchronize xyzzyplugh", 5);
        assert!(mixed.partial && !mixed.hits.is_empty());
        assert!(index.search("xyzzyplugh", 5).hits.is_empty());
        assert!(index.search("   ", 5).hits.is_empty());
        assert!(index.search(&"memory ".repeat(500), 5).hits.len() <= 5);
    }

    #[test]
    fn postings_count_what_each_document_says() {
        let (course, index) = index();
        // The definition, one document at a time: every word equal to the term, or
        // (from three letters) starting with it, weighted, in sorted order.
        let naive = |text: &str, term: &str| -> f64 {
            let mut terms: Vec<(String, u32)> = counts(text).into_iter().collect();
            terms.sort_unstable();
            terms
                .iter()
                .filter_map(|(w, n)| matches(term, w).map(|weight| weight * f64::from(*n)))
                .sum()
        };
        assert!(course.lessons.len() > 1 && index.docs.len() > 100);
        for term in [
            "memory",
            "sync",
            "gpu",
            "pin_memory",
            "1048576",
            "to",
            "xyzzyplugh",
        ] {
            let got = index.frequencies(term);
            let mut hits = 0;
            for (doc, tf) in index.docs.iter().zip(&got) {
                let want = naive(&doc.text, term) + 3.0 * naive(&doc.title, term);
                assert_eq!(*tf, want, "{term} in {}", doc.href);
                hits += usize::from(want > 0.0);
            }
            assert_eq!(hits > 0, term != "xyzzyplugh", "{term}: {hits} documents");
        }
    }

    #[test]
    fn snippets_are_cut_at_words_and_mark_every_match() {
        let text = format!(
            "{} the pinned buffer is pinned here {}",
            "word ".repeat(40),
            "tail ".repeat(60)
        );
        let parts = snippet(&text, &["pinned".to_string()]);
        assert_eq!(parts.first().unwrap().text, "…");
        assert_eq!(parts.last().unwrap().text, "…");
        assert_eq!(parts.iter().filter(|f| f.mark).count(), 2);
        assert!(parts.iter().all(|f| f.mark || !f.text.contains("pinned")));
    }

    #[test]
    fn every_question_is_pointed_at_a_teaching_section_of_its_lesson() {
        let (course, index) = index();
        for quiz in &course.quizzes {
            for q in &quiz.questions {
                let slug = course.lesson(&quiz.id).map(|(l, _, _)| l.slug.as_str());
                let section = index
                    .best_section(&format!("{} {}", q.prompt, q.explanation), slug)
                    .unwrap_or_else(|| panic!("{}/{}: no section", quiz.id, q.id));
                if let Some(slug) = slug {
                    assert_eq!(section.slug, slug);
                }
                assert!(!section.href.ends_with("#sources") && !section.href.ends_with("#recap"));
            }
        }
    }
}
