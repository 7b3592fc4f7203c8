//! The Python thread state of a node's thread, kept from the node's `init` to its `stop`:
//! taking the GIL on a thread without one (`PyGILState_Ensure`) creates and destroys one each
//! time, which would cost every `work` call of a Python block tens of microseconds.

use pyo3::ffi;
use std::thread::ThreadId;

/// A thread state made for this thread, the GIL released.
pub struct KeptThreadState {
    gil: ffi::PyGILState_STATE,
    tstate: *mut ffi::PyThreadState,
    thread: ThreadId,
}

// SAFETY: the pointer is only used again on the thread that made it (checked in `release`).
unsafe impl Send for KeptThreadState {}

impl KeptThreadState {
    /// Gives the calling thread a thread state and leaves the GIL released.
    pub fn keep() -> Self {
        // SAFETY: the interpreter is running (the graph was built from Python, and a started
        // graph must end before the interpreter does); Ensure gives this thread a thread state
        // and the GIL, SaveThread releases the GIL keeping the state, which `release` restores
        // and releases on this same thread.
        unsafe {
            let gil = ffi::PyGILState_Ensure();
            let tstate = ffi::PyEval_SaveThread();
            KeptThreadState {
                gil,
                tstate,
                thread: std::thread::current().id(),
            }
        }
    }

    /// Gives the thread state back. On another thread (a scheduler that moved the node) it
    /// cannot be, and is left to the interpreter.
    pub fn release(self) {
        if self.thread == std::thread::current().id() {
            // SAFETY: made by `keep` on this thread, which does not hold the GIL now (no
            // `work` call is running).
            unsafe {
                ffi::PyEval_RestoreThread(self.tstate);
                ffi::PyGILState_Release(self.gil);
            }
        }
    }
}
