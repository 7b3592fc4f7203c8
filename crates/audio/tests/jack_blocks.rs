//! `jack_sink` and `jack_source` on a real JACK 2 server (dummy backend, real time): a graph
//! plays a stream out through `jack_sink`, JACK carries it to `jack_source` in the same graph,
//! and the recording holds the stream sample for sample. A sink fed slower than real time
//! plays silence and counts underruns instead of waiting. Needs the jackd2 package.
//!
//! libjack attaches a process to one server at a time, so the tests take turns.

use sluice_audio::{DummyServer, JackPorts, JackSink, JackSource};
use sluice_blocks::blocks::throttle::Throttle;
use sluice_blocks::blocks::vector::{VectorSink, VectorSource};
use sluice_runtime::{Graph, RunOptions};

static ONE_SERVER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn noise(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.max(1);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / 4_294_967_296.0 - 0.5) + 0.001 // never exactly 0
        })
        .collect()
}

fn ports(server: &DummyServer, client: &str, connect: &[&str], buffer: usize) -> JackPorts {
    JackPorts {
        client: client.to_string(),
        server: Some(server.name().to_string()),
        channels: connect.len().max(1),
        connect: connect.iter().map(|s| s.to_string()).collect(),
        buffer,
    }
}

#[test]
fn a_stream_goes_out_through_jack_sink_and_back_through_jack_source() {
    let _turn = ONE_SERVER_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let server = DummyServer::start(
        &format!("sluice-blocks-{}", std::process::id()),
        48000,
        256,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (noise(12_000, 1), noise(12_000, 2));
    // A quarter second of silence first: the recorder's connections are made (by the time
    // it starts, with a generous margin) before the stream begins.
    let lead = vec![0.0f32; 12_000];
    let (a_played, b_played) = ([&lead[..], &a[..]].concat(), [&lead[..], &b[..]].concat());
    let mut g = Graph::new();
    let sa = g.add("a", VectorSource::new(a_played)).unwrap();
    let sb = g.add("b", VectorSource::new(b_played)).unwrap();
    let mut play_ports = ports(&server, "play", &[], 32_768);
    play_ports.channels = 2;
    // The whole stream fits the sink's ring and the recording fits the source's: neither an
    // underrun nor an overflow can happen, whatever the machine's load.
    let sink = g
        .add("play", JackSink::new(play_ports, 4096).unwrap())
        .unwrap();
    let mut rec_ports = ports(&server, "rec", &["play:out_1", "play:out_2"], 65_536);
    rec_ports.channels = 2;
    let total = 48_000u64; // one second: the stream and silence around it
    let src = g
        .add("rec", JackSource::new(rec_ports, Some(total)).unwrap())
        .unwrap();
    let (ka, da) = VectorSink::<f32>::new();
    let (kb, db) = VectorSink::<f32>::new();
    let ka = g.add("ka", ka).unwrap();
    let kb = g.add("kb", kb).unwrap();
    g.connect(sa, "out", sink, "in0").unwrap();
    g.connect(sb, "out", sink, "in1").unwrap();
    g.connect(src, "out0", ka, "in").unwrap();
    g.connect(src, "out1", kb, "in").unwrap();
    let report = g.run(&RunOptions::default()).unwrap();
    for n in &report.nodes {
        assert!(n.warnings.is_empty(), "{}: {:?}", n.name, n.warnings);
    }
    let (ra, rb) = (da.items(), db.items());
    assert_eq!((ra.len() as u64, rb.len() as u64), (total, total));
    let start = ra
        .iter()
        .position(|&v| v != 0.0)
        .expect("the stream came through");
    assert_eq!(
        rb.iter().position(|&v| v != 0.0),
        Some(start),
        "channels aligned"
    );
    assert_eq!(
        &ra[start..start + a.len()],
        &a[..],
        "channel 1 sample for sample"
    );
    assert_eq!(
        &rb[start..start + b.len()],
        &b[..],
        "channel 2 sample for sample"
    );
    assert!(
        ra[start + a.len()..].iter().all(|&v| v == 0.0),
        "silence after the end"
    );
}

#[test]
fn a_starved_jack_sink_plays_silence_and_counts_underruns() {
    let _turn = ONE_SERVER_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let server = DummyServer::start(
        &format!("sluice-starved-{}", std::process::id()),
        48000,
        256,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let x = noise(9_600, 3);
    let mut g = Graph::new();
    let s = g.add("x", VectorSource::new(x.clone())).unwrap();
    // A quarter of the server's rate: the sink must run dry again and again.
    let t = g
        .add("slow", Throttle::<f32>::new(12_000.0).unwrap())
        .unwrap();
    let mut p = ports(&server, "play", &[], 32_768);
    p.channels = 1;
    let sink = g.add("play", JackSink::new(p, 256).unwrap()).unwrap();
    let src = g
        .add(
            "rec",
            JackSource::new(ports(&server, "rec", &["play:out_1"], 65_536), Some(48_000)).unwrap(),
        )
        .unwrap();
    let (k, data) = VectorSink::<f32>::new();
    let k = g.add("k", k).unwrap();
    g.connect(s, "out", t, "in").unwrap();
    g.connect(t, "out", sink, "in0").unwrap();
    g.connect(src, "out0", k, "in").unwrap();
    let report = g.run(&RunOptions::default()).unwrap();
    let w = &report.node("play").unwrap().warnings;
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("underruns") && w[0].contains("frames of silence"),
        "{w:?}"
    );
    // What was played is the stream in order, with silence between the pieces.
    let rec: Vec<f32> = data.items().into_iter().filter(|&v| v != 0.0).collect();
    assert!(!rec.is_empty());
    let at = x.iter().position(|&v| v == rec[0]).unwrap();
    assert_eq!(
        &rec[..],
        &x[at..at + rec.len()],
        "no sample lost or reordered"
    );
}
