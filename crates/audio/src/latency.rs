//! Reporting a client's processing latency to JACK (`jack_set_latency_callback`,
//! `jack_port_set_latency_range`), so hosts and other clients compensate for it.
//!
//! The `jack` crate has no latency callback, so it is registered here through jack-sys before
//! the client is activated. JACK calls it (in a non-real-time thread) whenever the graph's
//! latencies are recomputed: for capture, each output port reports the widest capture range of
//! the inputs plus our latency; for playback, each input reports the outputs' playback range
//! plus our latency (the rule of the JACK latency documentation for a client whose every
//! output depends on every input).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// What the latency callback needs: the ports and the current latency in frames.
pub(crate) struct LatencyPorts {
    pub(crate) inputs: Vec<*mut jack_sys::jack_port_t>,
    pub(crate) outputs: Vec<*mut jack_sys::jack_port_t>,
    pub(crate) latency: Arc<AtomicU32>,
}

// SAFETY: port pointers are handles that libjack allows any thread of the client to use; they
// stay valid while the client is open, and LatencyPorts is dropped only after it is closed.
unsafe impl Send for LatencyPorts {}

/// Registers the callback on `client` (before activation). `ports` must outlive the client.
pub(crate) fn register(client: &jack::Client, ports: &LatencyPorts) -> Result<(), String> {
    let arg = ports as *const LatencyPorts as *mut libc::c_void;
    // SAFETY: `client` is an open, not yet active client; `arg` points to a LatencyPorts that
    // the caller keeps alive (boxed, not moved) until the client is closed.
    let rc = unsafe { jack_sys::jack_set_latency_callback(client.raw(), Some(on_latency), arg) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("jack_set_latency_callback returned {rc}"))
    }
}

unsafe extern "C" fn on_latency(
    mode: jack_sys::jack_latency_callback_mode_t,
    arg: *mut libc::c_void,
) {
    // SAFETY: `arg` is the LatencyPorts given to `register`, alive while the client is open.
    let ports = unsafe { &*(arg as *const LatencyPorts) };
    let extra = ports.latency.load(Ordering::Relaxed);
    let (from, to) = if mode == jack_sys::JackCaptureLatency {
        (&ports.inputs, &ports.outputs)
    } else {
        (&ports.outputs, &ports.inputs)
    };
    let (mut min, mut max) = (u32::MAX, 0u32);
    for &p in from {
        let mut r = jack_sys::jack_latency_range_t { min: 0, max: 0 };
        // SAFETY: `p` is one of this client's ports (valid while it is open); `r` is writable.
        unsafe { jack_sys::jack_port_get_latency_range(p, mode, &mut r) };
        min = min.min(r.min);
        max = max.max(r.max);
    }
    if min == u32::MAX {
        min = 0;
    }
    let mut r = jack_sys::jack_latency_range_t {
        min: min + extra,
        max: max + extra,
    };
    for &p in to {
        // SAFETY: as above; JACK copies the range.
        unsafe { jack_sys::jack_port_set_latency_range(p, mode, &mut r) };
    }
}

/// Asks JACK to recompute the graph's latencies (after ours changed). Not for the real-time thread.
pub(crate) fn recompute(client: &jack::Client) {
    // SAFETY: `client` is open; the call only sends a request to the server.
    unsafe { jack_sys::jack_recompute_total_latencies(client.raw()) };
}
