//! Static files: everything under `web/static/` is embedded in the binary at build time,
//! plus the syntax-highlighting stylesheet generated at start-up. Each asset carries its
//! content type and a content-hash ETag, computed once, so responses can be revalidated
//! with `If-None-Match` and pages can reference `?v=<hash>` URLs.

use sha2::{Digest, Sha256};
use std::collections::HashMap;

#[derive(rust_embed::Embed)]
#[folder = "web/static/"]
struct EmbeddedStatic;

/// One static file ready to serve.
#[derive(Debug, Clone)]
pub struct Asset {
    /// The file's bytes.
    pub bytes: axum::body::Bytes,
    /// Its `Content-Type`.
    pub content_type: String,
    /// A strong ETag (quoted) derived from the content.
    pub etag: String,
}

/// All static assets by path below `/static/`.
#[derive(Debug, Clone, Default)]
pub struct Assets {
    files: HashMap<String, Asset>,
}

/// Path of the generated highlighting stylesheet below `/static/`.
pub const SYNTAX_CSS: &str = "css/syntax.css";

impl Assets {
    /// Loads the embedded files and generates the syntax stylesheet.
    pub fn load() -> Self {
        let mut files = HashMap::new();
        for path in EmbeddedStatic::iter() {
            if let Some(file) = EmbeddedStatic::get(&path) {
                let asset = Asset::new(&path, file.data.into_owned());
                files.insert(path.into_owned(), asset);
            }
        }
        let css = crate::course::highlight::stylesheet();
        files.insert(
            SYNTAX_CSS.to_string(),
            Asset::new(SYNTAX_CSS, css.into_bytes()),
        );
        Self { files }
    }

    /// The asset at `path` (below `/static/`), if any.
    pub fn get(&self, path: &str) -> Option<&Asset> {
        self.files.get(path)
    }

    /// A cache-busting URL for `path`: `/static/<path>?v=<hash prefix>`.
    pub fn url(&self, path: &str) -> String {
        match self.files.get(path) {
            Some(asset) => format!("/static/{path}?v={}", &asset.etag[1..13]),
            None => format!("/static/{path}"),
        }
    }
}

impl Asset {
    fn new(path: &str, bytes: Vec<u8>) -> Self {
        let hash = Sha256::digest(&bytes);
        let hex: String = hash.iter().take(16).map(|b| format!("{b:02x}")).collect();
        let mime = mime_guess::from_path(path).first_or_octet_stream();
        let content_type = match mime.type_() {
            mime_guess::mime::TEXT | mime_guess::mime::APPLICATION
                if mime.subtype() != mime_guess::mime::OCTET_STREAM =>
            {
                format!("{mime}; charset=utf-8")
            }
            _ => mime.to_string(),
        };
        Self {
            bytes: bytes.into(),
            content_type,
            etag: format!("\"{hex}\""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_have_types_and_etags() {
        let assets = Assets::load();
        let css = assets.get("css/site.css").expect("site.css is embedded");
        assert!(css.content_type.starts_with("text/css"));
        assert_eq!(css.etag.len(), 34);
        assert!(assets.get(SYNTAX_CSS).is_some());
        assert!(
            assets
                .url("css/site.css")
                .starts_with("/static/css/site.css?v=")
        );
    }
}
