//! The beamformer in graphs: three partial-sum instances plus `sum` blocks equal one node, in
//! both modes, with sources of uneven chunk sizes; run-time re-steering.

use super::*;
use crate::blocks::{Sum, VectorSink, VectorSinkData, VectorSource};
use sluice_runtime::Graph;

const ELEMENTS: usize = 6;
const LEN: usize = 5000;

fn signals() -> Vec<Vec<Complex32>> {
    (0..ELEMENTS)
        .map(|k| {
            (0..LEN)
                .map(|t| {
                    let p = 0.01 * t as f32 * (k + 1) as f32 + (t * t % 17) as f32;
                    Complex32::new(p.cos(), (p * 1.3).sin())
                })
                .collect()
        })
        .collect()
}

fn steering() -> Steering {
    Steering {
        elements: ELEMENTS,
        spacing: 0.5,
        angles: vec![-20.0, 35.0],
        taper: Some(Window::Hamming),
    }
}

/// Sources feeding elements `groups` (first, count) of beamformers; with one group the beams
/// go straight to sinks, with several they are summed beam by beam.
fn run(groups: &[(usize, usize)], mode: SteeringMode) -> Vec<Vec<Complex32>> {
    let x = signals();
    let mut g = Graph::new();
    let srcs: Vec<_> = x
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let src = VectorSource::new(v.clone()).max_chunk(300 + 77 * k);
            g.add(&format!("src{k}"), src).unwrap()
        })
        .collect();
    let mut sinks: Vec<VectorSinkData<Complex32>> = Vec::new();
    let mut adders = Vec::new();
    for b in 0..2 {
        let (sink, data) = VectorSink::<Complex32>::new();
        let sink = g.add(&format!("sink{b}"), sink).unwrap();
        sinks.push(data);
        if groups.len() > 1 {
            let sum = g.add(
                &format!("sum{b}"),
                Sum::<Complex32>::new(groups.len()).unwrap(),
            );
            let sum = sum.unwrap();
            g.connect(sum, "out", sink, "in").unwrap();
            adders.push((sum, "in"));
        } else {
            adders.push((sink, "in"));
        }
    }
    for (i, &(first, count)) in groups.iter().enumerate() {
        let bf = Beamformer::new(steering(), first, count, mode).unwrap();
        let bf = g.add(&format!("bf{i}"), bf).unwrap();
        for k in 0..count {
            g.connect(srcs[first + k], "out", bf, &format!("in{k}"))
                .unwrap();
        }
        for (b, &(node, port)) in adders.iter().enumerate() {
            let port = if groups.len() > 1 {
                format!("in{i}")
            } else {
                port.to_string()
            };
            g.connect(bf, &format!("beam{b}"), node, &port).unwrap();
        }
    }
    g.run_stepped().unwrap();
    sinks.iter().map(|d| d.items()).collect()
}

#[test]
fn three_partial_groups_summed_equal_one_node_in_both_modes() {
    let delay = SteeringMode::Delay {
        samples_per_cycle: 4.0,
    };
    for mode in [SteeringMode::Phase, delay] {
        let whole = run(&[(0, ELEMENTS)], mode);
        let parts = run(&[(0, 2), (2, 3), (5, 1)], mode);
        let latency = Beamformer::new(steering(), 0, ELEMENTS, mode)
            .unwrap()
            .latency();
        for (b, (w, p)) in whole.iter().zip(&parts).enumerate() {
            assert_eq!(w.len(), LEN - if latency > 0 { latency + 8 } else { 0 });
            assert_eq!(w.len(), p.len(), "{mode:?} beam {b}");
            for (t, (w, p)) in w.iter().zip(p).enumerate() {
                assert!(
                    (w - p).norm() < 1e-5,
                    "{mode:?} beam {b} item {t}: {w} vs {p}"
                );
            }
        }
    }
}

#[test]
fn angles_and_taper_change_while_running_and_bad_values_are_refused() {
    let mut bf = Beamformer::new(steering(), 0, ELEMENTS, SteeringMode::Phase).unwrap();
    bf.set_control("angles", &TagValue::Str("10, -45".into()), 0)
        .unwrap();
    assert_eq!(bf.steering.angles, vec![10.0, -45.0]);
    bf.set_control("taper", &TagValue::Str("kaiser:3".into()), 0)
        .unwrap();
    assert_eq!(bf.steering.taper, Some(Window::Kaiser { beta: 3.0 }));
    let e = bf
        .set_control("angles", &TagValue::F64(10.0), 0)
        .unwrap_err();
    assert!(e.to_string().contains("keep 2 beams"), "{e}");
    let e = bf
        .set_control("angles", &TagValue::Str("1, x".into()), 0)
        .unwrap_err();
    assert!(e.to_string().contains("degrees"), "{e}");
    assert!(bf
        .set_control("taper", &TagValue::Str("gauss".into()), 0)
        .is_err());
    assert!(Beamformer::new(steering(), 4, 3, SteeringMode::Phase).is_err());
}

/// Re-steering a running beamformer through the graph's control handle: a tone from 40° is
/// off-beam (array factor ≈ 0.14) before the change and at unit gain from the offset `set`
/// returns on.
#[test]
fn resteering_while_running_takes_effect_at_the_returned_offset() {
    use crate::blocks::test_support::wait_for_items;
    use crate::blocks::{ArraySource, Throttle};
    use sluice_kernels::{ArrayGenerator, Emission, PlaneWave};
    use sluice_runtime::{RunOptions, StopHandle};
    let n = 8;
    let wave = PlaneWave {
        angle: 40.0,
        offset: 1000.0,
        amplitude: 1.0,
        emission: Emission::Tone,
    };
    let gen = ArrayGenerator::new(n, 0.5, 1e9, 48_000.0, vec![wave], 0.0, 1).unwrap();
    let mut g = Graph::new();
    let src = g.add("ula", ArraySource::new(gen, None)).unwrap();
    let s = Steering {
        elements: n,
        spacing: 0.5,
        angles: vec![0.0],
        taper: None,
    };
    let bf = g
        .add("bf", Beamformer::new(s, 0, n, SteeringMode::Phase).unwrap())
        .unwrap();
    let pace = g
        .add("pace", Throttle::<Complex32>::new(1e6).unwrap())
        .unwrap();
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink).unwrap();
    for k in 0..n {
        g.connect(src, &format!("out{k}"), bf, &format!("in{k}"))
            .unwrap();
    }
    g.connect(bf, "beam0", pace, "in").unwrap();
    g.connect(pace, "out", sink, "in").unwrap();
    let control = g.control_handle();
    let stop = StopHandle::new();
    let opts = RunOptions {
        stop: Some(stop.clone()),
        ..RunOptions::default()
    };
    let running = std::thread::spawn(move || g.run(&opts));
    wait_for_items(&data, 1000);
    let at = control.set("bf", "angles", TagValue::F64(40.0)).unwrap() as usize;
    let items = wait_for_items(&data, at as u64 + 1000);
    stop.stop();
    running.join().unwrap().unwrap();
    for (t, y) in items.iter().enumerate().take(at + 1000) {
        let want = if t < at { 0.144 } else { 1.0 };
        assert!(
            (y.norm() - want).abs() < 0.01,
            "item {t} (change at {at}): |{y}|"
        );
    }
}
