//! Warm standbys: a partition runs once, on its primary; when the primary dies, a fresh copy
//! of the partition starts, re-primed from input that upstream kept for it, and resumes the
//! output where its receiver stands: every output arrives once, in order, and equals the
//! output of an uninterrupted run.
//!
//! The partition here is `tcp_source → WindowSum → tcp_sink`: a decimating block with finite
//! memory (output `j` sums the inputs `j·D − H ..= j·D + D − 1`), as an FIR or a channelizer.
//! Upstream is a listening `tcp_sink` (both replicas connect to it); downstream a fenced
//! `tcp_source`.

mod common;

use common::*;
use sluice_net::{Fence, TcpOptions, TcpSink, TcpSource, WarmMap};
use sluice_runtime::{Graph, Node, NodeError, Ports, Work, WorkIo};
use std::net::SocketAddr;
use std::time::Duration;

/// Input items per output.
const D: u64 = 4;
/// Inputs before an output's own `D` that it depends on.
const H: u64 = 10;
/// Outputs of a fresh start that differ from an uninterrupted run: ⌈H / D⌉.
const LAG: u64 = H.div_ceil(D);

fn input(i: u64) -> u64 {
    i.wrapping_mul(0x9e3779b97f4a7c15) ^ 0x5555
}

/// Output `j` of an uninterrupted run (inputs before the stream are 0).
fn output(j: u64) -> u64 {
    let (first, last) = ((j * D).saturating_sub(H), j * D + D - 1);
    (first..=last).fold(0u64, |s, i| s.wrapping_add(input(i)))
}

/// Sums each `D` inputs and the `H` before them (zeros before its first input); fails after
/// `fail_after` outputs, if set (a primary that dies).
struct WindowSum {
    recent: Vec<u64>,
    outputs: u64,
    fail_after: Option<u64>,
}

impl WindowSum {
    fn new(fail_after: Option<u64>) -> Self {
        WindowSum {
            recent: vec![0; H as usize],
            outputs: 0,
            fail_after,
        }
    }
}

impl Node for WindowSum {
    fn ports(&self) -> Ports {
        Ports::new().input::<u64>("in").output::<u64>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.fail_after.is_some_and(|k| self.outputs >= k) {
            return Err(NodeError::msg("the primary dies here"));
        }
        let input = io.inputs.get::<u64>(0)?;
        let Some(w) = input.window(D as usize)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: D as usize,
            });
        };
        if w.len() < D as usize {
            return Ok(Work::Done);
        }
        let w: Vec<u64> = w.to_vec();
        let out = io.outputs.get::<u64>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space.len().min(w.len() / D as usize).min(512);
        for (k, y) in space[..n].iter_mut().enumerate() {
            let block = &w[k * D as usize..(k + 1) * D as usize];
            *y = self
                .recent
                .iter()
                .chain(block)
                .fold(0u64, |s, &x| s.wrapping_add(x));
            self.recent.extend_from_slice(block);
            self.recent.drain(..D as usize);
        }
        out.commit(n);
        io.inputs.get::<u64>(0)?.consume(n * D as usize);
        self.outputs += n as u64;
        Ok(Work::Progress)
    }
}

/// Quick loss detection, and retention for the pipeline's unacknowledged input.
fn fast() -> TcpOptions {
    TcpOptions {
        retention_bytes: 4 << 20,
        ..common::fast()
    }
}

/// One replica of the partition, reading from `upstream` and writing to `downstream`, under
/// the fence `fence` (promoted to `revision`).
fn partition(
    upstream: SocketAddr,
    downstream: SocketAddr,
    fence: &Fence,
    fail_after: Option<u64>,
) -> Graph {
    let source = TcpSource::<u64>::new(
        &format!("tcp://{upstream}"),
        TcpOptions {
            warm_fence: Some(fence.clone()),
            ack: sluice_net::Acknowledge::External(fence.input_acknowledged()),
            history: LAG * D,
            ..fast()
        },
    )
    .unwrap();
    let sink = TcpSink::<u64>::new(
        &format!("tcp://{downstream}"),
        TcpOptions {
            fence: Some(fence.clone()),
            warm: Some(WarmMap {
                decimation: D,
                lag: LAG,
            }),
            ..fast()
        },
    )
    .unwrap();
    let mut g = Graph::new();
    let a = g.add("rx", source).unwrap();
    let b = g.add("sum", WindowSum::new(fail_after)).unwrap();
    let c = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(b, "out", c, "in").unwrap();
    g
}

#[test]
fn a_warm_standby_re_primes_from_kept_input_and_resumes_exactly() {
    let inputs = 2_000_000u64;
    // The primary dies before its first output was acknowledged, early, and late.
    for (round, fail_after) in [0u64, 40_000, 400_000].into_iter().enumerate() {
        let (upstream, up_addr) = {
            let sink = TcpSink::<u64>::new("tcp-listen://127.0.0.1:0", fast()).unwrap();
            let addr = sink.local_addr().unwrap();
            let mut g = Graph::new();
            let a = g
                .add("count", Counter::new(inputs, input, Vec::new()))
                .unwrap();
            let b = g.add("tx", sink).unwrap();
            g.connect(a, "out", b, "in").unwrap();
            (spawn(g), addr)
        };
        let (rx, down_addr, seen) = receiver::<u64>(
            output,
            TcpOptions {
                fenced: true,
                ..fast()
            },
        );
        let rx = spawn(rx);
        let primary = Fence::named(&format!("warm-primary-{round}"));
        primary.promote(5);
        let p = spawn(partition(up_addr, down_addr, &primary, Some(fail_after)));
        let err = p.join().unwrap().expect_err("the primary dies");
        assert!(err.to_string().contains("dies here"), "{err}");
        // The lease's TTL passes; the standby wins it and starts the partition afresh.
        std::thread::sleep(Duration::from_millis(200));
        let standby = Fence::named(&format!("warm-standby-{round}"));
        standby.promote(6);
        let s = spawn(partition(up_addr, down_addr, &standby, None));
        let report = s
            .join()
            .unwrap()
            .expect("the promoted standby ends the stream");
        upstream
            .join()
            .unwrap()
            .expect("upstream's stream is all acknowledged");
        rx.join()
            .unwrap()
            .expect("the receiver ends with the stream");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.first_bad, None, "round {round}: an output differs");
        assert_eq!(
            seen.items,
            inputs / D,
            "round {round}: outputs lost or repeated"
        );
        let start = standby.start().expect("the standby learnt its start");
        assert!(start.is_multiple_of(D), "round {round}: start {start}");
        if fail_after > 0 {
            assert!(
                start > 0,
                "round {round}: the standby re-primed from offset 0"
            );
            let said: Vec<&String> = report.nodes.iter().flat_map(|n| &n.warnings).collect();
            assert!(
                said.iter()
                    .any(|w| w.contains("warm start")
                        && w.contains(&format!("at input offset {start}"))),
                "round {round}: {said:?}"
            );
        }
    }
}
