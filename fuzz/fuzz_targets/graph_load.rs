//! The graph file loader (sluice-graph) with the standard blocks that touch nothing outside the
//! process: parse, validation, rates and node construction; every refusal is a message of one line
//! per mistake. The driver is `sluice_blocks::fuzz::load_graph`, which `cargo test` replays the
//! corpus through too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sluice_blocks::fuzz::load_graph(data));
