//! Request bodies and query strings, decoded one way everywhere: UTF-8 is checked first,
//! and every failure becomes a 400 that says what the body should have looked like; a
//! learner's `predict` query parameter; the longest display name any route accepts.

use crate::web::error::AppError;

/// Parses a JSON body; `example` shows the expected shape in the error message.
pub fn json<T: serde::de::DeserializeOwned>(body: &[u8], example: &str) -> Result<T, AppError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| AppError::BadRequest("the request body is not valid UTF-8".into()))?;
    serde_json::from_str(text)
        .map_err(|e| AppError::BadRequest(format!("the body must be JSON like {example}: {e}")))
}

/// A JSON body that may be absent: empty or whitespace-only is `None`; anything else
/// must be JSON (400 otherwise). Its shape is checked by whoever reads it.
pub fn optional_json(body: &[u8], example: &str) -> Result<Option<serde_json::Value>, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    json(body, example).map(Some)
}

/// Decodes an `application/x-www-form-urlencoded` body into its pairs, in order.
pub fn form(body: &[u8]) -> Result<Vec<(String, String)>, AppError> {
    std::str::from_utf8(body)
        .map_err(|_| AppError::BadRequest("the form body is not valid UTF-8".into()))?;
    Ok(form_urlencoded::parse(body).into_owned().collect())
}

/// The `predict` query parameter: absent, or a number the learner predicted.
pub fn predict_query(query: Option<&str>) -> Result<Option<f64>, AppError> {
    let Some(query) = query else { return Ok(None) };
    let mut prediction = None;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key != "predict" {
            return Err(AppError::BadRequest(format!(
                "unknown query parameter `{key}`: the only one is `predict` (your prediction of the measured value)"
            )));
        }
        let number: f64 = value
            .trim()
            .parse()
            .map_err(|_| AppError::Invalid(format!("`predict` must be a number, not `{value}`")))?;
        prediction =
            Some(crate::experiments::prediction::check(number).map_err(AppError::Invalid)?);
    }
    Ok(prediction)
}

/// Longest display name accepted, in characters (a learner's own, or one the
/// instructor gives).
pub const MAX_NAME_CHARS: usize = 60;
