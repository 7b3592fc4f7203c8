//! `soapy_sink` against the real libSoapySDR and the test device module, which logs every
//! packet it receives with its flags and time: timed bursts go out at their times, a late one
//! and a hole inside a burst are counted, and the samples arrive unchanged.

mod support;

use num_complex::Complex32;
use sluice_blocks::blocks::VectorSource;
use sluice_runtime::{Graph, RunOptions, TagValue};
use sluice_soapy::{RadioSettings, SoapySink, StreamFormat};

const HAS_TIME: i32 = 1 << 2;
const END_BURST: i32 = 1 << 1;

fn tx_time(ns: i64) -> TagValue {
    TagValue::rx_time(
        (ns / 1_000_000_000) as u64,
        (ns % 1_000_000_000) as f64 * 1e-9,
    )
}

/// (samples, flags, time) of every packet the device received.
fn packets(log: &std::path::Path) -> Vec<(usize, i32, i64)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[0], "write", "{l}");
            (
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn tagged_bursts_go_out_at_their_times_and_misses_are_counted() {
    support::module();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tx.log");
    let rate = 1e6;
    let x: Vec<Complex32> = (0..3000)
        .map(|k| Complex32::new(k as f32 * 1e-4, -0.5))
        .collect();
    // Burst 1: items 0..1000 at t = 2 s. Burst 2: 1000..2000 at 1.5 s (late: burst 1 ends at
    // 2.001 s). Burst 3: 2000..2500 at 3 s, then 2500..3000 at 3.5 s inside the same burst
    // (no tx_eob before it): the device runs dry in between, an underflow.
    let src = VectorSource::new(x.clone())
        .with_tag(0, "tx_sob", TagValue::Bool(true))
        .with_tag(0, "tx_time", tx_time(2_000_000_000))
        .with_tag(999, "tx_eob", TagValue::Bool(true))
        .with_tag(1000, "tx_sob", TagValue::Bool(true))
        .with_tag(1000, "tx_time", tx_time(1_500_000_000))
        .with_tag(1999, "tx_eob", TagValue::Bool(true))
        .with_tag(2000, "tx_sob", TagValue::Bool(true))
        .with_tag(2000, "tx_time", tx_time(3_000_000_000))
        .with_tag(2500, "tx_time", tx_time(3_500_000_000))
        .max_chunk(700);
    let mut s = RadioSettings::new(
        &support::unique(&format!("driver=sluice_test,tx_log={}", log.display())),
        rate,
    );
    s.frequency = Some(433.92e6);
    s.mtu = 400;
    let mut g = Graph::new();
    let src = g.add("src", src).unwrap();
    let tx = g.add("tx", SoapySink::new(s).unwrap()).unwrap();
    g.connect(src, "out", tx, "in0").unwrap();
    let report = g.run(&RunOptions::default()).unwrap();

    let p = packets(&log);
    // Packets never cross a burst or time boundary; the first of each carries its time.
    let timed: Vec<(usize, i64)> = p
        .iter()
        .scan(0usize, |at, &(n, flags, t)| {
            let start = *at;
            *at += n;
            Some((start, flags, t))
        })
        .filter(|&(_, flags, _)| flags & HAS_TIME != 0)
        .map(|(start, _, t)| (start, t))
        .collect();
    assert_eq!(
        timed,
        vec![
            (0, 2_000_000_000),
            (1000, 1_500_000_000),
            (2000, 3_000_000_000),
            (2500, 3_500_000_000)
        ]
    );
    let ends: Vec<usize> = p
        .iter()
        .scan(0usize, |at, &(n, flags, _)| {
            *at += n;
            Some((*at, flags))
        })
        .filter(|&(_, flags)| flags & END_BURST != 0)
        .map(|(end, _)| end)
        .collect();
    // Bursts 1 and 2 end where tagged; burst 3, left open, is closed at the end of stream.
    assert_eq!(ends, vec![1000, 2000, 3000]);
    assert_eq!(p.iter().map(|x| x.0).sum::<usize>(), 3000);
    let bytes = std::fs::read(log.with_extension("log.cf32")).unwrap();
    let got: &[Complex32] = bytemuck::cast_slice(&bytes);
    assert_eq!(got, &x[..], "the samples arrive unchanged");
    assert_eq!(
        report.node("tx").unwrap().warnings,
        vec![
            "1 underflows: the device ran out of samples inside a burst".to_string(),
            "1 late packets: their tx_time had passed when they reached the device".to_string(),
        ]
    );
}

#[test]
fn cs16_samples_are_converted_and_clipping_counted() {
    support::module();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tx.log");
    let x: Vec<Complex32> = (0..1000)
        .map(|k| Complex32::new((k as f32 - 500.0) / 400.0, 0.25))
        .collect();
    let mut s = RadioSettings::new(
        &support::unique(&format!("driver=sluice_test,tx_log={}", log.display())),
        1e6,
    );
    s.format = StreamFormat::Cs16;
    let mut g = Graph::new();
    let src = g.add("src", VectorSource::new(x.clone())).unwrap();
    let tx = g.add("tx", SoapySink::new(s).unwrap()).unwrap();
    g.connect(src, "out", tx, "in0").unwrap();
    let report = g.run(&RunOptions::default()).unwrap();
    let bytes = std::fs::read(log.with_extension("log.cf32")).unwrap();
    let got: &[Complex32] = bytemuck::cast_slice(&bytes);
    assert_eq!(got.len(), x.len());
    for (k, (g, x)) in got.iter().zip(&x).enumerate() {
        // The module turns CS16 back into f32 as v / 32768: the value rounded to 1/32768,
        // clipped to the format's range.
        let q = |v: f32| (v * 32768.0).round().clamp(-32768.0, 32767.0) / 32768.0;
        assert_eq!(*g, Complex32::new(q(x.re), q(x.im)), "sample {k}");
    }
    // Samples 0..100 are below −1 and 900.. reach 1 or above: clipped.
    let clipped = x
        .iter()
        .filter(|z| z.re < -1.0 || z.re * 32768.0 > 32767.0)
        .count();
    assert_eq!(
        report.node("tx").unwrap().warnings,
        vec![format!("{clipped} values clipped converting to CS16")]
    );
}
