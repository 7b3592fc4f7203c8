//! The `control_lines` fuzz target's corpus replays as an ordinary test through the same
//! driver as the target ([`sluice_runtime::fuzz::control_lines`]); its seeds are every command
//! of the control socket, good and bad, as `sluice ctl` writes them.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use sluice_runtime::control_socket::MAX_LINE;
use sluice_runtime::fuzz::control_lines;

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("list", b"list\n".to_vec()),
        ("stop", b"stop\n".to_vec()),
        (
            "set",
            b"set knob.k=1.5\nset knob.k = \"text\"\nset knob.k=true\nset knob.k=1_000\n".to_vec(),
        ),
        (
            "set_unknown",
            b"set nobody.k=1\nset knob.nothing=2\nset .k=1\nset k\n".to_vec(),
        ),
        ("unknown", b"frobnicate\n\x1b[2J\n\r\n   \n".to_vec()),
        ("not_utf8", b"set knob.k=\xff\xfe\nlist".to_vec()),
        ("long_line", vec![b'x'; MAX_LINE + 8]),
    ]
}

#[test]
fn every_corpus_input_replays() {
    let n = replay::replay("control_lines", control_lines);
    assert!(
        n >= seeds().len(),
        "the seed corpus is missing ({n} inputs)"
    );
}

#[test]
fn the_corpus_holds_every_command() {
    let seeds = seeds();
    for (_, bytes) in &seeds {
        control_lines(bytes);
    }
    replay::check_seeds("control_lines", &seeds);
}
