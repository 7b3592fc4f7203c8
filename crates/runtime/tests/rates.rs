//! Declarative firing rules ([`FixedRate`] run as [`Rated`]) and vector ports (`vlen`).

use sluice_runtime::{
    FixedRate, Graph, InputRate, Node, NodeError, Ports, Rated, RunOptions, RuntimeError,
    TagPolicy, TagValue, Work, WorkIo,
};
use std::sync::{Arc, Mutex};

/// Emits 0, 1, 2, … `total − 1` in uneven chunks, tagging item `tag_at` with "mark".
struct Ramp {
    next: u32,
    total: u32,
    chunk: usize,
    tag_at: Option<u32>,
}

impl Node for Ramp {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.total {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<u32>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space
            .len()
            .min((self.total - self.next) as usize)
            .min(self.chunk);
        for (i, s) in space[..n].iter_mut().enumerate() {
            *s = self.next + i as u32;
        }
        if let Some(at) = self
            .tag_at
            .filter(|at| (self.next..self.next + n as u32).contains(at))
        {
            out.add_tag(u64::from(at), "mark", TagValue::I64(at.into()));
        }
        out.commit(n);
        self.next += n as u32;
        self.chunk = self.chunk % 997 + 131; // vary the chunking
        Ok(Work::Progress)
    }
}

fn ramp(total: u32) -> Ramp {
    Ramp {
        next: 0,
        total,
        chunk: 1,
        tag_at: None,
    }
}

/// Collects everything it receives, and the tags' indices.
#[derive(Default, Clone)]
struct Seen {
    items: Arc<Mutex<Vec<u32>>>,
    tags: Arc<Mutex<Vec<u64>>>,
}

struct Collect(Seen);

impl Node for Collect {
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<u32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len();
        self.0.items.lock().unwrap().extend_from_slice(x);
        let mut tags = Vec::new();
        input.take_tags(input.items_read() + n as u64, &mut tags);
        self.0
            .tags
            .lock()
            .unwrap()
            .extend(tags.iter().map(|t| t.index));
        input.consume(n);
        Ok(Work::Progress)
    }
    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

/// Two inputs, two outputs: per firing, reads 4 items of `a` (consuming 3: one of history) and
/// 1 of `b`; writes the window's sum plus `b` to `sum`, and the window's first and last items
/// to `ends`.
struct SumAndEnds;

impl FixedRate<2, 2> for SumAndEnds {
    type In = u32;
    type Out = u32;
    fn ports(&self) -> Ports {
        Ports::new()
            .input::<u32>("a")
            .input::<u32>("b")
            .output::<u32>("sum")
            .output::<u32>("ends")
    }
    fn input_rates(&self) -> [InputRate; 2] {
        [InputRate::sliding(4, 3), InputRate::each(1)]
    }
    fn output_rates(&self) -> [usize; 2] {
        [1, 2]
    }
    fn fire(
        &mut self,
        firings: usize,
        [a, b]: [&[u32]; 2],
        [sum, ends]: [&mut [u32]; 2],
    ) -> Result<(), NodeError> {
        assert_eq!(a.len(), (firings - 1) * 3 + 4);
        assert_eq!(
            (b.len(), sum.len(), ends.len()),
            (firings, firings, 2 * firings)
        );
        for f in 0..firings {
            let window = &a[3 * f..3 * f + 4];
            sum[f] = window.iter().sum::<u32>() + b[f];
            ends[2 * f] = window[0];
            ends[2 * f + 1] = window[3];
        }
        Ok(())
    }
}

fn sum_and_ends_graph(a_items: u32, b_items: u32) -> (Graph, Seen, Seen) {
    let mut g = Graph::new();
    let tagged = Ramp {
        tag_at: Some(999),
        ..ramp(a_items)
    };
    let a = g.add("a", tagged).unwrap();
    let b = g.add("b", ramp(b_items)).unwrap();
    let m = g.add("rated", Rated::new(SumAndEnds)).unwrap();
    let (sums, ends) = (Seen::default(), Seen::default());
    let s = g.add("sums", Collect(sums.clone())).unwrap();
    let e = g.add("ends", Collect(ends.clone())).unwrap();
    g.connect_with(a, "out", m, "a", Some(64)).unwrap();
    g.connect_with(b, "out", m, "b", Some(64)).unwrap();
    g.connect(m, "sum", s, "in").unwrap();
    g.connect(m, "ends", e, "in").unwrap();
    (g, sums, ends)
}

/// The reference: firing `f` reads a[3f .. 3f + 4] and b[f].
fn expected(a_items: u32, b_items: u32) -> (Vec<u32>, Vec<u32>) {
    let firings = ((a_items - 1) / 3).min(b_items); // 3f + 4 <= a_items
    let sums = (0..firings)
        .map(|f| (3 * f..3 * f + 4).sum::<u32>() + f)
        .collect();
    let ends = (0..firings).flat_map(|f| [3 * f, 3 * f + 3]).collect();
    (sums, ends)
}

#[test]
fn a_rated_block_fires_on_whole_windows_of_every_input_and_ends_with_the_shortest() {
    for (a_items, b_items) in [(30_001, 50_000), (30_000, 5_000), (4, 1), (3, 10)] {
        for threaded in [false, true] {
            let (g, sums, ends) = sum_and_ends_graph(a_items, b_items);
            if threaded {
                g.run(&RunOptions::default()).unwrap();
            } else {
                g.run_stepped().unwrap();
            }
            let (want_sums, want_ends) = expected(a_items, b_items);
            assert_eq!(
                *sums.items.lock().unwrap(),
                want_sums,
                "{a_items}/{b_items}"
            );
            assert_eq!(
                *ends.items.lock().unwrap(),
                want_ends,
                "{a_items}/{b_items}"
            );
        }
    }
}

#[test]
fn a_rated_block_rescales_tags_by_its_first_rates() {
    let (g, sums, ends) = sum_and_ends_graph(30_001, 50_000);
    g.run_stepped().unwrap();
    // Item 999 of `a` maps to output 999 · 1 / 3 = 333 on every output.
    assert_eq!(*sums.tags.lock().unwrap(), vec![333]);
    assert_eq!(*ends.tags.lock().unwrap(), vec![333]);
}

/// Packs `vlen` items into one vector: the same memory, with the vector length declared.
struct Pack(usize);

impl FixedRate<1, 1> for Pack {
    type In = u32;
    type Out = u32;
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input::<u32>("in");
        ports.add_output_vectors::<u32>("out", self.0, 0);
        ports
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.0)]
    }
    fn output_rates(&self) -> [usize; 1] {
        [self.0]
    }
    fn fire(&mut self, _: usize, [x]: [&[u32]; 1], [y]: [&mut [u32]; 1]) -> Result<(), NodeError> {
        y.copy_from_slice(x);
        Ok(())
    }
}

/// Sums each vector of `vlen` items.
struct VectorSum(usize);

impl FixedRate<1, 1> for VectorSum {
    type In = u32;
    type Out = u32;
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input_vectors::<u32>("in", self.0, 0);
        ports.add_output::<u32>("out");
        ports
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::each(self.0)]
    }
    fn output_rates(&self) -> [usize; 1] {
        [1]
    }
    fn fire(&mut self, _: usize, [x]: [&[u32]; 1], [y]: [&mut [u32]; 1]) -> Result<(), NodeError> {
        for (sum, vector) in y.iter_mut().zip(x.chunks_exact(self.0)) {
            *sum = vector.iter().sum();
        }
        Ok(())
    }
}

#[test]
fn vector_ports_connect_only_to_the_same_vector_length() {
    let mut g = Graph::new();
    let src = g.add("src", ramp(1000)).unwrap();
    let pack = g.add("pack", Rated::new(Pack(8))).unwrap();
    let sum = g.add("sum", Rated::new(VectorSum(6))).unwrap();
    g.connect(src, "out", pack, "in").unwrap();
    let err = g.connect(pack, "out", sum, "in").unwrap_err();
    assert!(matches!(err, RuntimeError::VlenMismatch { .. }));
    assert_eq!(
        err.to_string(),
        "cannot connect pack.out (vectors of 8 u32) to sum.in (vectors of 6 u32): the vector \
         lengths (vlen) differ"
    );
    // A plain stream into a vector input is refused the same way.
    let err = g.connect(src, "out", sum, "in").unwrap_err();
    assert!(
        err.to_string().contains("src.out (vectors of 1 u32)"),
        "{err}"
    );
}

#[test]
fn vectors_of_a_run_time_length_flow_whole() {
    for vlen in [1, 7, 333] {
        let mut g = Graph::new();
        let total = (100 * vlen + vlen / 2) as u32; // a partial vector at the end is dropped
        let src = g.add("src", ramp(total)).unwrap();
        let pack = g.add("pack", Rated::new(Pack(vlen))).unwrap();
        let sum = g.add("sum", Rated::new(VectorSum(vlen))).unwrap();
        let seen = Seen::default();
        let sink = g.add("sink", Collect(seen.clone())).unwrap();
        g.connect(src, "out", pack, "in").unwrap();
        g.connect(pack, "out", sum, "in").unwrap();
        g.connect(sum, "out", sink, "in").unwrap();
        g.run(&RunOptions::default()).unwrap();
        let v = vlen as u32;
        let want: Vec<u32> = (0..100).map(|k| (k * v..(k + 1) * v).sum()).collect();
        assert_eq!(*seen.items.lock().unwrap(), want, "vlen {vlen}");
    }
}

struct NoHistoryRule;

impl FixedRate<1, 1> for NoHistoryRule {
    type In = u32;
    type Out = u32;
    fn ports(&self) -> Ports {
        Ports::new().input::<u32>("in").output::<u32>("out")
    }
    fn input_rates(&self) -> [InputRate; 1] {
        [InputRate::sliding(4, 0)]
    }
    fn output_rates(&self) -> [usize; 1] {
        [1]
    }
    fn fire(&mut self, _: usize, _: [&[u32]; 1], _: [&mut [u32]; 1]) -> Result<(), NodeError> {
        Ok(())
    }
}

#[test]
#[should_panic(expected = "must consume between 1 and the window")]
fn a_rule_that_consumes_nothing_is_refused_when_the_node_is_made() {
    let _ = Rated::new(NoHistoryRule);
}

#[test]
#[should_panic(expected = "fires on 2 inputs of u32")]
fn ports_that_do_not_match_the_rule_are_refused_when_the_node_is_made() {
    struct WrongPorts;
    impl FixedRate<2, 1> for WrongPorts {
        type In = u32;
        type Out = u32;
        fn ports(&self) -> Ports {
            Ports::new().input::<u32>("in").output::<u32>("out")
        }
        fn input_rates(&self) -> [InputRate; 2] {
            [InputRate::each(1); 2]
        }
        fn output_rates(&self) -> [usize; 1] {
            [1]
        }
        fn fire(&mut self, _: usize, _: [&[u32]; 2], _: [&mut [u32]; 1]) -> Result<(), NodeError> {
            Ok(())
        }
    }
    let _ = Rated::new(WrongPorts);
}
