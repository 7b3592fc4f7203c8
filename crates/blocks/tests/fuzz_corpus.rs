//! The `graph_load` fuzz target's corpus replays as an ordinary test through the same driver
//! as the target ([`sluice_blocks::fuzz::load_graph`]). Its seeds are the repository's example
//! graphs and, for every block type the driver's registry holds, a graph file that declares
//! one node of that type with its declared example parameters, fed by and feeding null blocks
//! (written by the TOML serializer), so that every type's parameters and construction are
//! reached.

#[path = "../../../fuzz/replay.rs"]
mod replay;

use sluice_blocks::fuzz::{contained_registry, load_graph};
use sluice_graph::Direction;
use std::path::Path;

fn block_seeds() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for t in contained_registry().types() {
        // The example is the inside of an inline table.
        let wrapped: toml::Table = toml::from_str(&format!("p = {{ {} }}", t.example)).unwrap();
        let params = wrapped["p"].as_table().unwrap().clone();
        let mut doc = toml::Table::new();
        let mut nodes = vec![toml::Value::Table(toml::Table::from_iter([
            ("name".to_string(), "n".into()),
            ("type".to_string(), t.name.to_string().into()),
            ("params".to_string(), toml::Value::Table(params.clone())),
        ]))];
        let mut edges = Vec::new();
        let item = params.get("item").cloned().unwrap_or_else(|| "f32".into());
        for (k, port) in t.ports.iter().enumerate() {
            let input = port.direction == Direction::Input;
            let other = format!("p{k}");
            let kind = if input { "null_source" } else { "null_sink" };
            nodes.push(toml::Value::Table(toml::Table::from_iter([
                ("name".to_string(), other.clone().into()),
                ("type".to_string(), kind.into()),
                (
                    "params".to_string(),
                    toml::Value::Table(toml::Table::from_iter([(
                        "item".to_string(),
                        item.clone(),
                    )])),
                ),
            ])));
            let (from, to) = if input {
                (format!("{other}.out"), format!("n.{}", port.name))
            } else {
                (format!("n.{}", port.name), format!("{other}.in"))
            };
            edges.push(toml::Value::Table(toml::Table::from_iter([
                ("from".to_string(), from.into()),
                ("to".to_string(), to.into()),
            ])));
        }
        doc.insert("sluice".into(), 1.into());
        doc.insert("node".into(), toml::Value::Array(nodes));
        doc.insert("edge".into(), toml::Value::Array(edges));
        seeds.push((
            format!("block-{}", t.name),
            toml::to_string(&doc).unwrap().into_bytes(),
        ));
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<_> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for path in files {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        seeds.push((format!("example-{stem}"), std::fs::read(&path).unwrap()));
    }
    seeds
}

#[test]
fn every_corpus_input_replays() {
    let n = replay::replay("graph_load", load_graph);
    assert!(
        n >= block_seeds().len(),
        "the seed corpus is missing ({n} inputs)"
    );
}

#[test]
fn the_corpus_holds_every_contained_block_and_example() {
    let seeds = block_seeds();
    let mut loaded = 0;
    for (name, bytes) in &seeds {
        load_graph(bytes);
        let text = std::str::from_utf8(bytes).unwrap();
        loaded += usize::from(sluice_graph::load_str(text, name, contained_registry()).is_ok());
    }
    // Most others are refused at their edges (a null block's item type or vector length is
    // not the node's), after the node was built.
    assert!(loaded >= 20, "only {loaded} of {} seeds load", seeds.len());
    let named: Vec<(&str, Vec<u8>)> = seeds.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    replay::check_seeds("graph_load", &named);
}
