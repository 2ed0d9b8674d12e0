//! Prometheus metrics, from the `prometheus` crate with one registry per server (so
//! tests can run many servers in one process). HTTP requests are counted by route
//! template (never the raw path, which would leak ids and explode the label set),
//! method and status, with a latency histogram per route; the experiment queue and GPU
//! memory are read at scrape time by a collector, so they are never stale. The web
//! layer records requests ([`Metrics::observe`]) and serves [`Metrics::render`] at
//! `/metrics`; nothing here knows about HTTP frameworks.

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use crate::engine::Engine;
use crate::playground::snapshot;

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    refused: IntCounterVec,
    writable: IntGauge,
    database: IntGaugeVec,
}

impl Metrics {
    /// A registry with the HTTP metrics and a collector reading `engine`.
    pub fn new(engine: Engine) -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                "gpulab_http_requests_total",
                "HTTP requests by route, method and status",
            ),
            &["route", "method", "status"],
        )
        .expect("valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "gpulab_http_request_duration_seconds",
                "HTTP request latency by route",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["route"],
        )
        .expect("valid metric");
        let refused = IntCounterVec::new(
            Opts::new(
                "gpulab_experiments_refused_total",
                "Experiment submissions refused before queueing, by reason",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let writable = gauge(
            "gpulab_database_writable",
            "1 while the database takes writes (a probe writes at most once a second), else 0",
        );
        let database = IntGaugeVec::new(
            Opts::new(
                "gpulab_database_state",
                "1 for the database's state now: ok, disk_full, read_only, file_gone or error",
            ),
            &["state"],
        )
        .expect("valid metric");
        for metric in [
            Box::new(requests.clone()) as Box<dyn Collector>,
            Box::new(writable.clone()),
            Box::new(database.clone()),
            Box::new(latency.clone()),
            Box::new(refused.clone()),
            Box::new(EngineCollector::new(engine)),
        ] {
            registry.register(metric).expect("metric names are unique");
        }
        let metrics = Self {
            registry,
            requests,
            latency,
            refused,
            writable,
            database,
        };
        metrics.database(&crate::db::health::Writability {
            unwritable: None,
            other: None,
        });
        metrics
    }

    /// Records whether the database takes writes, and the state's name.
    pub fn database(&self, seen: &crate::db::health::Writability) {
        let reason = match (&seen.unwritable, &seen.other) {
            (Some(kind), _) => kind.label(),
            (None, Some(_)) => "error",
            (None, None) => "ok",
        };
        let labels = crate::db::health::Unwritable::ALL
            .map(crate::db::health::Unwritable::label)
            .into_iter()
            .chain(["error", "ok"]);
        for label in labels {
            self.database
                .with_label_values(&[label])
                .set(i64::from(label == reason));
        }
        self.writable.set(i64::from(reason == "ok"));
    }

    /// Counts a submission refused before it reached the queue (e.g. `rate_limited`).
    pub fn rejected(&self, reason: &str) {
        self.refused.with_label_values(&[reason]).inc();
    }

    /// Records one request: its route template, method, status and seconds taken.
    pub fn observe(&self, route: &str, method: &str, status: &str, seconds: f64) {
        self.latency.with_label_values(&[route]).observe(seconds);
        self.requests
            .with_label_values(&[route, method, status])
            .inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buffer);
        String::from_utf8(buffer).unwrap_or_default()
    }
}

/// Reads the queue and memory when scraped.
struct EngineCollector {
    engine: Engine,
    descs: Vec<Desc>,
}

fn gauge(name: &str, help: &str) -> IntGauge {
    IntGauge::new(name, help).expect("valid metric")
}

impl EngineCollector {
    fn new(engine: Engine) -> Self {
        let descs = Self::metrics(&engine, false)
            .iter()
            .flat_map(|m| m.desc().into_iter().cloned())
            .collect();
        Self { engine, descs }
    }

    /// Fresh metric objects holding the engine's figures now (or zeros for `desc`).
    fn metrics(engine: &Engine, read: bool) -> Vec<Box<dyn Collector>> {
        // A scrape renders off the async threads (`routes::health::metrics`).
        let stats = if read {
            engine.stats_blocking()
        } else {
            crate::engine::QueueStats::default()
        };
        let depth = gauge("gpulab_queue_depth", "Experiments waiting in the queue");
        let running = gauge("gpulab_jobs_running", "Experiments running now");
        let peak = gauge(
            "gpulab_jobs_running_peak",
            "Most experiments ever running at once",
        );
        let playgrounds = gauge(
            "gpulab_playgrounds",
            "Allocator playgrounds open (one per student who changed theirs recently)",
        );
        let jobs = IntCounterVec::new(
            Opts::new(
                "gpulab_jobs_total",
                "Experiments by outcome: done, failed, or rejected (queue full)",
            ),
            &["outcome"],
        )
        .expect("valid metric");
        let memory = IntGaugeVec::new(
            Opts::new(
                "gpulab_gpu_memory_bytes",
                "GPU memory from NVML (used, total) and the playgrounds' reserved pools",
            ),
            &["kind"],
        )
        .expect("valid metric");
        if read {
            depth.set(stats.depth as i64);
            running.set(stats.running as i64);
            peak.set(stats.running_peak as i64);
            playgrounds.set(engine.playgrounds.count() as i64);
            jobs.with_label_values(&["done"]).inc_by(stats.done);
            jobs.with_label_values(&["failed"]).inc_by(stats.failed);
            jobs.with_label_values(&["rejected"]).inc_by(stats.rejected);
            memory
                .with_label_values(&["playground_reserved"])
                .set(engine.playgrounds.total_reserved() as i64);
            let snap = snapshot(engine.playgrounds.source());
            if let (Some(used), Some(total)) = (snap.nvml_used_bytes, snap.nvml_total_bytes) {
                memory.with_label_values(&["used"]).set(used as i64);
                memory.with_label_values(&["total"]).set(total as i64);
            }
        }
        vec![
            Box::new(depth),
            Box::new(running),
            Box::new(peak),
            Box::new(playgrounds),
            Box::new(jobs),
            Box::new(memory),
        ]
    }
}

impl Collector for EngineCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        Self::metrics(&self.engine, true)
            .iter()
            .flat_map(|m| m.collect())
            .collect()
    }
}
