//! Termination and reload signals, turned into a flag that ordinary threads poll.
//!
//! A signal handler may not take locks, allocate or wake threads safely, so the handler
//! installed here does one thing: it stores the signal's number in a process-wide atomic.
//! Callers poll [`pending`] or [`take`] (a graceful stop checks every few milliseconds). One
//! process has one set of handlers, so there is one flag.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

pub use libc::{SIGHUP, SIGINT, SIGTERM};

/// The signal that arrived last (0: none). Written only by the handler and by [`take`]/[`clear`].
static LAST: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_signal(signal: libc::c_int) {
    // Async-signal-safe: one atomic store.
    LAST.store(signal, Ordering::Relaxed);
}

/// What a signal does after the first one is caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Each handler resets itself when it runs (SA_RESETHAND): the first signal asks for a
    /// graceful stop, a second one acts as it would have without us (ends the process).
    Once,
    /// The handlers stay: every signal is noted (a reload signal that may come many times).
    Every,
}

/// Installs the noting handler for each of `signals` (interrupted system calls restart). The
/// signal then no longer ends the process (for [`Repeat::Once`], the first time).
pub fn catch(signals: &[i32], repeat: Repeat) -> io::Result<()> {
    for &signal in signals {
        // SAFETY: an all-zero `sigaction` is a valid value of this plain C struct (no handler,
        // empty flags); we then set our handler and flags and empty its mask with
        // `sigemptyset`, the documented way to fill one in. Our handler is an `extern "C"` fn
        // that lives for the whole program and only does an atomic store (async-signal-safe).
        // `sigaction` reads `action` during the call only; the old action is not asked for.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = note_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART
                | match repeat {
                    Repeat::Once => libc::SA_RESETHAND,
                    Repeat::Every => 0,
                };
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Gives `signals` back their default action (a signal then ends the process again), once a
/// watch over them has ended.
pub fn restore(signals: &[i32]) -> io::Result<()> {
    for &signal in signals {
        // SAFETY: `signal` only changes the disposition of a signal to SIG_DFL, a valid
        // disposition for any catchable signal; no handler of ours is involved.
        if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal noted last, if any, leaving it noted.
pub fn pending() -> Option<i32> {
    match LAST.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// The signal noted last, if any, and forgets it (so the next call sees only newer ones).
pub fn take() -> Option<i32> {
    match LAST.swap(0, Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// Forgets any noted signal (before a new watch begins).
pub fn clear() {
    LAST.store(0, Ordering::Relaxed);
}

/// The signal's conventional name ("SIGINT"), or its number for others.
pub fn name(signal: i32) -> String {
    match signal {
        SIGINT => "SIGINT".into(),
        SIGTERM => "SIGTERM".into(),
        SIGHUP => "SIGHUP".into(),
        s => format!("signal {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SIGHUP is raised at this process; the test binary's other tests do not use it.
    #[test]
    fn a_caught_signal_is_noted_and_taken_once() {
        catch(&[SIGHUP], Repeat::Every).unwrap();
        clear();
        // SAFETY: raise sends SIGHUP to this thread; the handler installed above runs.
        assert_eq!(unsafe { libc::raise(SIGHUP) }, 0);
        assert_eq!(pending(), Some(SIGHUP));
        assert_eq!(take(), Some(SIGHUP));
        assert_eq!(take(), None);
        // The handler stayed (Repeat::Every): a second one is noted, not fatal.
        // SAFETY: as above.
        assert_eq!(unsafe { libc::raise(SIGHUP) }, 0);
        assert_eq!(take(), Some(SIGHUP));
        assert_eq!(name(SIGINT), "SIGINT");
    }
}
