//! A script's bytes as Python reads them (PEP 263): UTF-8 unless a coding declaration
//! on the first or second line (the second only after a comment or blank first line)
//! names another encoding, a UTF-8 byte-order mark allowed only with UTF-8. Latin-1 and
//! ASCII are decoded as Python decodes them; other encodings through `encoding_rs`
//! (the WHATWG encodings: Windows code pages, ISO 8859, Shift_JIS, EUC, GBK, Big5…).
//! A name Python would not know, an encoding that is not ASCII-compatible (which PEP 263
//! forbids) or bytes that are not valid in the declared encoding are errors, so the
//! checker never reads a script differently from the interpreter.

/// Decodes a script, or says why it cannot be read as Python would.
pub fn decode(bytes: &[u8]) -> Result<String, String> {
    let (bom, body) = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => (true, rest),
        None => (false, bytes),
    };
    let declared = declaration(body);
    let name = declared.as_deref().map(normal_name);
    match name.as_deref() {
        None | Some("utf-8") => String::from_utf8(body.to_vec()).map_err(|e| {
            let line = body[..e.utf8_error().valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1;
            match &declared {
                Some(_) => format!("line {line}: not valid UTF-8, the encoding it declares"),
                None => format!(
                    "line {line}: not valid UTF-8, and no `# -*- coding: ... -*-` line declares another encoding"
                ),
            }
        }),
        Some(_) if bom => Err(format!(
            "a UTF-8 byte-order mark with a declaration of `{}`",
            declared.unwrap_or_default()
        )),
        Some("iso-8859-1") => Ok(body.iter().map(|b| char::from(*b)).collect()),
        Some("ascii") => match body.iter().position(|b| !b.is_ascii()) {
            Some(at) => Err(format!("byte {at}: not ASCII, the encoding it declares")),
            None => Ok(String::from_utf8_lossy(body).into_owned()),
        },
        Some(other) => {
            let encoding = encoding_rs::Encoding::for_label(other.as_bytes())
                .filter(|e| e.is_ascii_compatible() && *e != encoding_rs::REPLACEMENT)
                .ok_or_else(|| format!("unknown or unusable source encoding `{other}`"))?;
            // The Encoding Standard maps the five bytes Windows-1252 leaves undefined to
            // C1 controls; Python's cp1252 codec refuses them, and so does the checker.
            if encoding == encoding_rs::WINDOWS_1252
                && let Some(at) = body.iter().position(|b| [0x81, 0x8D, 0x8F, 0x90, 0x9D].contains(b))
            {
                return Err(format!("byte {at}: not valid windows-1252, the encoding it declares"));
            }
            encoding
                .decode_without_bom_handling_and_without_replacement(body)
                .map(|text| text.into_owned())
                .ok_or_else(|| format!("not valid {}, the encoding it declares", encoding.name()))
        }
    }
}

/// The encoding a coding declaration names, as written.
fn declaration(body: &[u8]) -> Option<String> {
    let mut lines = body.split(|b| *b == b'\n');
    let first = lines.next().unwrap_or_default();
    if let Some(name) = cookie(first) {
        return Some(name);
    }
    let trimmed: Vec<u8> = first
        .iter()
        .copied()
        .skip_while(|b| matches!(b, b' ' | b'\t' | b'\x0c'))
        .collect();
    let blank_or_comment = trimmed.is_empty() || trimmed[0] == b'#' || trimmed == b"\r";
    if blank_or_comment {
        return lines.next().and_then(cookie);
    }
    None
}

/// PEP 263's `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)` on one line.
fn cookie(line: &[u8]) -> Option<String> {
    let line = String::from_utf8_lossy(line);
    let rest = line
        .trim_start_matches([' ', '\t', '\x0c'])
        .strip_prefix('#')?;
    let at = rest.find("coding")?;
    let after = rest[at + "coding".len()..].strip_prefix([':', '='])?;
    let name: String = after
        .trim_start_matches([' ', '\t'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// CPython's `_get_normal_name`, plus the aliases of Latin-1 and ASCII.
fn normal_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase().replace('_', "-");
    let is = |base: &str| lower == base || lower.starts_with(&format!("{base}-"));
    if is("utf-8") || lower == "utf8" {
        "utf-8".into()
    } else if is("latin-1")
        || is("iso-8859-1")
        || is("iso-latin-1")
        || matches!(
            lower.as_str(),
            "latin1" | "latin" | "l1" | "iso8859-1" | "cp819"
        )
    {
        "iso-8859-1".into()
    } else if matches!(lower.as_str(), "ascii" | "us-ascii" | "646") {
        "ascii".into()
    } else {
        lower
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_by_default_and_a_declaration_on_line_one_or_two() {
        assert_eq!(decode("x = 'é'\n".as_bytes()).unwrap(), "x = 'é'\n");
        let latin = b"# -*- coding: latin-1 -*-\nx = '\xe9'\n";
        assert_eq!(
            decode(latin).unwrap(),
            "# -*- coding: latin-1 -*-\nx = '\u{e9}'\n"
        );
        let second = b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '\x80'\n";
        assert!(
            decode(second).unwrap().contains('\u{20ac}'),
            "cp1252's euro sign"
        );
        let too_late = b"import os\n# coding: latin-1\nx = '\xe9'\n";
        assert!(
            decode(too_late).is_err(),
            "line 2 counts only after a comment or blank line"
        );
    }

    #[test]
    fn what_python_would_refuse_is_refused() {
        let error = decode(b"x = '\xe9'\n").unwrap_err();
        assert!(error.contains("line 1: not valid UTF-8"), "{error}");
        assert!(
            decode(b"# coding: klingon\n")
                .unwrap_err()
                .contains("unknown")
        );
        assert!(
            decode(b"# coding: utf-16\nx = 1\n").is_err(),
            "not ASCII-compatible"
        );
        assert!(decode(b"# coding: ascii\nx = '\xe9'\n").is_err());
        assert!(decode(b"\xEF\xBB\xBF# coding: latin-1\n").is_err());
        assert_eq!(decode(b"\xEF\xBB\xBFx = 1\n").unwrap(), "x = 1\n");
    }

    #[test]
    fn names_are_normalised_as_cpython_does() {
        assert_eq!(normal_name("UTF_8"), "utf-8");
        assert_eq!(normal_name("latin-1-unix"), "iso-8859-1");
        assert_eq!(normal_name("ISO-8859-15"), "iso-8859-15");
    }
}
