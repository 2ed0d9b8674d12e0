//! What handlers read from the engine about the queue: its figures, each student's
//! use of the workers, its depth and the expected wait, a job's state (and waiting for
//! it to finish), whether others wait (so a per-student cap binds), and the device's
//! ceilings. All of it is read from the database, so a
//! web node and a one-box server answer alike; the refusals and the running peak this
//! process saw itself are added from [`super::Engine`]'s own counters.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Engine;
use crate::db::jobs::{self, JobState, OwnerUsage, QueueStats};
use crate::db::{DbError, fair_share, worker_ceilings};

impl Engine {
    /// Queue-wide figures, read now: jobs waiting and running, the outcomes of the jobs
    /// finished since this engine started, the peak of this process's workers and the
    /// refusals it answered.
    pub async fn stats(&self) -> QueueStats {
        let since = self.local.started_secs;
        let read = self.db.run(move |tx| jobs::stats(tx, since)).await;
        self.with_local(read)
    }

    /// [`Engine::stats`] for a caller off the async threads (the `/metrics` scrape):
    /// it blocks on the database.
    pub fn stats_blocking(&self) -> QueueStats {
        let since = self.local.started_secs;
        self.with_local(self.db.run_blocking(|tx| jobs::stats(tx, since)))
    }

    fn with_local(&self, read: Result<QueueStats, DbError>) -> QueueStats {
        let mut stats = read.unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot read the experiment queue's figures");
            QueueStats::default()
        });
        stats.running_peak = stats.running_peak.max(self.local.activity.peak());
        stats.rejected = self.local.rejected.load(Ordering::Relaxed);
        stats
    }

    /// Each student's use of the workers over the last day, busiest first.
    pub async fn usage(&self) -> Vec<(String, OwnerUsage)> {
        let mut usage = self.db.run(jobs::usage).await.unwrap_or_default();
        if let Ok(by) = self.local.rejected_by.lock() {
            for (owner, figures) in &mut usage {
                figures.rejected = by.get(owner).copied().unwrap_or(0);
            }
            let missing: Vec<_> = by
                .iter()
                .filter(|(owner, _)| !usage.iter().any(|(o, _)| o == *owner))
                .map(|(owner, n)| {
                    (
                        owner.clone(),
                        OwnerUsage {
                            rejected: *n,
                            ..OwnerUsage::default()
                        },
                    )
                })
                .collect();
            usage.extend(missing);
        }
        usage
    }

    /// Jobs waiting now.
    pub async fn queue_depth(&self) -> usize {
        self.db.run(jobs::depth).await.unwrap_or_default()
    }

    /// The ceilings of the device experiments run on: this process's own once measured,
    /// else (a web node, whose `gpulab worker`s measure theirs) those a live worker
    /// stored ([`worker_ceilings::live`]); `None` until either exists.
    pub async fn ceilings(&self) -> Option<crate::experiments::ceilings::Ceilings> {
        if let Some(own) = self.ceilings.get() {
            return Some(own.clone());
        }
        let text = self.db.run(worker_ceilings::live).await.ok().flatten()?;
        serde_json::from_str(&text)
            .inspect_err(|error| tracing::warn!(%error, "a worker's stored ceilings do not parse"))
            .ok()
    }

    /// Estimated wait for a new job, in seconds.
    pub async fn estimated_wait_secs(&self) -> f64 {
        self.db
            .run(jobs::estimated_wait_secs)
            .await
            .unwrap_or_default()
    }

    /// Waits (polling every 100 ms) until job `id` has finished, or `deadline` passed;
    /// the final state, or what it was at the deadline (`None`: no such job).
    pub async fn finished(
        &self,
        id: u64,
        deadline: Option<std::time::Instant>,
    ) -> Option<JobState> {
        loop {
            let past = deadline.is_some_and(|d| std::time::Instant::now() >= d);
            match self.job(id, None).await {
                Ok(Some(JobState::Queued { .. } | JobState::Running)) if !past => {}
                Ok(state) => return state,
                // The database is briefly away: keep waiting.
                Err(_) if !past => {}
                Err(_) => return None,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A job's state, for its owner (`None`: anyone, the instructor); an error when the
    /// database cannot be read.
    pub async fn job(&self, id: u64, owner: Option<&str>) -> Result<Option<JobState>, String> {
        let owner = owner.map(str::to_string);
        self.db
            .run(move |tx| jobs::state(tx, id, owner.as_deref()))
            .await
            .map_err(|e| e.to_string())
    }

    /// Whether a student other than `owner` has a job waiting, so that a per-student cap
    /// would protect someone ([`crate::db::fair_share`]); an error when the database
    /// cannot be read.
    pub async fn others_waiting(&self, owner: &str) -> Result<bool, String> {
        let owner = owner.to_string();
        self.db
            .run(move |tx| fair_share::others_waiting(tx, &owner))
            .await
            .map_err(|e| e.to_string())
    }
}
