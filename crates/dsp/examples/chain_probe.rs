//! Exploratory: copy-chain throughput by scheduler and queue size (not a benchmark of record).
use num_complex::Complex32;
use sluice_dsp::blocks::{Copy, Head, NullSink, NullSource};
use sluice_runtime::{Graph, RunOptions};

fn run(items: u64, stages: usize, threads: Option<usize>, qb: usize) -> f64 {
    let mut g = Graph::new();
    g.set_default_queue_bytes(qb);
    let src = g.add("src", NullSource::<Complex32>::new()).unwrap();
    let head = g.add("head", Head::<Complex32>::new(items)).unwrap();
    g.connect(src, "out", head, "in").unwrap();
    let mut last = head;
    for i in 0..stages {
        let c = g.add(&format!("c{i}"), Copy::<Complex32>::new()).unwrap();
        g.connect(last, "out", c, "in").unwrap();
        last = c;
    }
    let sink = g.add("sink", NullSink::<Complex32>::new()).unwrap();
    g.connect(last, "out", sink, "in").unwrap();
    let r = g
        .run(&RunOptions {
            threads,
            ..RunOptions::default()
        })
        .unwrap();
    items as f64 / r.wall.as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let stages: usize = args.get(1).map_or(1, |s| s.parse().unwrap());
    let items = 100_000_000;
    let only_threads: Option<usize> = args.get(2).map(|s| s.parse().unwrap());
    let only_qb: Option<usize> = args.get(3).map(|s| s.parse::<usize>().unwrap() << 10);
    for qb in [64 << 10, 256 << 10]
        .into_iter()
        .filter(|q| only_qb.is_none_or(|o| o == *q))
    {
        for threads in [Some(1), Some(2)]
            .into_iter()
            .filter(|t| only_threads.is_none_or(|o| Some(o) == *t))
        {
            let mut v: Vec<f64> = (0..3).map(|_| run(items, stages, threads, qb)).collect();
            v.sort_by(f64::total_cmp);
            println!(
                "stages {stages} queue {:>4} KiB threads {threads:?}: {:.0} M items/s",
                qb >> 10,
                v[1] / 1e6
            );
        }
    }
}
