//! The system calls that sluice's crates share, written once: placing and prioritising threads,
//! reading CPU clocks, sleeping to absolute deadlines, futexes, the floating-point mode of
//! real-time threads ([`DenormalGuard`], [`set_flush_to_zero`]), termination signals
//! ([`signals`]), the files to remove when a signal forces an exit ([`exit_files`]) and long
//! files written at the disk's pace ([`writeback`]). Most go through `rustix`; what `rustix`
//! does not cover (the real-time scheduling policy, signal handlers, `sync_file_range`) goes
//! through `libc`, and MXCSR through `asm!`.
//!
//! Linux is the target. Elsewhere the calls report that they are unsupported (or do nothing
//! where doing nothing is a correct fallback), so the crates above still build.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod denormals;
pub mod exit_files;
pub mod signals;
pub mod writeback;

pub use denormals::{set_flush_to_zero, DenormalGuard};

use std::io;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Bytes the system could give this process now: `MemAvailable` from `/proc/meminfo` (free
/// memory plus what the kernel can reclaim), or `None` where it cannot be read.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The CPUs this process may run on (its affinity mask, as `taskset` or a cpuset left it), in
/// ascending order; empty if it cannot be read.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{sched_getaffinity, CpuSet};
        match sched_getaffinity(None) {
            Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
            Err(_) => Vec::new(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

/// Pins the calling thread to CPU `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    allow_current_thread(&[cpu])
}

/// Lets the calling thread run on any of `cpus` (and no other): undoes a pin when given every
/// allowed CPU ([`allowed_cpus`]).
pub fn allow_current_thread(cpus: &[usize]) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{sched_setaffinity, CpuSet};
        let mut set = CpuSet::new();
        for &cpu in cpus {
            if cpu >= CpuSet::MAX_CPU {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "CPU {cpu} is beyond the {} a CPU set holds",
                        CpuSet::MAX_CPU
                    ),
                ));
            }
            set.set(cpu);
        }
        sched_setaffinity(None, &set).map_err(io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Asks for SCHED_FIFO at `priority` (1–99) for the calling thread. Refused without
/// CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it; the thread then keeps its policy.
pub fn set_fifo_priority(priority: i32) -> io::Result<()> {
    set_policy(libc::SCHED_FIFO, priority)
}

/// Puts the calling thread back on the normal time-sharing policy (SCHED_OTHER).
pub fn set_normal_priority() -> io::Result<()> {
    set_policy(libc::SCHED_OTHER, 0)
}

fn set_policy(policy: libc::c_int, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pthread_self is always valid for the calling thread; `param` outlives the call.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Raises the calling thread's nice value by `delta` (at most to 19); lowering it would need
/// privileges, so a negative `delta` does nothing. Always permitted: the fallback when
/// SCHED_FIFO is refused.
pub fn raise_nice(delta: i32) {
    #[cfg(target_os = "linux")]
    if delta > 0 {
        use rustix::process::{getpriority_process, setpriority_process};
        use rustix::thread::gettid;
        // Linux applies PRIO_PROCESS with a thread id to that thread alone.
        let me = Some(gettid());
        if let Ok(current) = getpriority_process(me) {
            let _ = setpriority_process(me, (current + delta).min(19));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = delta;
}

/// CPU time the calling thread has used: unlike wall time it does not count the time the thread
/// was preempted, which on a shared machine can be most of a short measurement.
pub fn thread_cpu_time() -> Duration {
    clock(rustix::time::ClockId::ThreadCPUTime)
}

/// CPU time the whole process has used.
pub fn process_cpu_time() -> Duration {
    clock(rustix::time::ClockId::ProcessCPUTime)
}

/// Monotonic time since an arbitrary start, in nanoseconds (for absolute deadlines).
pub fn monotonic_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as i64 * 1_000_000_000 + t.tv_nsec as i64
}

/// Sleeps until the monotonic clock reads `deadline_ns` ([`monotonic_ns`]'s scale): one
/// absolute-deadline sleep, so periodic loops do not drift.
pub fn sleep_until_monotonic_ns(deadline_ns: i64) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{clock_nanosleep_absolute, ClockId};
        let ts = rustix::time::Timespec {
            tv_sec: deadline_ns.div_euclid(1_000_000_000),
            tv_nsec: deadline_ns.rem_euclid(1_000_000_000),
        };
        // Interrupted sleeps restart: the deadline is absolute.
        while let Err(rustix::io::Errno::INTR) = clock_nanosleep_absolute(ClockId::Monotonic, &ts) {
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let now = monotonic_ns();
        if deadline_ns > now {
            std::thread::sleep(Duration::from_nanos((deadline_ns - now) as u64));
        }
    }
}

fn clock(id: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(id);
    Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec as u32)
}

/// Sleeps while `*word == expected`, at most `timeout` (Linux futex; a spurious or interrupted
/// return is possible, so callers re-check their condition). Process-private: the waker must
/// be in this process.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    futex_wait_with(word, expected, timeout, false);
}

/// Wakes every thread of this process waiting on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    futex_wake_all_with(word, false);
}

/// [`futex_wait`] on a word in memory shared between processes (a `MAP_SHARED` mapping): the
/// kernel keys the wait by the memory object, so a waker in another process finds it.
pub fn futex_wait_shared(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    futex_wait_with(word, expected, timeout, true);
}

/// Wakes every thread, in any process, waiting on the shared-memory `word`.
pub fn futex_wake_all_shared(word: &AtomicU32) {
    futex_wake_all_with(word, true);
}

fn futex_wait_with(word: &AtomicU32, expected: u32, timeout: Option<Duration>, shared: bool) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::futex;
        let ts = timeout.map(|d| rustix::time::Timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: i64::from(d.subsec_nanos()),
        });
        let flags = if shared {
            futex::Flags::empty()
        } else {
            futex::Flags::PRIVATE
        };
        let _ = futex::wait(word, flags, expected, ts.as_ref());
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (timeout, shared);
        if word.load(std::sync::atomic::Ordering::SeqCst) == expected {
            std::thread::yield_now();
        }
    }
}

fn futex_wake_all_with(word: &AtomicU32, shared: bool) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::futex;
        let flags = if shared {
            futex::Flags::empty()
        } else {
            futex::Flags::PRIVATE
        };
        // The kernel reads the count as an int: i32::MAX means "all" (u32::MAX would be -1).
        let _ = futex::wake(word, flags, i32::MAX as u32);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (word, shared);
}

/// Sleeps while `*word == expected` and a waker's mask intersects `mask` (FUTEX_WAIT_BITSET:
/// several kinds of waiter share one word and each is woken only for its own events).
pub fn futex_wait_bitset(word: &AtomicU32, expected: u32, mask: u32) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::futex;
        if let Some(mask) = std::num::NonZeroU32::new(mask) {
            let _ = futex::wait_bitset(word, futex::Flags::PRIVATE, expected, None, mask);
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = mask;
        if word.load(std::sync::atomic::Ordering::SeqCst) == expected {
            std::thread::yield_now();
        }
    }
}

/// Wakes every waiter on `word` whose mask intersects `mask`: one system call.
pub fn futex_wake_bitset(word: &AtomicU32, mask: u32) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::futex;
        if let Some(mask) = std::num::NonZeroU32::new(mask) {
            let _ = futex::wake_bitset(word, futex::Flags::PRIVATE, i32::MAX as u32, mask);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (word, mask);
}

/// The user id of the process at the other end of a connected Unix socket (`SO_PEERCRED`):
/// the kernel's word, as of the peer's `connect`.
pub fn peer_uid(socket: impl std::os::fd::AsFd) -> io::Result<u32> {
    let cred = rustix::net::sockopt::socket_peercred(socket)?;
    Ok(cred.uid.as_raw())
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn the_allowed_cpus_include_one_a_thread_can_be_pinned_to() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let cpu = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            assert_eq!(allowed_cpus(), vec![cpu]);
        })
        .join()
        .unwrap();
        assert!(pin_current_thread(usize::MAX).is_err());
    }

    #[test]
    fn clocks_advance_and_cpu_time_counts_work_not_sleep() {
        let t0 = thread_cpu_time();
        let m0 = monotonic_ns();
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu_time() - t0;
        sleep_until_monotonic_ns(monotonic_ns() + 5_000_000);
        assert!(monotonic_ns() - m0 >= 25_000_000);
        let mut x = 0u64;
        let spin_start = thread_cpu_time();
        while thread_cpu_time() - spin_start < Duration::from_millis(5) {
            x = x.wrapping_add(1);
        }
        assert!(x > 0);
        // Sleeping used (almost) no CPU; spinning used at least the 5 ms it spun.
        assert!(slept < Duration::from_millis(20), "{slept:?}");
        assert!(process_cpu_time() >= Duration::from_millis(5));
    }

    #[test]
    fn a_futex_waiter_is_woken() {
        for bitset in [false, true] {
            let word = Arc::new(AtomicU32::new(0));
            let waiter = {
                let word = Arc::clone(&word);
                std::thread::spawn(move || {
                    while word.load(Ordering::Acquire) == 0 {
                        if bitset {
                            futex_wait_bitset(&word, 0, 0b10);
                        } else {
                            futex_wait(&word, 0, Some(Duration::from_secs(5)));
                        }
                    }
                })
            };
            std::thread::sleep(Duration::from_millis(10));
            word.store(1, Ordering::Release);
            if bitset {
                futex_wake_bitset(&word, 0b10);
            } else {
                futex_wake_all(&word);
            }
            waiter.join().unwrap();
        }
    }

    /// One wake releases every waiter (a count read as -1 by the kernel released only one).
    #[test]
    fn one_wake_releases_every_waiter() {
        for bitset in [false, true] {
            let word = Arc::new(AtomicU32::new(0));
            let asleep = Arc::new(AtomicU32::new(0));
            let (done, finished) = std::sync::mpsc::channel();
            for _ in 0..4 {
                let (word, asleep, done) = (Arc::clone(&word), Arc::clone(&asleep), done.clone());
                std::thread::spawn(move || {
                    asleep.fetch_add(1, Ordering::AcqRel);
                    while word.load(Ordering::Acquire) == 0 {
                        if bitset {
                            futex_wait_bitset(&word, 0, 1);
                        } else {
                            futex_wait(&word, 0, None);
                        }
                    }
                    let _ = done.send(());
                });
            }
            while asleep.load(Ordering::Acquire) < 4 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(20));
            word.store(1, Ordering::Release);
            if bitset {
                futex_wake_bitset(&word, 1);
            } else {
                futex_wake_all(&word);
            }
            for i in 0..4 {
                // A generous bound: a waiter the wake missed sleeps forever.
                finished
                    .recv_timeout(Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("bitset {bitset}: only {i} of 4 waiters woke"));
            }
        }
    }

    #[test]
    fn nice_can_only_be_raised() {
        std::thread::spawn(|| {
            raise_nice(3);
            raise_nice(-10);
        })
        .join()
        .unwrap();
        // SCHED_OTHER is always allowed.
        set_normal_priority().unwrap();
    }
}
