//! `multiply_const`: every sample times `gain`, which can change while the graph runs.

use super::{apply::Apply, sample::for_sample};
use crate::graph_blocks::{param_sample, stateless};
use sluice_graph::{BlockType, Family, ItemDecl, Param};
use sluice_kernels::scale;
use sluice_runtime::{ControlSpec, Rated};

const GAIN: ControlSpec = ControlSpec {
    name: "gain",
    expects: "a finite number",
    help: "the factor (a real number)",
};

/// The `multiply_const` block: `out = gain · in` for f32 or c32 samples.
pub fn multiply_const() -> BlockType {
    BlockType::new("multiply_const", Family::Math, "Multiplies by `gain`.")
        .gnuradio(&["multiply_const"])
        .input("in", ItemDecl::item())
        .output("out", ItemDecl::item())
        .param(param_sample())
        .param(Param::number("gain", GAIN.help).default(1.0).settable())
        .example(r#"item = "f32", gain = 0.5"#)
        .memory(stateless)
        .build(|p| {
            for_sample!(p, S => Rated::new(
                Apply::new(p.f32("gain")?, |g, x: &[S], y: &mut [S]| scale(x, *g, y))
                    .settable(GAIN, |g, v| *g = v as f32),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{test_support::wait_for_items, Throttle, VectorSink, VectorSource};
    use num_complex::Complex32;
    use sluice_graph::Params;
    use sluice_runtime::{Graph, Node, RunOptions, StopHandle, TagValue};

    fn node(item: &str, gain: f64) -> Result<Box<dyn Node>, sluice_graph::ParamError> {
        let mut params = Params::from_values([
            ("item".to_string(), item.into()),
            ("gain".to_string(), gain.into()),
        ]);
        let block = multiply_const();
        let mistakes = block.check(&params);
        if let Some(e) = mistakes.into_iter().next() {
            return Err(e);
        }
        block.instantiate(&mut params)
    }

    #[test]
    fn multiplies_real_and_complex_streams() {
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new(vec![Complex32::new(1.0, -1.0); 3]))
            .unwrap();
        let mul = g.add_boxed("mul", node("c32", -2.0).unwrap()).unwrap();
        let (sink, data) = VectorSink::<Complex32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", mul, "in").unwrap();
        g.connect(mul, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        assert_eq!(data.items(), vec![Complex32::new(-2.0, 2.0); 3]);
        assert!(node("f32", f64::INFINITY).is_err());
    }

    #[test]
    fn a_gain_change_applies_from_the_returned_offset() {
        let mut g = Graph::new();
        let src = g
            .add("src", VectorSource::new(vec![1.0f32; 1000]).repeat(100_000))
            .unwrap();
        let pace = g.add("pace", Throttle::<f32>::new(1e6).unwrap()).unwrap();
        let mul = g.add_boxed("gain", node("f32", 1.0).unwrap()).unwrap();
        let (sink, data) = VectorSink::<f32>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pace, "in").unwrap();
        g.connect(pace, "out", mul, "in").unwrap();
        g.connect(mul, "out", sink, "in").unwrap();
        let control = g.control_handle();
        let stop = StopHandle::new();
        let opts = RunOptions {
            stop: Some(stop.clone()),
            ..RunOptions::default()
        };
        let running = std::thread::spawn(move || g.run(&opts));
        let at = control.set("gain", "gain", TagValue::F64(0.25)).unwrap();
        let err = control
            .set("gain", "gain", TagValue::Str("loud".into()))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "node 'gain': parameter 'gain' must be a finite number, not 'loud'"
        );
        wait_for_items(&data, at + 1000);
        stop.stop();
        running.join().unwrap().unwrap();
        let items = data.items();
        assert!(
            items.len() as u64 >= at + 1000,
            "{} items, change at {at}",
            items.len()
        );
        for (n, &v) in items.iter().enumerate() {
            let expected = if (n as u64) < at { 1.0 } else { 0.25 };
            assert_eq!(v, expected, "item {n}, change at {at}");
        }
        let tags: Vec<_> = data
            .tags()
            .into_iter()
            .filter(|t| &*t.key == "set:gain")
            .collect();
        assert_eq!(tags.len(), 1);
        assert_eq!((tags[0].index, &tags[0].value), (at, &TagValue::F64(0.25)));
    }
}
