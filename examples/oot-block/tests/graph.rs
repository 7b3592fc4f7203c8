//! The graph file beside this crate runs with the user's block, and the block is as declared.

use oot_block::registry;
use sluice_graph::{load_with, GraphFileExt, Override};
use sluice_runtime::Graph;
use std::path::Path;

#[test]
fn the_graph_file_runs_with_the_users_block() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("graph.toml");
    let out = std::env::temp_dir().join(format!("oot-clipped-{}.f32", std::process::id()));
    let text = std::fs::read_to_string(&path).unwrap();
    let set: Override = format!("sink.path=\"{}\"", out.display()).parse().unwrap();
    let loaded = load_with(&text, "graph.toml", &registry(), &[set]).unwrap();
    let report = loaded.graph.run_stepped().unwrap();
    assert_eq!(report.node("sink").unwrap().items_in, 48_000);
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let samples: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let peak = samples.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    assert_eq!((samples.len(), peak), (48_000, 0.5));
}

#[test]
fn a_misspelt_parameter_of_the_users_block_is_named() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("graph.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("level = 0.5", "levle = 0.5");
    let err = Graph::from_str(&text, "graph.toml", &registry())
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("unknown parameter 'levle' for clip (did you mean 'level'?)"),
        "{err}"
    );
}
