//! Thin wrappers over the OS calls that place and prioritise node threads.
//!
//! (Unsafe is confined to this module: each call is a libc wrapper.)

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
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`, which the call
    // fills.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads one bit of `set`; the index is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

fn pin_to_core(core: usize) -> Result<(), std::io::Error> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`; `core` is bounds-checked by the macro's
    // implementation against the set's size.
    unsafe { libc::CPU_SET(core, &mut set) };
    // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Asks for SCHED_FIFO at `priority` for the calling thread.
pub fn set_fifo_priority(priority: i32) -> Result<(), std::io::Error> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pthread_self is always valid for the calling thread; `param` outlives the call.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`): unlike wall time it does
/// not count the time the thread was preempted, which on a shared machine can be most of a short
/// measurement.
pub(crate) fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
