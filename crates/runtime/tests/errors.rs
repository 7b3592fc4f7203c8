//! A node's error keeps its cause all the way out of a failed run: the `RuntimeError` a caller
//! gets leads, through `source()`, to the node's `NodeError` and on to the `std::io::Error`
//! that started it, which can still be asked for its kind.

use sluice_runtime::{Graph, Node, NodeError, Ports, RunOptions, RuntimeError, Work, WorkIo};
use std::error::Error;
use std::path::PathBuf;

/// Streams the bytes of a file as u32 items, opening it on its first `work` (as a file source
/// does).
struct FileReader {
    path: PathBuf,
}

impl Node for FileReader {
    fn ports(&self) -> Ports {
        Ports::new().output::<u32>("out")
    }
    fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let _file = std::fs::File::open(&self.path)
            .map_err(|e| NodeError::caused(format!("cannot open {}", self.path.display()), e))?;
        Ok(Work::Done)
    }
}

/// Reads and drops everything.
struct Drain;

impl Node for Drain {
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
        input.consume(n);
        Ok(Work::Progress)
    }
}

fn failed_run(scheduler: &str) -> RuntimeError {
    let missing = std::env::temp_dir().join(format!(
        "sluice-no-such-dir-{}/input.u32",
        std::process::id()
    ));
    let mut g = Graph::new();
    let src = g.add("reader", FileReader { path: missing }).unwrap();
    let dst = g.add("drain", Drain).unwrap();
    g.connect(src, "out", dst, "in").unwrap();
    let result = match scheduler {
        "stepped" => g.run_stepped(),
        _ => g.run(&RunOptions::default()),
    };
    result.expect_err("the reader's file does not exist")
}

#[test]
fn a_failed_run_leads_to_the_io_error_that_stopped_it() {
    for scheduler in ["thread per node", "stepped"] {
        let err = failed_run(scheduler);
        // One readable line naming the node, the context and the cause.
        let line = err.to_string();
        assert!(
            line.starts_with("node 'reader' failed: cannot open "),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");

        let node_error = err
            .source()
            .and_then(|s| s.downcast_ref::<NodeError>())
            .unwrap_or_else(|| panic!("{scheduler}: the run's error has no node error: {err:?}"));
        assert!(
            matches!(node_error, NodeError::Failed { .. }),
            "{node_error:?}"
        );

        let mut cause: Option<&(dyn Error + 'static)> = Some(&err);
        let mut io = None;
        while let Some(c) = cause {
            if let Some(e) = c.downcast_ref::<std::io::Error>() {
                io = Some(e);
                break;
            }
            cause = c.source();
        }
        let io = io.unwrap_or_else(|| panic!("{scheduler}: no io::Error in the chain of {err:?}"));
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound, "{scheduler}");
    }
}

#[test]
fn a_caused_error_without_context_displays_its_cause_alone() {
    let io = std::io::Error::other("disk on fire");
    assert_eq!(NodeError::from_error(io).to_string(), "disk on fire");
    let io = std::io::Error::other("disk on fire");
    let e = NodeError::caused("writing out.cf32", io);
    assert_eq!(e.to_string(), "writing out.cf32: disk on fire");
    assert_eq!(e.source().unwrap().to_string(), "disk on fire");
}
