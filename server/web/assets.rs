//! Static files: everything under `web/static/` is embedded in the binary at build time,
//! plus the syntax-highlighting stylesheet generated at start-up. Each asset is an
//! [`Encoded`] resource — content type, content-hash ETags, Brotli and gzip computed
//! once — so responses can be revalidated with `If-None-Match` and pages can reference
//! `?v=<hash>` URLs.

use std::collections::HashMap;
use std::sync::Arc;

use super::encoded::Encoded;

#[derive(rust_embed::Embed)]
#[folder = "web/static/"]
struct EmbeddedStatic;

/// All static assets by path below `/static/`.
#[derive(Clone, Default)]
pub struct Assets {
    files: HashMap<String, Arc<Encoded>>,
}

/// Path of the generated highlighting stylesheet below `/static/`.
pub const SYNTAX_CSS: &str = "css/syntax.css";

impl Assets {
    /// Loads the embedded files and generates the syntax stylesheet.
    pub fn load() -> Self {
        let mut files = HashMap::new();
        for path in EmbeddedStatic::iter() {
            if let Some(file) = EmbeddedStatic::get(&path) {
                let asset = encoded(&path, file.data.into_owned());
                files.insert(path.into_owned(), asset);
            }
        }
        let css = crate::course::highlight::stylesheet();
        files.insert(
            SYNTAX_CSS.to_string(),
            encoded(SYNTAX_CSS, css.into_bytes()),
        );
        Self { files }
    }

    /// The asset at `path` (below `/static/`), if any.
    pub fn get(&self, path: &str) -> Option<&Arc<Encoded>> {
        self.files.get(path)
    }

    /// Every asset, for the start-up warm-up.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Encoded>> {
        self.files.values()
    }

    /// A cache-busting URL for `path`: `/static/<path>?v=<hash prefix>`.
    pub fn url(&self, path: &str) -> String {
        match self.files.get(path) {
            Some(asset) => format!("/static/{path}?v={}", &asset.hash()[..12]),
            None => format!("/static/{path}"),
        }
    }
}

/// `bytes` as an asset, with the content type its file name implies (text in UTF-8).
fn encoded(path: &str, bytes: Vec<u8>) -> Arc<Encoded> {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    let content_type = match mime.type_() {
        mime_guess::mime::TEXT | mime_guess::mime::APPLICATION
            if mime.subtype() != mime_guess::mime::OCTET_STREAM =>
        {
            format!("{mime}; charset=utf-8")
        }
        _ => mime.to_string(),
    };
    Encoded::new(bytes, &content_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_have_types_and_etags() {
        let assets = Assets::load();
        let css = assets.get("css/site.css").expect("site.css is embedded");
        assert!(css.content_type().to_str().unwrap().starts_with("text/css"));
        assert_eq!(css.hash().len(), 32);
        assert!(assets.get(SYNTAX_CSS).is_some());
        assert!(
            assets
                .url("css/site.css")
                .starts_with("/static/css/site.css?v=")
        );
    }
}
