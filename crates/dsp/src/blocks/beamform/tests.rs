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
