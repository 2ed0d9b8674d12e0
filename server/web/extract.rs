//! Request bodies, decoded one way everywhere: UTF-8 is checked first, and every
//! failure becomes a 400 that says what the body should have looked like.

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
