//! The web console's request parser on arbitrary bytes: it must never panic, never accept a
//! head or body over its limits, and answer every refusal with a 4xx or 505 and a reason.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_web::{parse_request, MAX_BODY, MAX_HEADERS};

fuzz_target!(|data: &[u8]| {
    match parse_request(&mut std::io::BufReader::new(data)) {
        Ok(req) => {
            assert!(req.headers.len() <= MAX_HEADERS);
            assert!(req.body.len() <= MAX_BODY);
            assert!(req.path.starts_with('/'));
        }
        Err(e) => {
            assert!((400..500).contains(&e.status) || e.status == 505, "{e}");
            assert!(!e.reason.is_empty());
        }
    }
});
