//! Thin wrappers over the OS calls that place and prioritise node threads, measure thread CPU
//! time and turn termination signals into a graceful stop.
//!
//! The system calls themselves (placement, priority, clocks, signal handlers) are `sluice-os`'s;
//! this module says what a node thread and a graph run make of them.

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

/// Lets the calling thread run on any of `cpus` again (undoes [`configure_current_thread`]'s
/// pin).
pub(crate) fn allow_cpus(cpus: &[usize]) -> Result<(), std::io::Error> {
    sluice_os::allow_current_thread(cpus)
}

/// Asks for SCHED_FIFO at `priority` for the calling thread.
pub fn set_fifo_priority(priority: i32) -> Result<(), std::io::Error> {
    sluice_os::set_fifo_priority(priority)
}

/// CPU time the calling thread has used (see [`sluice_os::thread_cpu_time`]).
pub(crate) fn thread_cpu_time() -> std::time::Duration {
    sluice_os::thread_cpu_time()
}

/// Turns SIGINT and SIGTERM into a graceful stop of a running graph: the first such signal asks
/// `handle` to stop (sources end, the rest drains, sinks finish their files); a second one, for
/// a stop that takes too long, removes the unfinished output files
/// ([`sluice_os::exit_files`]) and exits at once with the shell's code for that signal. Dropping
/// the returned guard ends the watch. The handlers are `sluice_os::signals`'.
pub fn stop_on_signals(handle: crate::StopHandle) -> SignalWatch {
    use sluice_os::signals::{self, Repeat};
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::sync::Arc;
    signals::clear();
    let _ = signals::catch(&[signals::SIGINT, signals::SIGTERM], Repeat::Every);
    let done = Arc::new(AtomicBool::new(false));
    let first = Arc::new(AtomicI32::new(0));
    let (watcher_done, watcher_first) = (Arc::clone(&done), Arc::clone(&first));
    // A signal handler may not take locks or wake threads safely, so a small thread turns the
    // flag it sets into a stop request (within 20 ms).
    let watcher = std::thread::Builder::new()
        .name("sluice-signals".into())
        .spawn(move || {
            while !watcher_done.load(Ordering::Acquire) {
                if let Some(signal) = signals::take() {
                    if watcher_first.load(Ordering::Acquire) == 0 {
                        watcher_first.store(signal, Ordering::Release);
                        handle.stop();
                    } else {
                        // A forced exit runs no destructor of the other threads: their
                        // unfinished files go here.
                        let removed = sluice_os::exit_files::remove_all();
                        eprintln!(
                            "sluice: second {}: exiting at once; {removed} unfinished output \
                             file(s) removed, existing files left as they were",
                            signals::name(signal)
                        );
                        std::process::exit(128 + signal);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
        .ok();
    SignalWatch {
        done,
        first,
        watcher,
    }
}

/// Watches for SIGINT and SIGTERM while it lives (see [`stop_on_signals`]).
#[derive(Debug)]
pub struct SignalWatch {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    first: std::sync::Arc<std::sync::atomic::AtomicI32>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl SignalWatch {
    /// The signal that asked for the stop (`sluice_os::signals::SIGINT` or `SIGTERM`), if one
    /// came.
    pub fn signal(&self) -> Option<i32> {
        match self.first.load(std::sync::atomic::Ordering::Acquire) {
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
        // Ctrl-C ends the process again once nothing watches for it.
        let _ =
            sluice_os::signals::restore(&[sluice_os::signals::SIGINT, sluice_os::signals::SIGTERM]);
    }
}
