//! The driver the `control_lines` fuzz target (`fuzz/fuzz_targets/`) and its replay test
//! (`tests/fuzz_corpus.rs`) share, so that what the fuzzer checks and what `cargo test`
//! replays cannot drift apart.

use crate::control::ControlSpec;
use crate::control_socket::{serve_lines, MAX_LINE};
use crate::{Graph, Node, NodeError, Ports, StopHandle, Work, WorkIo};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A node with one run-time parameter, `k`, so that `set` commands reach a real node's
/// mailbox (the graph never runs: a change times out at once, as for a node that is busy).
struct Knob;

impl Node for Knob {
    fn ports(&self) -> Ports {
        Ports::new()
    }

    fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        Ok(Work::Done)
    }

    fn controls(&self) -> Vec<ControlSpec> {
        vec![ControlSpec {
            name: "k",
            expects: "a number",
            help: "the fuzzed parameter",
        }]
    }
}

/// Feeds `data` to the control socket's command loop as one client's byte stream, against a
/// graph with a node `knob` whose parameter is `k`. Panics if a reply is not one line, if
/// there are more replies than command lines, or if a reply is longer than a line can make.
pub fn control_lines(data: &[u8]) {
    let mut graph = Graph::new();
    graph.add("knob", Knob).expect("one node");
    let control = graph.control_handle().with_timeout(Duration::ZERO);
    let (stop, stopped_here) = (StopHandle::new(), AtomicBool::new(false));
    let mut out = Vec::new();
    serve_lines(data, &mut out, &control, &stop, &None, &stopped_here);
    let text = std::str::from_utf8(&out).expect("replies are UTF-8");
    let lines = data.split(|&b| b == b'\n').count();
    let replies = text.lines().count();
    assert!(replies <= lines, "{replies} replies to {lines} lines");
    assert!(
        out.is_empty() || out.ends_with(b"\n"),
        "a reply without its newline"
    );
    for reply in text.lines() {
        assert!(
            reply.starts_with("ok ") || reply.starts_with("error: "),
            "{reply:?}"
        );
        assert!(
            !reply.chars().any(char::is_control),
            "a control character in {reply:?}"
        );
        assert!(
            reply.len() <= 10 * MAX_LINE + 512,
            "a {}-byte reply",
            reply.len()
        );
    }
}
