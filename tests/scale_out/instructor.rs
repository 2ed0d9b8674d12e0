//! The instructor signs in once for the class: a sign-in on one web node counts on the
//! others (the proxy spreads requests over them), and signing out on one ends it on all.

use super::{class_database, web_node_with};
use crate::support::student;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instructor_signed_in_on_one_web_node_is_signed_in_on_all() {
    let Some((url, _db, _scratch)) = class_database() else {
        return;
    };
    let token = "a-long-enough-instructor-token-for-tests-0123456789";
    let env = [("GPULAB_INSTRUCTOR_TOKEN", token)];
    let (web1, web2) = (web_node_with(&url, &env), web_node_with(&url, &env));
    let browser = student();
    let grades = |base: &str| browser.get(format!("{base}/instructor/grades.csv")).send();
    assert_eq!(
        grades(&web2.base).await.unwrap().status(),
        401,
        "not signed in yet"
    );
    let login = browser
        .post(format!("{}/instructor/login", web1.base))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert!(login.status().is_redirection(), "{}", login.status());
    assert_eq!(grades(&web1.base).await.unwrap().status(), 200);
    assert_eq!(
        grades(&web2.base).await.unwrap().status(),
        200,
        "the other web node knows the sign-in"
    );
    let logout = browser
        .post(format!("{}/instructor/logout", web2.base))
        .send()
        .await
        .unwrap();
    assert!(logout.status().is_redirection());
    assert_eq!(
        grades(&web1.base).await.unwrap().status(),
        401,
        "signed out everywhere"
    );
    let stranger = student();
    assert_eq!(
        stranger
            .get(format!("{}/instructor/grades.csv", web2.base))
            .send()
            .await
            .unwrap()
            .status(),
        401,
        "another browser is not signed in"
    );
}
