//! The layer in front of every student route: who is asking ([`identity`]: the student
//! cookie read, or a new id minted and sent back in `Set-Cookie`) and whether a write may
//! go ahead ([`guard`]: the cookie check and the address's write budget), as one
//! hand-written tower service.
//!
//! It was two `middleware::from_fn` layers; each boxed its `Next`, boxed its future and
//! cloned the route it wraps on every request, and page views are the hottest path the
//! server has. Here the checks run in `call`, the handler's future is wrapped without a
//! box, and the limits come from the layer rather than from request extensions.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header::SET_COOKIE;
use axum::response::Response;
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use super::guard::{self, AddressLimiter};
use super::identity::{self, CookiePolicy, STUDENT_COOKIE, StudentId};
use super::state::AppState;

/// What a student route's writes are held to besides the cookie check.
#[derive(Clone)]
pub enum WriteBudget {
    /// The network address's writes per minute, all its students together.
    PerAddress(Arc<AddressLimiter>),
    /// Nothing more: the route has a guard of its own (a resume code, whose wrong guesses
    /// `login_guard` slows; counting them against the address's budget would let one
    /// student guessing behind a class's NAT address refuse the right code of another).
    CookieOnly,
}

/// Identifies the student and guards writes; see the module docs.
#[derive(Clone)]
pub struct StudentLayer {
    policy: CookiePolicy,
    budget: WriteBudget,
}

impl StudentLayer {
    /// Cookies marked by `policy`, writes held to `budget`.
    pub fn new(policy: CookiePolicy, budget: WriteBudget) -> Self {
        Self { policy, budget }
    }

    /// For the student routes: the cookie check and the address's write budget.
    pub fn with_write_budget(state: &AppState) -> Self {
        Self::new(
            CookiePolicy::of(&state.config),
            WriteBudget::PerAddress(Arc::clone(&state.write_limiter)),
        )
    }

    /// For a student write with a guard of its own: the cookie check only.
    pub fn cookie_only(state: &AppState) -> Self {
        Self::new(CookiePolicy::of(&state.config), WriteBudget::CookieOnly)
    }
}

impl<S> Layer<S> for StudentLayer {
    type Service = Student<S>;

    fn layer(&self, inner: S) -> Student<S> {
        Student {
            inner,
            layer: self.clone(),
        }
    }
}

/// A student route behind [`StudentLayer`].
#[derive(Clone)]
pub struct Student<S> {
    inner: S,
    layer: StudentLayer,
}

impl<S> Service<Request> for Student<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = StudentFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let existing = identity::cookie(request.headers(), STUDENT_COOKIE)
            .filter(|v| identity::is_valid_id(v))
            .map(str::to_string);
        let fresh = existing.is_none();
        let id = existing.unwrap_or_else(identity::random_token);
        // A new id goes back in the cookie, on a refusal too: the next request has it.
        let set_cookie = fresh
            .then(|| identity::private_cookie(STUDENT_COOKIE, id.clone(), 365, self.layer.policy));
        let limiter = match &self.layer.budget {
            WriteBudget::PerAddress(limiter) => Some(limiter.as_ref()),
            WriteBudget::CookieOnly => None,
        };
        if let Some(refused) = guard::refusal(&request, fresh, limiter) {
            return StudentFuture {
                handler: None,
                refused: Some(refused),
                set_cookie,
            };
        }
        request.extensions_mut().insert(StudentId(id));
        StudentFuture {
            handler: Some(self.inner.call(request)),
            refused: None,
            set_cookie,
        }
    }
}

pin_project! {
    /// The handler's response (or the guard's refusal), with the new student's cookie.
    pub struct StudentFuture<F> {
        #[pin]
        handler: Option<F>,
        refused: Option<Response>,
        set_cookie: Option<HeaderValue>,
    }
}

impl<F> Future for StudentFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = match this.handler.as_pin_mut() {
            Some(handler) => ready!(handler.poll(cx))?,
            None => this.refused.take().expect("a refusal is returned once"),
        };
        if let Some(cookie) = this.set_cookie.take() {
            response.headers_mut().append(SET_COOKIE, cookie);
        }
        Poll::Ready(Ok(response))
    }
}
