//! [`KeepAlive`]: a background thread that renews one lease until dropped.

use super::{Etcd, EtcdError, LeaseId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Keeps a lease alive: renews it every third of its TTL from a background thread, and stops
/// (without revoking it) when dropped.
///
/// The lease is considered lost, and [`KeepAlive::is_alive`] turns false for good, when etcd
/// says it no longer exists or when no renewal has succeeded for a whole TTL (etcd
/// unreachable: by then it has expired on the server too). The holder of a leader or primary
/// key checks `is_alive` before acting as one.
pub struct KeepAlive {
    lease: LeaseId,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    alive: AtomicBool,
    stop: Mutex<bool>,
    wake: Condvar,
    last_error: Mutex<Option<String>>,
}

impl KeepAlive {
    /// Starts renewing `lease`, granted with `ttl_s` seconds, on `etcd`.
    pub fn start(etcd: Etcd, lease: LeaseId, ttl_s: i64) -> KeepAlive {
        let ttl = Duration::from_secs(ttl_s.max(1) as u64);
        let shared = Arc::new(Shared {
            alive: AtomicBool::new(true),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            last_error: Mutex::new(None),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("etcd-lease-{:x}", lease.0))
            .spawn(move || renew(etcd, lease, ttl, &s))
            .ok();
        if thread.is_none() {
            shared.alive.store(false, Ordering::SeqCst);
            *lock(&shared.last_error) = Some("cannot start the keep-alive thread".into());
        }
        KeepAlive {
            lease,
            shared,
            thread,
        }
    }

    /// Whether the lease is still held (see the type's documentation).
    pub fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// The last renewal error, if any (also transient ones that a later renewal recovered from).
    pub fn last_error(&self) -> Option<String> {
        lock(&self.shared.last_error).clone()
    }

    /// The lease kept alive.
    pub fn lease(&self) -> LeaseId {
        self.lease
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn renew(etcd: Etcd, lease: LeaseId, ttl: Duration, shared: &Shared) {
    let period = (ttl / 3).max(Duration::from_millis(100));
    // A renewal must not block longer than the period, or the lease lapses meanwhile.
    let etcd = etcd.with_timeouts(period, period);
    let mut last_ok = Instant::now();
    loop {
        {
            let stop = lock(&shared.stop);
            let (stop, _) = shared
                .wake
                .wait_timeout_while(stop, period, |s| !*s)
                .unwrap_or_else(|p| p.into_inner());
            if *stop {
                return;
            }
        }
        match etcd.keep_alive_once(lease) {
            Ok(_) => last_ok = Instant::now(),
            Err(e) => {
                let gone = matches!(e, EtcdError::LeaseExpired { .. });
                *lock(&shared.last_error) = Some(e.to_string());
                if gone || last_ok.elapsed() >= ttl {
                    shared.alive.store(false, Ordering::SeqCst);
                    return;
                }
            }
        }
    }
}
