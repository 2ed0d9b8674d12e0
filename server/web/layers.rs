//! Hand-written tower services for the layers every request passes through, where the
//! general ones cost a page view more than their work: [`CompressUnencoded`] (compress
//! dynamic bodies; pass pre-encoded ones by), [`UniformRejections`] (the framework's
//! bare 4xx answers reshaped by `error`) and [`Track`] (each request's route, status and
//! latency into the metrics).
//!
//! Why not `middleware::from_fn` and tower-http's `CompressionLayer` around everything:
//! under load on a lesson page with a browser's `Accept-Encoding`, `from_fn` boxed its
//! `Next` and its future and cloned the service it wraps on every request, and the
//! compression layer parsed `Accept-Encoding` into a vector and wrapped the body of every
//! response, the pre-compressed pages from `encoded` included, which it then only passed
//! through. These services box nothing on a page view's way (only a rejection being
//! reshaped, or a body being compressed), and tower-http's compression runs only for
//! responses that are not encoded yet.

use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use pin_project_lite::pin_project;
use tower::{Layer, Service};
use tower_http::compression::predicate::{And, NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{Compression, ResponseFuture};

use super::error;
use super::routes::health::method_label;
use crate::metrics::Metrics;

/// Which dynamic bodies are compressed: above 1 KiB, not images, gRPC or event streams.
type CompressWhen =
    And<And<And<SizeAbove, NotForContentType>, NotForContentType>, NotForContentType>;

fn compress_when() -> CompressWhen {
    SizeAbove::new(1024)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
}

/// A layer that defines a service `$service` wrapping `inner` with `$fields`.
macro_rules! layer_of {
    ($layer:ident => $service:ident { $($field:ident: $ty:ty),* }) => {
        impl<S> Layer<S> for $layer {
            type Service = $service<S>;
            fn layer(&self, inner: S) -> $service<S> {
                $service { inner, $($field: self.$field.clone()),* }
            }
        }
        #[doc = concat!("A service behind [`", stringify!($layer), "`].")]
        #[derive(Clone)]
        pub struct $service<S> {
            inner: S,
            $($field: $ty),*
        }
    };
}

/// Responses that carry `Content-Encoding` (pages and files from `encoded`, already in
/// the best coding the request accepts, with `Vary: accept-encoding`) are passed by as
/// they are; every other response goes through tower-http's compression as before
/// (Brotli or gzip by `Accept-Encoding`, `Vary` added, 406 when the request refuses
/// every coding including identity).
#[derive(Clone)]
pub struct CompressUnencoded {
    predicate: CompressWhen,
}

impl Default for CompressUnencoded {
    /// The layer, compressing dynamic bodies above 1 KiB.
    fn default() -> Self {
        Self {
            predicate: compress_when(),
        }
    }
}

layer_of!(CompressUnencoded => CompressUnencodedService { predicate: CompressWhen });

impl<S> Service<Request> for CompressUnencodedService<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = CompressFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // Every value, as tower-http reads them all: usually one, kept without a vector
        // (a clone of it shares the request's bytes).
        let mut values = request.headers().get_all(header::ACCEPT_ENCODING).iter();
        let accept_encoding = values.next().cloned();
        let more_accept_encoding = values.cloned().collect();
        CompressFuture {
            inner: self.inner.call(request),
            accept_encoding,
            more_accept_encoding,
            predicate: self.predicate.clone(),
            compressing: None,
        }
    }
}

pin_project! {
    /// The inner response, compressed unless it is encoded already.
    pub struct CompressFuture<F> {
        #[pin]
        inner: F,
        accept_encoding: Option<HeaderValue>,
        more_accept_encoding: Vec<HeaderValue>,
        predicate: CompressWhen,
        // tower-http's compression of the inner response, once that response is known
        // and not encoded yet.
        #[pin]
        compressing: Option<ResponseFuture<Ready<Result<Response, Infallible>>, CompressWhen>>,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for CompressFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if this.compressing.as_mut().as_pin_mut().is_none() {
            let response = std::task::ready!(this.inner.poll(cx))?;
            if response.headers().contains_key(header::CONTENT_ENCODING) {
                return Poll::Ready(Ok(response));
            }
            // tower-http's compression around a service that answers with this response:
            // it sees the request's Accept-Encoding and decides exactly as it did as a
            // layer.
            let mut request = Request::new(());
            let values = this.accept_encoding.take().into_iter();
            for value in values.chain(this.more_accept_encoding.drain(..)) {
                request.headers_mut().append(header::ACCEPT_ENCODING, value);
            }
            let mut compression =
                Compression::new(Answer(Some(response))).compress_when(this.predicate.clone());
            this.compressing.set(Some(compression.call(request)));
        }
        let compressing = this.compressing.as_pin_mut().expect("set above");
        // Boxed: the compression body holds a Brotli encoder's state inline (about 5.8
        // KB), and the layers above and hyper would move it by value.
        compressing
            .poll(cx)
            .map(|answer| answer.map(|response| response.map(Body::new)))
    }
}

/// A service that answers its one request with a response it already has.
struct Answer(Option<Response>);

impl Service<Request<()>> for Answer {
    type Response = Response;
    type Error = Infallible;
    type Future = Ready<Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        ready(Ok(self.0.take().expect("answers one request")))
    }
}

/// The framework's own 4xx answers reshaped by [`error::uniform_rejection`]: JSON under
/// `/api/`, the error page elsewhere. Only such a rejection (rare) pays for a box.
#[derive(Clone, Default)]
pub struct UniformRejections;

layer_of!(UniformRejections => UniformRejectionsService {});

impl<S> Service<Request> for UniformRejectionsService<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = RejectionFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let api = request.uri().path().starts_with("/api/");
        RejectionFuture {
            inner: self.inner.call(request),
            api,
            reshaping: None,
        }
    }
}

pin_project! {
    /// The inner response, or the rejection being reshaped once it is known.
    pub struct RejectionFuture<F> {
        #[pin]
        inner: F,
        api: bool,
        reshaping: Option<Pin<Box<dyn Future<Output = Response> + Send>>>,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for RejectionFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.reshaping.is_none() {
            let response = std::task::ready!(this.inner.poll(cx))?;
            if !error::is_bare_rejection(&response) {
                return Poll::Ready(Ok(response));
            }
            *this.reshaping = Some(Box::pin(error::uniform_rejection(response, *this.api)));
        }
        let reshaping = this.reshaping.as_mut().expect("set above");
        reshaping.as_mut().poll(cx).map(Ok)
    }
}

/// Records every request's matched route, method, status and latency in the metrics.
/// Goes inside the routing (`Router::layer`), where the matched route is known.
#[derive(Clone)]
pub struct Track {
    metrics: Arc<Metrics>,
}

impl Track {
    /// Records into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self { metrics }
    }
}

layer_of!(Track => TrackService { metrics: Arc<Metrics> });

impl<S> Service<Request> for TrackService<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = TrackFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // A clone of the matched route (an `Arc<str>`), not a copy.
        let route = request.extensions().get::<MatchedPath>().cloned();
        let method = method_label(request.method());
        TrackFuture {
            inner: self.inner.call(request),
            metrics: Arc::clone(&self.metrics),
            route,
            method,
            started: Instant::now(),
        }
    }
}

pin_project! {
    /// The inner response, recorded when it is ready.
    pub struct TrackFuture<F> {
        #[pin]
        inner: F,
        metrics: Arc<Metrics>,
        route: Option<MatchedPath>,
        method: &'static str,
        started: Instant,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for TrackFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = std::task::ready!(this.inner.poll(cx))?;
        this.metrics.observe(
            this.route.as_ref().map_or("unmatched", MatchedPath::as_str),
            this.method,
            response.status().as_str(),
            this.started.elapsed().as_secs_f64(),
        );
        Poll::Ready(Ok(response))
    }
}
