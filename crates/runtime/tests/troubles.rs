//! Trouble counted by nodes (`sluice_runtime::count`) reaches the run's report and a live
//! `Progress` view, attributed to the node whose `work` counted it, under every scheduler; so
//! do stream bytes (`count_bytes`, live view only) and a node's error (live view).

use sluice_runtime::{
    count, count_bytes, Direction, Graph, Node, NodeError, Ports, Progress, RunOptions, Scheduler,
    StreamBytes, Trouble, Troubles, Work, WorkIo,
};

/// `left` zeros in chunks of at most 100; counts each chunk's items as dropped, and one late
/// deadline on its first call.
struct Source {
    left: u64,
    calls: u64,
}

impl Node for Source {
    fn ports(&self) -> Ports {
        Ports::new().output::<f32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.left == 0 {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<f32>(0)?;
        let Some(y) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = y.len().min(100).min(self.left as usize);
        y[..n].fill(0.0);
        out.commit(n);
        self.left -= n as u64;
        if self.calls == 0 {
            count(Trouble::Late, 1);
        }
        self.calls += 1;
        count(Trouble::Dropped, n as u64);
        count_bytes(Direction::Sent, 4 * n as u64);
        Ok(Work::Progress)
    }
}

/// Consumes everything, counting each item as an underflow.
struct Sink;

impl Node for Sink {
    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = x.len();
        input.consume(n);
        count(Trouble::Underflow, n as u64);
        count_bytes(Direction::Received, 4 * n as u64);
        Ok(Work::Progress)
    }
}

#[test]
fn counted_trouble_reaches_the_report_and_the_live_view_under_every_scheduler() {
    const ITEMS: u64 = 10_000;
    for scheduler in [
        Some(Scheduler::Auto),
        Some(Scheduler::ThreadPerNode),
        Some(Scheduler::Pooled(1)),
        None,
    ] {
        let mut g = Graph::new();
        let src = g
            .add(
                "src",
                Source {
                    left: ITEMS,
                    calls: 0,
                },
            )
            .unwrap();
        let sink = g.add("sink", Sink).unwrap();
        g.connect(src, "out", sink, "in").unwrap();
        let progress = Progress::new();
        let report = match scheduler {
            Some(scheduler) => g
                .run(&RunOptions {
                    scheduler,
                    progress: Some(progress.clone()),
                    ..RunOptions::default()
                })
                .unwrap(),
            None => g.run_stepped().unwrap(),
        };
        let src_t = Troubles {
            late: 1,
            dropped: ITEMS,
            underflow: 0,
        };
        let sink_t = Troubles {
            late: 0,
            dropped: 0,
            underflow: ITEMS,
        };
        assert_eq!(report.node("src").unwrap().troubles, src_t, "{scheduler:?}");
        assert_eq!(
            report.node("sink").unwrap().troubles,
            sink_t,
            "{scheduler:?}"
        );
        if scheduler.is_some() {
            let live = progress.snapshot();
            assert_eq!(live[0].troubles, src_t, "{scheduler:?}");
            assert_eq!(live[1].troubles, sink_t, "{scheduler:?}");
            let bytes = |sent, received| StreamBytes { sent, received };
            assert_eq!(live[0].bytes, bytes(4 * ITEMS, 0), "{scheduler:?}");
            assert_eq!(live[1].bytes, bytes(0, 4 * ITEMS), "{scheduler:?}");
            assert_eq!(live[0].error, None);
        }
    }
}

/// Consumes its input and fails on its third call.
struct Fails(u32);

impl Node for Fails {
    fn ports(&self) -> Ports {
        Ports::new().input::<f32>("in")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        self.0 += 1;
        if self.0 == 3 {
            return Err(NodeError::msg("the third call fails"));
        }
        let input = io.inputs.get::<f32>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        let n = x.len();
        input.consume(n);
        Ok(if n == 0 { Work::Done } else { Work::Progress })
    }
}

#[test]
fn a_node_error_reaches_the_live_view_as_the_run_reports_it() {
    for scheduler in [Scheduler::ThreadPerNode, Scheduler::Pooled(1)] {
        let mut g = Graph::new();
        let src = g
            .add(
                "src",
                Source {
                    left: u64::MAX,
                    calls: 0,
                },
            )
            .unwrap();
        let sink = g.add("fails", Fails(0)).unwrap();
        g.connect(src, "out", sink, "in").unwrap();
        let progress = Progress::new();
        let err = g
            .run(&RunOptions {
                scheduler,
                progress: Some(progress.clone()),
                ..RunOptions::default()
            })
            .unwrap_err();
        let live = progress.snapshot();
        assert_eq!(live[0].error, None, "{scheduler:?}");
        assert_eq!(live[1].error.as_deref(), Some(err.to_string().as_str()));
        assert!(err.to_string().contains("the third call fails"), "{err}");
    }
}
