//! The `jconvolver_config` fuzz target's corpus replays as an ordinary test through the same
//! driver as the target ([`sluice_audio::fuzz::jconvolver_config`]); its seeds use every
//! command of the format, and read the impulse file the driver puts beside them.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use sluice_audio::fuzz::{jconvolver_config, IR_FILE};

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let full = format!(
        "# every command\n\
         /jack/client conv\n\
         /jack/server default\n\
         /cd .\n\
         /convolver/new 2 2 256 4096 0.5\n\
         /input/name 1 left system:capture_1\n\
         /output/name 2 right system:playback_2\n\
         /impulse/read 1 1 0.5 0 0 0 1 {IR_FILE}\n\
         /impulse/read 2 2 1.0 10 4 8 2 \"{IR_FILE}\"\n\
         /impulse/dirac 1 2 -1.0 100\n\
         /impulse/copy 2 1 1 1\n"
    );
    vec![
        ("full", full.into_bytes()),
        (
            "dirac",
            b"/convolver/new 1 1 64 16\n/impulse/dirac 1 1 1 0\n".to_vec(),
        ),
        (
            "truncated",
            b"/convolver/new 1 1 64 4\n/impulse/dirac 1 1 1 16777215\n".to_vec(),
        ),
        (
            "hilbert",
            b"/convolver/new 1 1 64 16\n/impulse/hilbert 1 1 1 0\n".to_vec(),
        ),
        (
            "copy_cycle",
            b"/convolver/new 2 2 64 16\n/impulse/copy 1 2 2 1\n/impulse/copy 2 1 1 2\n".to_vec(),
        ),
    ]
}

#[test]
fn every_corpus_input_replays() {
    let n = replay::replay("jconvolver_config", jconvolver_config);
    assert!(
        n >= seeds().len(),
        "the seed corpus is missing ({n} inputs)"
    );
}

#[test]
fn the_corpus_holds_every_command() {
    let seeds = seeds();
    for (_, bytes) in &seeds {
        jconvolver_config(bytes);
    }
    replay::check_seeds("jconvolver_config", &seeds);
}
