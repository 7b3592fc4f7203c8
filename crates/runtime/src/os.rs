//! Thin wrappers over the OS calls that place and prioritise node threads, measure thread CPU
//! time and turn termination signals into a graceful stop.
//!
//! Thread placement, priority and clocks are `sluice-os`'s; the signal handlers are here (the
//! only unsafe code of this crate).

/// Pins the calling thread to CPU `core` (an id from [`allowed_cpus`]) and asks for SCHED_FIFO
/// at `priority`. Returns a warning for
/// each request the OS refused; the thread then runs unpinned or at normal priority.
pub(crate) fn configure_current_thread(core: Option<usize>, priority: Option<i32>) -> Vec<String> {
    let name = std::thread::current().name().unwrap_or("node").to_string();
    let mut warnings = Vec::new();
    if let Some(core) = core {
        if let Err(e) = pin_to_core(core) {
            warnings.push(format!("{name}: could not pin to CPU {core}: {e}"));
        }
    }
    if let Some(priority) = priority {
        if let Err(e) = set_fifo_priority(priority) {
            warnings.push(format!(
                "{name}: SCHED_FIFO priority {priority} refused ({e}); running at normal priority"
            ));
        }
    }
    warnings
}

/// The CPUs this process may run on (its affinity mask, as `taskset` or a cpuset left it), in
/// ascending order. Node threads are pinned to these, never to a CPU outside the mask.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    sluice_os::allowed_cpus()
}

fn pin_to_core(core: usize) -> Result<(), std::io::Error> {
    sluice_os::pin_current_thread(core)
}

/// Asks for SCHED_FIFO at `priority` for the calling thread.
pub fn set_fifo_priority(priority: i32) -> Result<(), std::io::Error> {
    sluice_os::set_fifo_priority(priority)
}

/// CPU time the calling thread has used (see [`sluice_os::thread_cpu_time`]).
pub(crate) fn thread_cpu_time() -> std::time::Duration {
    sluice_os::thread_cpu_time()
}

/// The signal that asked for a stop (0: none yet). Written only by the signal handler.
static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn note_stop_signal(signal: libc::c_int) {
    // Async-signal-safe: one atomic store.
    STOP_SIGNAL.store(signal, std::sync::atomic::Ordering::Relaxed);
}

/// Turns SIGINT and SIGTERM into a graceful stop of a running graph: the first such signal asks
/// `handle` to stop (sources end, the rest drains, sinks finish their files); a second one
/// kills the process as usual (the handlers reset themselves). Dropping the returned guard
/// ends the watch.
pub fn stop_on_signals(handle: crate::StopHandle) -> SignalWatch {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    STOP_SIGNAL.store(0, Ordering::Relaxed);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction with a zeroed struct plus our handler and flags is the documented
        // way to install a handler; the handler only does an atomic store (async-signal-safe).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_stop_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    let done = Arc::new(AtomicBool::new(false));
    let watcher_done = Arc::clone(&done);
    // A signal handler may not take locks or wake threads safely, so a small thread turns the
    // flag it sets into a stop request (within 20 ms).
    let watcher = std::thread::Builder::new()
        .name("sluice-signals".into())
        .spawn(move || {
            while !watcher_done.load(Ordering::Acquire) {
                if STOP_SIGNAL.load(Ordering::Relaxed) != 0 {
                    handle.stop();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
        .ok();
    SignalWatch { done, watcher }
}

/// Watches for SIGINT and SIGTERM while it lives (see [`stop_on_signals`]).
#[derive(Debug)]
pub struct SignalWatch {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl SignalWatch {
    /// The signal that asked for the stop (`libc::SIGINT`, `libc::SIGTERM`), if one came.
    pub fn signal(&self) -> Option<i32> {
        match STOP_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Release);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}
