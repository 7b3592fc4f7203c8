//! Nodes and harness shared by the integration tests: a counting source, a checking sink, and
//! two graphs (sender and receiver) run on threads of their own.
#![allow(dead_code)]

use sluice_net::{TcpOptions, TcpSink, TcpSource};
use sluice_runtime::{
    Graph, Item, Node, NodeError, Ports, RunOptions, Tag, TagValue, Work, WorkIo,
};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Produces items `make(0..count)`, tagging item `i` with `tags` whose index is `i`.
pub struct Counter<T> {
    pub count: u64,
    pub next: u64,
    pub make: fn(u64) -> T,
    pub tags: Vec<Tag>,
    pub chunk: usize,
}

impl<T: Item> Counter<T> {
    pub fn new(count: u64, make: fn(u64) -> T, tags: Vec<Tag>) -> Self {
        Counter {
            count,
            next: 0,
            make,
            tags,
            chunk: usize::MAX,
        }
    }
}

impl<T: Item> Node for Counter<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.next == self.count {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = space
            .len()
            .min((self.count - self.next) as usize)
            .min(self.chunk);
        for (k, x) in space[..n].iter_mut().enumerate() {
            *x = (self.make)(self.next + k as u64);
        }
        let end = self.next + n as u64;
        for t in self
            .tags
            .iter()
            .filter(|t| t.index >= self.next && t.index < end)
        {
            out.push_tag(t.clone());
        }
        out.commit(n);
        self.next = end;
        Ok(Work::Progress)
    }
}

/// What a [`Checker`] saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub items: u64,
    /// The first item that differed from `make(index)`, if any.
    pub first_bad: Option<u64>,
    pub tags: Vec<Tag>,
    /// A checksum over the bytes in order (FNV-1a over 64-bit words of the items).
    pub checksum: u64,
}

/// Checks that item `i` is `make(i)`, collects tags and a checksum.
pub struct Checker<T> {
    pub make: fn(u64) -> T,
    pub seen: Arc<Mutex<Seen>>,
}

impl<T: Item> Checker<T> {
    pub fn new(make: fn(u64) -> T) -> (Self, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen {
            checksum: 0xcbf29ce484222325,
            ..Seen::default()
        }));
        (
            Checker {
                make,
                seen: seen.clone(),
            },
            seen,
        )
    }
}

pub fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for c in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h ^= u64::from_le_bytes(w);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

impl<T: Item + PartialEq> Node for Checker<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }
    fn tag_policy(&self) -> sluice_runtime::TagPolicy {
        sluice_runtime::TagPolicy::Drop
    }
    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let start = input.items_read();
        let Some(w) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if w.is_empty() {
            return Ok(Work::Done);
        }
        let n = w.len();
        let mut seen = self.seen.lock().unwrap();
        if seen.first_bad.is_none() {
            if let Some(k) = (0..n).find(|&k| w[k] != (self.make)(start + k as u64)) {
                seen.first_bad = Some(start + k as u64);
            }
        }
        seen.checksum = fnv(seen.checksum, bytemuck::cast_slice(w));
        seen.items += n as u64;
        input.consume(n);
        let mut tags = Vec::new();
        input.take_tags(start + n as u64, &mut tags);
        seen.tags.extend(tags);
        Ok(Work::Progress)
    }
}

/// Runs `graph` on its own thread.
pub fn spawn(
    graph: Graph,
) -> JoinHandle<Result<sluice_runtime::RunReport, sluice_runtime::RuntimeError>> {
    std::thread::spawn(move || graph.run(&RunOptions::default()))
}

/// A receiver graph (tcp_source listening on 127.0.0.1:0 → checker) and its address.
pub fn receiver<T: Item + PartialEq>(
    make: fn(u64) -> T,
    opts: TcpOptions,
) -> (Graph, std::net::SocketAddr, Arc<Mutex<Seen>>) {
    let source = TcpSource::<T>::new("tcp-listen://127.0.0.1:0", opts).unwrap();
    let addr = source.local_addr().unwrap();
    let (checker, seen) = Checker::new(make);
    let mut g = Graph::new();
    let a = g.add("rx", source).unwrap();
    let b = g.add("check", checker).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    (g, addr, seen)
}

/// A sender graph (counter → tcp_sink connecting to `url`).
pub fn sender<T: Item>(counter: Counter<T>, url: &str, opts: TcpOptions) -> Graph {
    let sink = TcpSink::<T>::new(url, opts).unwrap();
    let mut g = Graph::new();
    let a = g.add("count", counter).unwrap();
    let b = g.add("tx", sink).unwrap();
    g.connect(a, "out", b, "in").unwrap();
    g
}

pub fn rate_tag(index: u64, hz: f64) -> Tag {
    Tag::new(index, "rx_rate", TagValue::F64(hz))
}

/// Which direction's bytes a [`cutting_relay`] counts towards a cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Bytes from the connecting end.
    FromClient,
    /// Bytes from the listening end.
    FromServer,
}

/// Relays connections from its listener to `target`; connection `i` is cut after `cuts[i]`
/// bytes flowed in direction `flow` (later ones are relayed whole). Returns its address and
/// the count of connections cut.
pub fn cutting_relay(
    target: std::net::SocketAddr,
    cuts: Vec<usize>,
    flow: Flow,
) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let cut_count = Arc::new(AtomicUsize::new(0));
    let counted = cut_count.clone();
    std::thread::spawn(move || {
        for (i, client) in listener.incoming().enumerate() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(target) else {
                return;
            };
            let limit = cuts.get(i).copied();
            let (from, to) = match flow {
                Flow::FromClient => (client, server),
                Flow::FromServer => (server, client),
            };
            let (to2, from2) = (to.try_clone().unwrap(), from.try_clone().unwrap());
            // The other direction, whole.
            let back = std::thread::spawn(move || {
                let (mut from, mut to) = (to2, from2);
                let mut buf = [0u8; 4096];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 || to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = to.shutdown(Shutdown::Both);
            });
            let (mut from, mut to) = (from, to);
            let mut buf = vec![0u8; 1 << 16];
            let mut total = 0usize;
            let mut cut = false;
            loop {
                let want = match limit {
                    Some(l) => buf.len().min(l - total),
                    None => buf.len(),
                };
                let Ok(n) = from.read(&mut buf[..want.max(1)]) else {
                    break;
                };
                if n == 0 || to.write_all(&buf[..n]).is_err() {
                    break;
                }
                total += n;
                if limit.is_some_and(|l| total >= l) {
                    cut = true;
                    break;
                }
            }
            if cut {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
            let _ = back.join();
        }
    });
    (addr, cut_count)
}

/// Stream settings for failover tests: a silent peer is noticed within 300 ms, a lost one is
/// waited for 20 s, small frames.
pub fn fast() -> TcpOptions {
    TcpOptions {
        heartbeat: std::time::Duration::from_millis(50),
        peer_timeout: std::time::Duration::from_millis(300),
        resume_timeout: std::time::Duration::from_secs(20),
        frame_bytes: 16 << 10,
        retention_bytes: 2 << 20,
        ..TcpOptions::default()
    }
}

/// The process out of file descriptors: its limit lowered to 256 and every descriptor left
/// taken by `/dev/null`. Dropping it frees them and puts the limit back (also when a test
/// fails). A test that makes one must be alone in its test binary.
pub struct OutOfDescriptors {
    files: Vec<std::fs::File>,
    old: rustix::process::Rlimit,
}

impl OutOfDescriptors {
    /// Takes every descriptor but `spare`.
    pub fn take(spare: usize) -> OutOfDescriptors {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let old = getrlimit(Resource::Nofile);
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(256),
                maximum: old.maximum,
            },
        )
        .unwrap();
        let mut files = Vec::new();
        for _ in 0..4096 {
            match std::fs::File::open("/dev/null") {
                Ok(f) => files.push(f),
                Err(e) if e.raw_os_error() == Some(24) => break, // EMFILE
                Err(e) => panic!("open /dev/null: {e}"),
            }
        }
        files.truncate(files.len().saturating_sub(spare));
        OutOfDescriptors { files, old }
    }
}

impl Drop for OutOfDescriptors {
    fn drop(&mut self) {
        self.files.clear();
        let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, self.old);
    }
}
