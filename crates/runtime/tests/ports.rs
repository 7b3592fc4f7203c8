//! Lending several ports at once: typed handles, `get_many`, `all`, and the errors that name
//! the port (a port asked for twice, a wrong item type).

use sluice_runtime::{
    Graph, InPort, Node, NodeError, OutPort, Ports, RunOptions, RuntimeError, Work, WorkIo,
};

/// Emits `scale · i` for i in 0..total, then ends.
struct Ramp {
    next: u32,
    total: u32,
    scale: u32,
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
        let n = space.len().min((self.total - self.next) as usize).min(700);
        for (i, s) in space[..n].iter_mut().enumerate() {
            *s = self.scale * (self.next + i as u32);
        }
        out.commit(n);
        self.next += n as u32;
        Ok(Work::Progress)
    }
}

fn ramp(total: u32, scale: u32) -> Ramp {
    Ramp {
        next: 0,
        total,
        scale,
    }
}

/// How [`Mix`] gets its ports.
#[derive(Clone, Copy)]
enum Lend {
    /// Typed handles (`Inputs::ports`, `Outputs::ports`).
    Handles,
    /// `get_many` by index.
    Many,
    /// `all` (a run-time number of ports).
    All,
}

/// Three u32 inputs; output `sum` gets a + b + c and output `diff` gets c − a, with windows of
/// all three inputs and reservations on both outputs held together.
struct Mix {
    ports: Ports,
    inputs: [InPort<u32>; 3],
    outputs: [OutPort<u32>; 2],
    lend: Lend,
}

impl Mix {
    fn new(lend: Lend) -> Self {
        let mut ports = Ports::new();
        let inputs = ["a", "b", "c"].map(|name| ports.add_input::<u32>(name));
        let outputs = ["sum", "diff"].map(|name| ports.add_output::<u32>(name));
        Mix {
            ports,
            inputs,
            outputs,
            lend,
        }
    }
}

impl Node for Mix {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let (mut ins, outs) = match self.lend {
            Lend::Handles => (
                Vec::from(io.inputs.ports(self.inputs)?),
                io.outputs.ports(self.outputs)?,
            ),
            Lend::Many => (
                Vec::from(io.inputs.get_many::<u32, 3>([0, 1, 2])?),
                io.outputs.get_many::<u32, 2>([0, 1])?,
            ),
            Lend::All => {
                let outs: Vec<_> = io.outputs.all::<u32>()?.collect();
                let Ok(outs) = <[_; 2]>::try_from(outs) else {
                    return Err(NodeError::msg("two outputs expected"));
                };
                (io.inputs.all::<u32>()?.collect(), outs)
            }
        };
        let mut windows: Vec<&[u32]> = Vec::new();
        for (port, input) in ins.iter_mut().enumerate() {
            match input.window(1)? {
                None => return Ok(Work::NeedInput { port, items: 1 }),
                Some([]) => return Ok(Work::Done),
                Some(w) => windows.push(w),
            }
        }
        let [sum, diff] = outs;
        let (Some(s), Some(d)) = (sum.reserve(1)?, diff.reserve(1)?) else {
            return Ok(self.outputs[0].need(1));
        };
        let n = windows
            .iter()
            .map(|w| w.len())
            .fold(s.len().min(d.len()), usize::min);
        for j in 0..n {
            s[j] = windows[0][j] + windows[1][j] + windows[2][j];
            d[j] = windows[2][j] - windows[0][j];
        }
        drop(windows);
        for input in ins {
            input.consume(n);
        }
        sum.commit(n);
        diff.commit(n);
        Ok(Work::Progress)
    }
}

/// Collects u32 items and checks item i against `expect(i)`.
struct Expect {
    seen: u32,
    expect: fn(u32) -> u32,
}

impl Node for Expect {
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
        for (k, &v) in x.iter().enumerate() {
            let i = self.seen + k as u32;
            if v != (self.expect)(i) {
                return Err(NodeError::msg(format!("item {i} is {v}")));
            }
        }
        let n = x.len();
        input.consume(n);
        self.seen += n as u32;
        Ok(Work::Progress)
    }
}

/// Three ramps (1·i, 2·i, 3·i; the second shorter) into `mix`, its outputs into checkers.
fn mix_graph(mix: impl Node + 'static) -> Graph {
    let mut g = Graph::new();
    let a = g.add("a", ramp(50_000, 1)).unwrap();
    let b = g.add("b", ramp(40_000, 2)).unwrap();
    let c = g.add("c", ramp(50_000, 3)).unwrap();
    let m = g.add("mix", mix).unwrap();
    let s = g
        .add(
            "sum",
            Expect {
                seen: 0,
                expect: |i| 6 * i,
            },
        )
        .unwrap();
    let d = g
        .add(
            "diff",
            Expect {
                seen: 0,
                expect: |i| 2 * i,
            },
        )
        .unwrap();
    for (node, port) in [(a, "a"), (b, "b"), (c, "c")] {
        g.connect_with(node, "out", m, port, Some(1000)).unwrap();
    }
    g.connect(m, "sum", s, "in").unwrap();
    g.connect(m, "diff", d, "in").unwrap();
    g
}

#[test]
fn several_inputs_and_outputs_are_lent_together_every_way() {
    for lend in [Lend::Handles, Lend::Many, Lend::All] {
        let report = mix_graph(Mix::new(lend)).run_stepped().unwrap();
        // The shortest input ends the mix: 40 000 items on each output.
        assert_eq!(report.node("sum").unwrap().items_in, 40_000);
        assert_eq!(report.node("diff").unwrap().items_in, 40_000);
        let report = mix_graph(Mix::new(lend))
            .run(&RunOptions::default())
            .unwrap();
        assert_eq!(report.node("sum").unwrap().items_in, 40_000);
    }
}

/// Asks for its inputs in a way that is wrong: `index` twice, or as the wrong type.
struct Misuse {
    twice: bool,
}

impl Node for Misuse {
    fn ports(&self) -> Ports {
        Ports::new()
            .input::<u32>("left")
            .input::<u32>("right")
            .output::<u32>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.twice {
            io.inputs.get_many::<u32, 3>([0, 1, 1])?;
        } else {
            io.inputs.all::<f32>()?.count();
        }
        Ok(Work::Done)
    }
}

fn misuse_error(twice: bool) -> String {
    let mut g = Graph::new();
    let a = g.add("a", ramp(10, 1)).unwrap();
    let b = g.add("b", ramp(10, 1)).unwrap();
    let m = g.add("misuse", Misuse { twice }).unwrap();
    let e = g
        .add(
            "sink",
            Expect {
                seen: 0,
                expect: |i| i,
            },
        )
        .unwrap();
    g.connect(a, "out", m, "left").unwrap();
    g.connect(b, "out", m, "right").unwrap();
    g.connect(m, "out", e, "in").unwrap();
    match g.run_stepped() {
        Err(err @ RuntimeError::NodeFailed { .. }) => err.to_string(),
        other => panic!("expected the misuse to fail, got {other:?}"),
    }
}

#[test]
fn a_port_asked_for_twice_or_as_the_wrong_type_is_an_error_naming_it() {
    let twice = misuse_error(true);
    assert!(twice.contains("'misuse'"), "{twice}");
    assert!(
        twice.contains("input port right was asked for twice"),
        "{twice}"
    );
    let wrong = misuse_error(false);
    assert!(wrong.contains("port left carries u32, not f32"), "{wrong}");
}
