use super::*;
use crate::{Graph, Node, NodeError, RunOptions, WorkIo};
use std::sync::Mutex;
use std::time::Duration;

/// Sends the numbers `0..n`, keeping a refused message for the next call.
struct Numbers {
    n: i64,
    next: i64,
    held: Option<Message>,
    out: MessageOut,
    ports: Ports,
    fulls: Arc<Mutex<u64>>,
}

impl Numbers {
    fn new(n: i64, kind: MessageKind) -> Self {
        let mut ports = Ports::new();
        let out = ports.add_message_output("out", kind);
        Numbers {
            n,
            next: 0,
            held: None,
            out,
            ports,
            fulls: Arc::default(),
        }
    }
}

impl Node for Numbers {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let out = io.outputs.message(self.out.index())?;
        loop {
            let msg = match self.held.take() {
                Some(m) => m,
                None if self.next < self.n => {
                    self.next += 1;
                    TagValue::I64(self.next - 1)
                }
                None => return Ok(Work::Done),
            };
            if let Sent::Full(m) = out.send(msg)? {
                self.held = Some(m);
                *self.fulls.lock().unwrap() += 1;
                return Ok(self.out.need());
            }
        }
    }
}

/// Collects what it receives, slowly if asked, ending after `stop_after` messages if given.
struct Collect {
    got: Arc<Mutex<Vec<Message>>>,
    delay: Duration,
    stop_after: Option<usize>,
    inp: MessageIn,
    ports: Ports,
}

impl Collect {
    fn new(inbox: Inbox, delay: Duration) -> Self {
        let mut ports = Ports::new();
        let inp = ports.add_message_input("in", MessageKind::Any, inbox);
        Collect {
            got: Arc::default(),
            delay,
            stop_after: None,
            inp,
            ports,
        }
    }
}

impl Node for Collect {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.message(self.inp.index())?;
        loop {
            if self
                .stop_after
                .is_some_and(|k| self.got.lock().unwrap().len() >= k)
            {
                return Ok(Work::Done);
            }
            match input.recv()? {
                Recv::Message(m) => {
                    crate::sleep(self.delay);
                    self.got.lock().unwrap().push(m);
                }
                Recv::Empty => return Ok(self.inp.need()),
                Recv::Ended => return Ok(Work::Done),
            }
        }
    }
}

fn numbers(got: &Mutex<Vec<Message>>) -> Vec<i64> {
    got.lock()
        .unwrap()
        .iter()
        .map(|m| match m {
            TagValue::I64(i) => *i,
            other => panic!("not a number: {other:?}"),
        })
        .collect()
}

type Shared<T> = Arc<Mutex<T>>;

fn two_nodes(n: i64, sink: Collect) -> (Graph, Shared<Vec<Message>>, Shared<u64>) {
    let mut g = Graph::new();
    let src = Numbers::new(n, MessageKind::Any);
    let fulls = Arc::clone(&src.fulls);
    let got = Arc::clone(&sink.got);
    let a = g.add("src", src).unwrap();
    let b = g.add("sink", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    (g, got, fulls)
}

#[test]
fn a_full_waiting_inbox_holds_the_sender_back_and_loses_nothing() {
    let inbox = Inbox {
        messages: 4,
        ..Inbox::DEFAULT
    };
    let (g, got, fulls) = two_nodes(200, Collect::new(inbox, Duration::from_micros(200)));
    let report = g.run(&RunOptions::default()).unwrap();
    assert_eq!(numbers(&got), (0..200).collect::<Vec<_>>());
    assert!(
        *fulls.lock().unwrap() > 0,
        "the sender never found the inbox full"
    );
    assert_eq!(report.node("src").unwrap().messages_dropped, 0);
    assert_eq!(report.node("sink").unwrap().items_in, 200);
}

#[test]
fn the_stepped_scheduler_delivers_in_order_too() {
    let inbox = Inbox {
        messages: 3,
        ..Inbox::DEFAULT
    };
    let (g, got, fulls) = two_nodes(50, Collect::new(inbox, Duration::ZERO));
    g.run_stepped().unwrap();
    assert_eq!(numbers(&got), (0..50).collect::<Vec<_>>());
    assert!(*fulls.lock().unwrap() > 0);
}

#[test]
fn a_byte_bound_holds_large_messages_back() {
    // Each message is 8 + 4096 bytes; an inbox of 10 000 bytes holds two.
    struct Big(Numbers);
    impl Node for Big {
        fn ports(&self) -> Ports {
            self.0.ports()
        }
        fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            let out = io.outputs.message(0)?;
            while self.0.next < self.0.n {
                let msg = TagValue::Uniform(sluice_queue::Uniform::U8(vec![0; 4096].into()));
                if let Sent::Full(_) = out.send(msg)? {
                    *self.0.fulls.lock().unwrap() += 1;
                    return Ok(self.0.out.need());
                }
                self.0.next += 1;
            }
            Ok(Work::Done)
        }
    }
    let inbox = Inbox {
        messages: 1000,
        bytes: 10_000,
        on_full: OnFull::Wait,
    };
    let sink = Collect::new(inbox, Duration::from_micros(100));
    let got = Arc::clone(&sink.got);
    let src = Big(Numbers::new(40, MessageKind::Any));
    let fulls = Arc::clone(&src.0.fulls);
    let mut g = Graph::new();
    let a = g.add("src", src).unwrap();
    let b = g.add("sink", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.run(&RunOptions::default()).unwrap();
    assert_eq!(got.lock().unwrap().len(), 40);
    assert!(*fulls.lock().unwrap() > 0);
}

#[test]
fn a_dropping_inbox_drops_and_counts_what_does_not_fit() {
    let inbox = Inbox {
        messages: 2,
        ..Inbox::DROPPING
    };
    let (g, got, fulls) = two_nodes(300, Collect::new(inbox, Duration::from_micros(300)));
    let report = g.run(&RunOptions::default()).unwrap();
    let received = numbers(&got);
    let dropped = report.node("src").unwrap().messages_dropped;
    assert!(dropped > 0, "nothing was dropped");
    assert_eq!(received.len() as u64 + dropped, 300);
    assert!(received.windows(2).all(|w| w[0] < w[1]), "out of order");
    assert_eq!(
        *fulls.lock().unwrap(),
        0,
        "a dropping inbox made the sender wait"
    );
    assert!(report.node("src").unwrap().warnings[0].contains("src.out -> sink.in"));
}

#[test]
fn messages_left_in_an_inbox_when_its_receiver_ends_are_counted() {
    let mut sink = Collect::new(
        Inbox {
            messages: 8,
            ..Inbox::DEFAULT
        },
        Duration::ZERO,
    );
    sink.stop_after = Some(5);
    let (g, got, _) = two_nodes(100, sink);
    let report = g.run(&RunOptions::default()).unwrap();
    let delivered = got.lock().unwrap().len() as u64;
    let dropped: u64 = report.nodes.iter().map(|n| n.messages_dropped).sum();
    assert_eq!(delivered, 5);
    // The sender ends once its only receiver has gone; what it sent is received or counted.
    let sent = report.node("src").unwrap().items_out;
    assert_eq!(delivered + dropped, sent);
}

#[test]
fn waiting_message_cycles_are_refused_and_a_dropping_edge_breaks_them() {
    /// One message input and one message output, passing messages on.
    struct Relay(Ports);
    impl Node for Relay {
        fn ports(&self) -> Ports {
            self.0.clone()
        }
        fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            Ok(Work::Done)
        }
    }
    let relay = |inbox| {
        Relay(
            Ports::new()
                .message_input("in", MessageKind::Any, inbox)
                .message_output("out", MessageKind::Any),
        )
    };
    let mut g = Graph::new();
    let a = g.add("a", relay(Inbox::DEFAULT)).unwrap();
    let b = g.add("b", relay(Inbox::DEFAULT)).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(b, "out", a, "in").unwrap();
    let err = g.check().unwrap_err().to_string();
    assert!(
        err.contains("a -> b -> a") || err.contains("b -> a -> b"),
        "{err}"
    );

    let mut g = Graph::new();
    let a = g.add("a", relay(Inbox::DROPPING)).unwrap();
    let b = g.add("b", relay(Inbox::DEFAULT)).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(b, "out", a, "in").unwrap();
    g.run_stepped().unwrap();
}

#[test]
fn kinds_are_checked_when_connecting() {
    struct Ends(Ports);
    impl Node for Ends {
        fn ports(&self) -> Ports {
            self.0.clone()
        }
        fn work(&mut self, _io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            Ok(Work::Done)
        }
    }
    let mut g = Graph::new();
    let a = g
        .add(
            "a",
            Ends(
                Ports::new()
                    .message_output("pdus", MessageKind::Pdu)
                    .message_output("any", MessageKind::Any)
                    .output::<f32>("samples"),
            ),
        )
        .unwrap();
    let b = g
        .add(
            "b",
            Ends(
                Ports::new()
                    .message_input("pdus", MessageKind::Pdu, Inbox::DEFAULT)
                    .message_input("any", MessageKind::Any, Inbox::DEFAULT)
                    .input::<f32>("samples"),
            ),
        )
        .unwrap();
    let err = g.connect(a, "samples", b, "any").unwrap_err().to_string();
    assert_eq!(
        err,
        "cannot connect a.samples to b.any: a.samples is a stream port of f32 and b.any is a \
         message port carrying message: a message port connects only to a message port"
    );
    let err = g.connect(a, "any", b, "pdus").unwrap_err().to_string();
    assert!(
        err.contains("a.any sends message but b.pdus takes only pdu"),
        "{err}"
    );
    g.connect(a, "pdus", b, "any").unwrap();
    g.connect(a, "pdus", b, "pdus").unwrap();
    g.connect(a, "samples", b, "samples").unwrap();
    g.run_stepped().unwrap();
}

#[test]
fn an_unconnected_message_output_discards_and_an_unconnected_input_ends() {
    let mut g = Graph::new();
    g.add("src", Numbers::new(10, MessageKind::Any)).unwrap();
    let sink = Collect::new(Inbox::DEFAULT, Duration::ZERO);
    let got = Arc::clone(&sink.got);
    g.add("sink", sink).unwrap();
    let report = g.run(&RunOptions::default()).unwrap();
    assert!(got.lock().unwrap().is_empty());
    assert_eq!(report.node("src").unwrap().items_out, 10);
}

#[test]
fn a_fan_out_gives_each_connection_every_message() {
    let mut g = Graph::new();
    let a = g.add("src", Numbers::new(100, MessageKind::Any)).unwrap();
    let s1 = Collect::new(Inbox::DEFAULT, Duration::ZERO);
    let s2 = Collect::new(
        Inbox {
            messages: 2,
            ..Inbox::DEFAULT
        },
        Duration::from_micros(50),
    );
    let (g1, g2) = (Arc::clone(&s1.got), Arc::clone(&s2.got));
    let b = g.add("s1", s1).unwrap();
    let c = g.add("s2", s2).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g.connect(a, "out", c, "in").unwrap();
    g.run(&RunOptions::default()).unwrap();
    assert_eq!(numbers(&g1), (0..100).collect::<Vec<_>>());
    assert_eq!(numbers(&g2), (0..100).collect::<Vec<_>>());
}
