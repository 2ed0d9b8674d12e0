//! A student guessing behind the class's NAT address (every test client here is
//! 127.0.0.1, the one address a class behind NAT shares) cannot lock anyone out: after
//! a flood of wrong instructor tokens the right token still signs in from that address,
//! a signed-in instructor is never affected, and a learner's own resume code works while
//! someone at their address guesses codes — only the wrong guesses are slowed.

use reqwest::StatusCode;

use super::TOKEN;
use crate::support::client::{instructor, post_form, set_cookie, text};
use crate::support::{spawn_tuned, spawn_with_token, student};

/// Wrong tokens sent before the right one; the guard pauses an address after 5.
const FLOOD: usize = 400;

/// Sends `count` wrong tokens to the sign-in form, 8 at a time; their statuses.
async fn wrong_tokens(base: &str, count: usize) -> Vec<StatusCode> {
    let guesser = student();
    let mut statuses = Vec::with_capacity(count);
    for batch in 0..count.div_ceil(8) {
        let mut sends = tokio::task::JoinSet::new();
        for i in 0..8.min(count - batch * 8) {
            let guess = format!("wrong-token-of-the-same-length-as-any-{batch:04}-{i}");
            let request = guesser
                .post(format!("{base}/instructor/login"))
                .form(&[("token", guess)]);
            sends.spawn(async move { request.send().await.unwrap().status() });
        }
        statuses.extend(sends.join_all().await);
    }
    statuses
}

#[tokio::test]
async fn a_flood_of_wrong_tokens_from_the_class_address_leaves_the_right_token_working() {
    let app = spawn_with_token(TOKEN).await;
    let (signed_in, login) = instructor(&app, TOKEN).await;
    assert_eq!(login.status(), StatusCode::SEE_OTHER);

    let statuses = wrong_tokens(&app.base, FLOOD).await;
    assert!(
        statuses
            .iter()
            .all(|s| [StatusCode::UNAUTHORIZED, StatusCode::TOO_MANY_REQUESTS].contains(s)),
        "{statuses:?}"
    );
    let paused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert!(
        paused > FLOOD / 2,
        "wrong tokens are slowed: {paused} of {FLOOD} paused"
    );
    // Still paused for the next wrong token...
    assert_eq!(
        wrong_tokens(&app.base, 1).await,
        [StatusCode::TOO_MANY_REQUESTS]
    );

    // ...but the right token from the same address signs in, by form and by bearer.
    let (fresh, login) = instructor(&app, TOKEN).await;
    assert_eq!(
        login.status(),
        StatusCode::SEE_OTHER,
        "the right token is never paused"
    );
    assert!(set_cookie(&login).starts_with("gpulab_instructor="));
    let gradebook = text(&fresh, &format!("{}/instructor", app.base)).await;
    assert!(
        !gradebook.contains("name=\"token\""),
        "signed in: {gradebook:.300}"
    );
    let bearer = student()
        .get(format!("{}/instructor/live.json", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status(), StatusCode::OK);
    let wrong_bearer = student()
        .get(format!("{}/instructor/live.json", app.base))
        .bearer_auth("still-a-wrong-token-and-just-as-long-as-the-right-one")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_bearer.status(), StatusCode::TOO_MANY_REQUESTS);

    // The session signed in before the flood never noticed it.
    let live = signed_in
        .get(format!("{}/instructor/live.json", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_learners_own_resume_code_works_while_someone_at_their_address_guesses() {
    // A small write budget per address, so the flood below would use it up if guesses
    // counted against it.
    let app = spawn_tuned(|config| {
        config.limits.writes_per_minute_per_address = 20;
    })
    .await;
    let owner = student();
    let made = post_form(&owner, &format!("{}/me/resume-code", app.base), &[]).await;
    assert_eq!(made.status(), StatusCode::SEE_OTHER);
    let home = text(&owner, &format!("{}/", app.base)).await;
    let at = home
        .find("class=\"resume-code\">")
        .expect("a code is shown")
        + 20;
    let code = home[at..at + 14].to_string();

    let url = format!("{}/me/resume", app.base);
    let guesser = student();
    let mut statuses = Vec::new();
    for i in 0..60 {
        let guess = format!("0000-0000-{i:04}");
        statuses.push(
            post_form(&guesser, &url, &[("code", guess.as_str())])
                .await
                .status(),
        );
    }
    assert_eq!(statuses[0], StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        statuses[59],
        StatusCode::TOO_MANY_REQUESTS,
        "wrong codes are slowed: {statuses:?}"
    );

    let other_browser = student();
    let resumed = post_form(&other_browser, &url, &[("code", code.as_str())]).await;
    assert_eq!(
        resumed.status(),
        StatusCode::SEE_OTHER,
        "the right code is never paused"
    );
    assert!(set_cookie(&resumed).starts_with("gpulab_student="));
}
