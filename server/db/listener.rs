//! Waiting for a PostgreSQL `NOTIFY`: the workers sleep on the queue's channel and the
//! allocator playground's between jobs and calls, so a submission wakes them at once
//! instead of at their next poll. SQLite needs none (one process: see
//! `engine::worker_loop::Activity`).

use std::time::Duration;

use super::Db;

/// A `LISTEN` connection on one channel (opened, and reopened after a failure, lazily).
pub struct Listener {
    channel: &'static str,
    client: Option<postgres::Client>,
}

impl Listener {
    /// A listener on `channel` (not connected yet).
    pub fn new(channel: &'static str) -> Self {
        Self {
            channel,
            client: None,
        }
    }

    /// Sleeps until something is announced on the channel or `timeout` passes.
    pub fn wait(&mut self, db: &Db, timeout: Duration) {
        if self.client.as_ref().is_none_or(postgres::Client::is_closed) {
            let channel = self.channel;
            self.client = db.postgres_url().and_then(|url| {
                let mut client = postgres::Client::connect(url, postgres::NoTls).ok()?;
                client.batch_execute(&format!("LISTEN {channel}")).ok()?;
                Some(client)
            });
        }
        let Some(client) = self.client.as_mut() else {
            std::thread::sleep(timeout);
            return;
        };
        use fallible_iterator::FallibleIterator;
        let woke = client.notifications().timeout_iter(timeout).next();
        // Several announcements may have piled up: one wake-up serves them all.
        let broken = match woke {
            Ok(Some(_)) => client.notifications().iter().count().is_err(),
            Ok(None) => false,
            Err(_) => true,
        };
        if broken {
            self.client = None;
        }
    }
}
