//! A graph split over three hosts (here: threads on loopback) produces exactly what the whole
//! graph produces on one machine: items, tags and fan-out to two hosts included.

use sluice_cluster::placement::{plan, PlanOptions};
use std::collections::BTreeMap;
use std::path::Path;

fn registry() -> sluice_graph::Registry {
    let mut r = sluice_blocks::graph_blocks::standard_registry();
    sluice_net::graph_blocks::register(&mut r);
    r
}

/// Noise → head on host a; a low-pass FIR on host b (to a file there); the raw noise also to a
/// file on host c, and the filtered stream from b to c as well.
fn graph(dir: &Path, with_hosts: bool) -> String {
    let place = |h: &str| {
        if with_hosts {
            format!("host = \"{h}\"\n")
        } else {
            String::new()
        }
    };
    let hosts = if with_hosts {
        "[hosts.a]\naddress = \"127.0.0.1\"\n[hosts.b]\n[hosts.c]\naddress = \"127.0.0.1\"\n"
    } else {
        ""
    };
    let d = dir.display();
    format!(
        r#"{hosts}
[[node]]
name = "noise"
type = "signal_source"
{a}params = {{ item = "c32", waveform = "noise", amplitude = 1.0, seed = 11 }}

[[node]]
name = "head"
type = "head"
{a}params = {{ item = "c32", items = 300_000 }}

[[node]]
name = "lowpass"
type = "fir"
{b}params = {{ item = "c32", design = "lowpass", num_taps = 63, cutoff = 0.1 }}

[[node]]
name = "filtered_b"
type = "file_sink"
{b}params = {{ path = "{d}/filtered_b.c32" }}

[[node]]
name = "raw_c"
type = "file_sink"
{c}params = {{ path = "{d}/raw_c.c32" }}

[[node]]
name = "filtered_c"
type = "file_sink"
{c}params = {{ path = "{d}/filtered_c.c32" }}

[[edge]]
from = "noise.out"
to = "head.in"

[[edge]]
from = "head.out"
to = "lowpass.in"

[[edge]]
from = "head.out"
to = "raw_c.in"

[[edge]]
from = "lowpass.out"
to = "filtered_b.in"

[[edge]]
from = "lowpass.out"
to = "filtered_c.in"
"#,
        a = place("a"),
        b = place("b"),
        c = place("c"),
    )
}

fn free_port_base() -> u16 {
    // Three consecutive free ports: bind port 0 and use the next ones (loopback, short-lived).
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = l.local_addr().unwrap().port();
    p.saturating_sub(3).max(1024)
}

#[test]
fn three_hosts_produce_what_one_machine_produces() {
    let one = tempfile::tempdir().unwrap();
    let many = tempfile::tempdir().unwrap();
    let reg = registry();
    sluice_graph::load_str(&graph(one.path(), false), "one.toml", &reg)
        .unwrap()
        .run_stepped()
        .unwrap();

    let opts = PlanOptions {
        first_port: free_port_base(),
        addresses: BTreeMap::from([("b".to_string(), "127.0.0.1".to_string())]),
        ..PlanOptions::default()
    };
    let p = plan(&graph(many.path(), true), "many.toml", &reg, &opts).unwrap();
    assert_eq!(p.partitions.len(), 3);
    // head.out goes to b and to c: two streams; lowpass.out goes to c once (b keeps its own
    // consumer locally).
    let described: Vec<String> = p.streams.iter().map(|s| s.describe()).collect();
    assert_eq!(
        described,
        [
            "head.out (host a) -> host b",
            "head.out (host a) -> host c",
            "lowpass.out (host b) -> host c"
        ]
    );
    assert_eq!(p.partition("b").unwrap().nodes, ["lowpass", "filtered_b"]);
    let threads: Vec<_> = p
        .partitions
        .iter()
        .map(|part| {
            let text = part.text.clone();
            let host = part.host.clone();
            std::thread::spawn(move || {
                let reg = registry();
                let g = sluice_graph::load_str(&text, &host, &reg)
                    .unwrap_or_else(|e| panic!("host {host}: {e}\n{text}"));
                g.run(&Default::default())
                    .unwrap_or_else(|e| panic!("host {host}: {e}"));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let reference = std::fs::read(one.path().join("filtered_b.c32")).unwrap();
    assert_eq!(reference.len(), 300_000 * 8);
    assert_eq!(
        std::fs::read(many.path().join("filtered_c.c32")).unwrap(),
        reference
    );
    assert_eq!(
        std::fs::read(many.path().join("raw_c.c32")).unwrap(),
        std::fs::read(one.path().join("raw_c.c32")).unwrap()
    );
}

#[test]
fn a_host_without_an_address_and_no_worker_is_refused() {
    let text = "[hosts.a]\n[[node]]\nname = \"s\"\ntype = \"null_source\"\nhost = \"a\"\n[[node]]\nname = \"k\"\ntype = \"null_sink\"\nhost = \"a\"\n[[edge]]\nfrom = \"s.out\"\nto = \"k.in\"\n";
    let err = plan(text, "g.toml", &registry(), &PlanOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("host a (line 1) has no address"), "{err}");
}
