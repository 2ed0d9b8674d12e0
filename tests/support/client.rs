//! HTTP conveniences for tests: a page's text, a JSON body, and an instructor who has
//! logged in (a client holding the session cookie).

use serde_json::Value;

use super::{TestApp, student};

/// `GET url` as `client`, the body as text.
pub(crate) async fn text(client: &reqwest::Client, url: &str) -> String {
    client.get(url).send().await.unwrap().text().await.unwrap()
}

/// `GET url` as `client`, the body as JSON.
pub(crate) async fn json(client: &reqwest::Client, url: &str) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

/// A client that logged in at `/instructor/login` with `token`; the response too.
pub(crate) async fn instructor(app: &TestApp, token: &str) -> (reqwest::Client, reqwest::Response) {
    let client = student();
    let login = client
        .post(format!("{}/instructor/login", app.base))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    (client, login)
}

/// Posts the form `pairs` to `url` as `client`.
pub(crate) async fn post_form(
    client: &reqwest::Client,
    url: &str,
    pairs: &[(&str, &str)],
) -> reqwest::Response {
    client.post(url).form(pairs).send().await.unwrap()
}

/// Sets `client`'s display name through the form.
pub(crate) async fn set_name(
    app: &TestApp,
    client: &reqwest::Client,
    name: &str,
) -> reqwest::Response {
    post_form(
        client,
        &format!("{}/me/name", app.base),
        &[("display_name", name)],
    )
    .await
}

/// Sends `request` and reads the answer as JSON, whatever its status.
pub(crate) async fn send_json(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// `/instructor/{name}` (a CSV export) fetched with `token` as a bearer token.
pub(crate) async fn instructor_csv(app: &TestApp, token: &str, name: &str) -> String {
    instructor_page(app, token, &format!("/instructor/{name}")).await
}

/// An instructor `path` fetched with `token` as a bearer token, the body as text.
pub(crate) async fn instructor_page(app: &TestApp, token: &str, path: &str) -> String {
    reqwest::Client::new()
        .get(format!("{}{path}", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The response's `Set-Cookie` header (empty when there is none).
pub(crate) fn set_cookie(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}
