//! The `etcd_response` fuzz target's inputs as ordinary tests: the seed corpus
//! (`fuzz/corpus/etcd_response/`) and any crash inputs (`fuzz/regressions/etcd_response/`)
//! replay through the same function as the target, and the chunk size that wrapped is spelled
//! out.

use sluice_cluster::etcd::fuzz_response;
use std::path::Path;

fn replay(dir: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        // Answers or refuses; a panic fails the test with the file's name in the output.
        eprintln!("{}: {:?}", path.display(), fuzz_response(&data));
        n += 1;
    }
    n
}

#[test]
fn the_seed_corpus_and_regressions_replay_without_panic() {
    assert!(
        replay("corpus/etcd_response") >= 4,
        "the seed corpus is missing"
    );
    replay("regressions/etcd_response");
}

#[test]
fn a_chunk_size_of_two_to_the_64_minus_one_is_refused() {
    let raw =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab\r\n0\r\n\r\n";
    let e = fuzz_response(raw).unwrap_err();
    assert!(e.contains("cut off"), "{e}");
    // Every prefix of a good chunked response answers or refuses.
    let good = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    for end in 0..good.len() {
        let _ = fuzz_response(&good[..end]);
    }
    assert_eq!(fuzz_response(good), Ok((200, 3)));
}

// --- The control protocol's lines (`worker_control`) --------------------------------------

use sluice_cluster::protocol::{self, FromWorker, LeaseSpec, NodeLine, ToWorker};

fn control_seeds() -> Vec<(&'static str, Vec<u8>)> {
    fn lines<T: serde::Serialize>(messages: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            protocol::send(&mut out, m, "seed").unwrap();
        }
        out
    }
    let load = ToWorker::Load {
        version: protocol::VERSION,
        run: "r1".into(),
        origin: "g.toml (host a)".into(),
        doc: sluice_graph::PartitionDoc::new(
            "a",
            sluice_graph::GraphDoc::from_graph_file(
                "[[node]]\nname = \"src\"\ntype = \"null_source\"\nparams = { item = \"f32\" }\n",
            )
            .unwrap(),
        ),
        v3_partition: String::new(),
        cwd: "/tmp".into(),
        stream_receivers: vec!["x_out_from_b".into()],
        lease: Some(LeaseSpec {
            etcd: "https://10.0.0.254:2379".into(),
            key: "/sluice/c/runs/r1/primary/a".into(),
            ttl_s: 2,
            fence: "a".into(),
            primary: true,
            warm: false,
        }),
    };
    let nodes = vec![NodeLine {
        name: "src".into(),
        items_in: 0,
        items_out: u64::MAX,
    }];
    vec![
        ("to_worker", lines(&[load, ToWorker::Go, ToWorker::Stop])),
        (
            "from_worker",
            lines(&[
                FromWorker::Loaded,
                FromWorker::Stats {
                    elapsed_s: 1.5,
                    cpu_s: 0.25,
                    nodes: nodes.clone(),
                    takeovers: Vec::new(),
                    promoted: None,
                },
                FromWorker::Done {
                    wall_s: 2.0,
                    cpu_s: 0.5,
                    stopped: false,
                    nodes,
                    table: "node  items\nsrc  1\n".into(),
                    warnings: vec!["late: \u{1b}[31m".into()],
                    takeovers: Vec::new(),
                },
                FromWorker::Failed {
                    message: "node src: gone".into(),
                },
            ]),
        ),
    ]
}

#[test]
fn the_control_lines_replay_and_decode_their_seeds() {
    let dir = |d: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz")
            .join(d)
    };
    if std::env::var_os("SLUICE_WRITE_SEEDS").is_some() {
        let at = dir("corpus/worker_control");
        std::fs::create_dir_all(&at).unwrap();
        for (name, bytes) in control_seeds() {
            std::fs::write(at.join(format!("seed-{name}")), &bytes).unwrap();
        }
    }
    let mut n = 0;
    for d in ["corpus/worker_control", "regressions/worker_control"] {
        for e in std::fs::read_dir(dir(d)).into_iter().flatten() {
            let path = e.unwrap().path();
            eprintln!(
                "{}: {:?}",
                path.display(),
                protocol::fuzz_lines(&std::fs::read(&path).unwrap())
            );
            n += 1;
        }
    }
    assert!(n >= 2, "the seed corpus is missing");
    for (name, bytes) in control_seeds() {
        let path = dir("corpus/worker_control").join(format!("seed-{name}"));
        assert!(
            std::fs::read(&path).unwrap_or_default() == bytes,
            "{} is missing or stale: SLUICE_WRITE_SEEDS=1 cargo test -p sluice-cluster --test fuzz_regressions writes it again",
            path.display()
        );
    }
    let seeds = control_seeds();
    assert_eq!(protocol::fuzz_lines(&seeds[0].1).0, 3);
    assert_eq!(protocol::fuzz_lines(&seeds[1].1).1, 4);
    // A line cut short, a line of another protocol, a line too long: refused, no panic.
    let long = vec![b'x'; protocol::MAX_LINE + 2];
    for bad in [&b"{\"type\":\"go\""[..], b"GET / HTTP/1.1\r\n\r\n", &long] {
        assert_eq!(protocol::fuzz_lines(bad), (0, 0));
    }
}
