//! The etcd client's HTTP/1.1 response parser (status line, headers, Content-Length and
//! chunked bodies) fed arbitrary bytes: it must answer or refuse, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice_cluster::etcd::fuzz_response(data);
});
