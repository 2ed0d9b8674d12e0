//! The class's allocator playgrounds: one capped [`Pool`] per student, all together
//! under a class-wide total and, per network address, a share of it, so one machine
//! cannot take the memory every other student needs. A pool is created by a student's
//! first change, never by a read, and dropped after `idle` without one. The book
//! (which pool, how much each holds, running totals per class and per address) sits
//! behind one short lock; the memory work itself — touching pages, `cuMemAlloc`,
//! freeing — happens under the student's own pool lock, so one student's 512 MiB
//! allocation never stalls the others. While a change runs, the room handed to it is
//! reserved in the book, so two students' concurrent allocations cannot overshoot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::pool::{Pool, PoolStats, Source};
use crate::host::process_resident_bytes;

/// The playgrounds' caps, in bytes, and their idle expiry.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// One student's pool.
    pub per_student: u64,
    /// All pools together.
    pub total: u64,
    /// The pools of all students at one network address together.
    pub per_address: u64,
    /// A pool unused for this long is dropped and its memory released.
    pub idle: Duration,
}

/// A playground's state plus the system's view, for the three bars.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PlaygroundView {
    /// The pool's counters and tensors.
    pub pool: PoolStats,
    /// Device memory in use per the driver (GPU), or this process's resident memory
    /// (CPU backend): the third bar.
    pub system_used_bytes: Option<u64>,
    /// What `system_used_bytes` measures.
    pub system_view: &'static str,
}

struct Entry {
    pool: Arc<Mutex<Pool>>,
    address: Option<IpAddr>,
    reserved: u64,
    used: Instant,
}

#[derive(Default)]
struct Book {
    entries: HashMap<String, Entry>,
    /// Bytes all pools hold, plus rooms handed to changes still running.
    total: u64,
    by_address: HashMap<IpAddr, u64>,
}

impl Book {
    fn charge(&mut self, address: Option<IpAddr>, add: u64, remove: u64) {
        self.total = (self.total + add).saturating_sub(remove);
        if let Some(address) = address {
            let held = self.by_address.entry(address).or_default();
            *held = (*held + add).saturating_sub(remove);
            if *held == 0 {
                self.by_address.remove(&address);
            }
        }
    }
}

/// Every student's playground.
pub struct Playgrounds {
    source: Source,
    caps: Caps,
    book: Mutex<Book>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Playgrounds {
    /// Pools drawing from `source` under `caps`.
    pub fn new(source: Source, caps: Caps) -> Self {
        Self {
            source,
            caps,
            book: Mutex::default(),
        }
    }

    /// The memory source (host or device).
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Drops pools idle past the expiry; returns them so their memory is released
    /// after the book's lock is let go.
    fn expire(&self, book: &mut Book) -> Vec<Arc<Mutex<Pool>>> {
        let idle = self.caps.idle;
        let expired: Vec<String> = book
            .entries
            .iter()
            .filter(|(_, e)| e.used.elapsed() >= idle)
            .map(|(k, _)| k.clone())
            .collect();
        let mut pools = Vec::with_capacity(expired.len());
        for key in expired {
            if let Some(entry) = book.entries.remove(&key) {
                book.charge(entry.address, 0, entry.reserved);
                pools.push(entry.pool);
            }
        }
        pools
    }

    /// Runs `f` on `student`'s pool (created on first use, for a student at `address`)
    /// with the room it may still grow by under every cap.
    pub fn with<T>(
        &self,
        student: &str,
        address: Option<IpAddr>,
        f: impl FnOnce(&mut Pool, u64) -> T,
    ) -> (T, PlaygroundView) {
        let (pool, owner_address, room, expired) = {
            let mut book = lock(&self.book);
            let expired = self.expire(&mut book);
            let entry = book
                .entries
                .entry(student.to_string())
                .or_insert_with(|| Entry {
                    pool: Arc::new(Mutex::new(Pool::new(
                        self.source.clone(),
                        self.caps.per_student,
                    ))),
                    address,
                    reserved: 0,
                    used: Instant::now(),
                });
            entry.used = Instant::now();
            let (pool, owner_address, mine) =
                (Arc::clone(&entry.pool), entry.address, entry.reserved);
            let class_room = self.caps.total.saturating_sub(book.total);
            let address_room = owner_address.map_or(u64::MAX, |a| {
                self.caps
                    .per_address
                    .saturating_sub(book.by_address.get(&a).copied().unwrap_or(0))
            });
            let room = class_room
                .min(address_room)
                .min(self.caps.per_student.saturating_sub(mine));
            book.charge(owner_address, room, 0);
            (pool, owner_address, room, expired)
        };
        drop(expired);
        let mut guard = lock(&pool);
        let before = guard.reserved();
        // The pool may also reuse its own cached blocks, which the book already holds.
        let out = f(&mut guard, room);
        let after = guard.reserved();
        let stats = guard.stats();
        drop(guard);
        {
            let mut book = lock(&self.book);
            let current = book
                .entries
                .get_mut(student)
                .filter(|entry| Arc::ptr_eq(&entry.pool, &pool));
            if let Some(entry) = current {
                entry.reserved = after;
                book.charge(owner_address, after, room + before);
            } else {
                // Reset during the change: the book already let go of what the pool
                // held, and the pool is dropped with `pool` below; only the room is left.
                book.charge(owner_address, 0, room);
            }
        }
        (out, self.view(stats))
    }

    /// `student`'s playground as it stands, without creating one.
    pub fn view_of(&self, student: &str) -> PlaygroundView {
        let pool = lock(&self.book)
            .entries
            .get(student)
            .map(|e| Arc::clone(&e.pool));
        let stats = pool.map_or_else(
            || Pool::new(self.source.clone(), self.caps.per_student).stats(),
            |p| lock(&p).stats(),
        );
        self.view(stats)
    }

    /// `student`'s playground in `torch.cuda.memory._snapshot()`'s shape, without
    /// creating one.
    pub fn snapshot_of(&self, student: &str) -> serde_json::Value {
        let pool = lock(&self.book)
            .entries
            .get(student)
            .map(|e| Arc::clone(&e.pool));
        pool.map_or_else(
            || Pool::new(self.source.clone(), self.caps.per_student).snapshot(),
            |p| lock(&p).snapshot(),
        )
    }

    /// Drops `student`'s pool, releasing its memory.
    pub fn reset(&self, student: &str) -> PlaygroundView {
        let removed = {
            let mut book = lock(&self.book);
            let removed = book.entries.remove(student);
            if let Some(entry) = &removed {
                book.charge(entry.address, 0, entry.reserved);
            }
            removed
        };
        drop(removed);
        self.view_of(student)
    }

    /// Bytes reserved by `student`'s playground (0 without one).
    pub fn reserved_by(&self, student: &str) -> u64 {
        lock(&self.book)
            .entries
            .get(student)
            .map_or(0, |e| e.reserved)
    }

    /// Bytes reserved by all playgrounds (and rooms of changes running now).
    pub fn total_reserved(&self) -> u64 {
        lock(&self.book).total
    }

    /// Playgrounds open now.
    pub fn count(&self) -> usize {
        lock(&self.book).entries.len()
    }

    fn view(&self, pool: PoolStats) -> PlaygroundView {
        match &self.source {
            Source::Device(memory) => PlaygroundView {
                pool,
                system_used_bytes: memory.used_bytes(),
                system_view: "device memory in use per the driver (all processes, CUDA contexts included)",
            },
            Source::Host => PlaygroundView {
                pool,
                system_used_bytes: process_resident_bytes(),
                system_view: "this server process's resident host memory",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn caps(per_student: u64, total: u64, per_address: u64) -> Caps {
        Caps {
            per_student: per_student * MIB,
            total: total * MIB,
            per_address: per_address * MIB,
            idle: Duration::from_secs(60),
        }
    }

    #[test]
    fn playgrounds_are_per_student_and_share_a_total_cap() {
        // Tensors of 10 MiB or more get segments of their own size (rounded to 2 MiB),
        // so the caps below count exactly these tensors' bytes.
        let pg = Playgrounds::new(Source::Host, caps(24, 36, 36));
        let (ok, view) = pg.with("ann", None, |p, room| p.allocate("w", 20 * MIB, room));
        ok.unwrap();
        assert_eq!(view.pool.allocated_bytes, 20 * MIB);
        let (err, _) = pg.with("bob", None, |p, room| p.allocate("w", 18 * MIB, room));
        assert!(
            err.unwrap_err().to_string().contains("shared"),
            "ann's 20 MiB + bob's 18 MiB pass the 36 MiB total"
        );
        let (ok, view) = pg.with("bob", None, |p, room| p.allocate("w", 16 * MIB, room));
        ok.unwrap();
        assert_eq!(view.pool.tensors.len(), 1);
        assert_eq!(pg.total_reserved(), 36 * MIB);
        assert_eq!(pg.reset("ann").pool.reserved_bytes, 0);
        assert_eq!(pg.total_reserved(), 16 * MIB);
        // Freeing and emptying keep the running total right.
        pg.with("bob", None, |p, _| p.free("w")).0.unwrap();
        assert_eq!(pg.total_reserved(), 16 * MIB, "freed but cached");
        pg.with("bob", None, |p, _| p.empty_cache());
        assert_eq!(pg.total_reserved(), 0);
        // A 1 MiB tensor reserves its 2 MiB small segment against the caps.
        pg.with("bob", None, |p, room| p.allocate("tiny", MIB, room))
            .0
            .unwrap();
        assert_eq!(pg.total_reserved(), 2 * MIB);
    }

    #[test]
    fn one_address_gets_only_its_share_and_reads_create_nothing() {
        let pg = Playgrounds::new(Source::Host, caps(24, 96, 30));
        let here: IpAddr = "192.0.2.1".parse().unwrap();
        let there: IpAddr = "192.0.2.2".parse().unwrap();
        assert_eq!(pg.view_of("nobody").pool.reserved_bytes, 0);
        assert_eq!(pg.count(), 0, "a read creates no playground");
        pg.with("a", Some(here), |p, room| p.allocate("x", 16 * MIB, room))
            .0
            .unwrap();
        let (err, _) = pg.with("b", Some(here), |p, room| p.allocate("x", 16 * MIB, room));
        assert!(
            err.is_err(),
            "a second student at the same address passes its 30 MiB"
        );
        pg.with("c", Some(there), |p, room| p.allocate("x", 16 * MIB, room))
            .0
            .unwrap();
        assert_eq!(pg.total_reserved(), 32 * MIB);
    }

    #[test]
    fn idle_playgrounds_expire() {
        let mut c = caps(8, 64, 64);
        c.idle = Duration::from_millis(0);
        let pg = Playgrounds::new(Source::Host, c);
        pg.with("ann", None, |p, room| p.allocate("w", MIB, room))
            .0
            .unwrap();
        let (_, view) = pg.with("ann", None, |_, _| ());
        assert_eq!(
            view.pool.reserved_bytes, 0,
            "an idle pool is dropped before the next use"
        );
        assert_eq!(pg.total_reserved(), 0);
    }
}
