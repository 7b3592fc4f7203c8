//! The crate dependency rules of `ARCHITECTURE.md`, checked from `cargo metadata`: each crate
//! of the workspace may depend (for building, not for its tests) only on the crates listed for
//! it, and no crate depends on the command (`sluice`). A new crate must be given its rule here.

use std::collections::BTreeMap;
use std::process::Command;

/// Each crate and the workspace crates it may depend on.
const RULES: &[(&str, &[&str])] = &[
    ("sluice-os", &[]),
    ("sluice-queue", &["sluice-os"]),
    ("sluice-runtime", &["sluice-os", "sluice-queue"]),
    (
        "sluice-graph",
        &["sluice-os", "sluice-queue", "sluice-runtime"],
    ),
    // The byte encoding of tag values, for the crates that speak wire formats.
    ("sluice-pmt", &["sluice-queue"]),
    // Pure DSP and file formats: no runtime, graph or blocks.
    ("sluice-kernels", &[]),
    ("sluice-formats", &["sluice-kernels", "sluice-os"]),
    ("sluice-plot", &["sluice-kernels"]),
    // Stand alone.
    ("sluice-conv", &["sluice-os"]),
    ("sluice-copy", &["sluice-os"]),
    (
        "sluice-blocks",
        &[
            "sluice-os",
            "sluice-queue",
            "sluice-runtime",
            "sluice-graph",
            "sluice-kernels",
            "sluice-formats",
            "sluice-plot",
            "sluice-conv",
            "sluice-copy",
        ],
    ),
    // SoapySDR radios: blocks over the runtime and graph, conversions from the kernels.
    (
        "sluice-soapy",
        &[
            "sluice-os",
            "sluice-queue",
            "sluice-runtime",
            "sluice-graph",
            "sluice-kernels",
        ],
    ),
    ("sluice-amps", &["sluice-kernels", "sluice-formats"]),
    (
        "sluice-net",
        &[
            "sluice-os",
            "sluice-queue",
            "sluice-pmt",
            "sluice-runtime",
            "sluice-graph",
        ],
    ),
    (
        "sluice-zmq",
        &[
            "sluice-os",
            "sluice-queue",
            "sluice-pmt",
            "sluice-runtime",
            "sluice-graph",
            // The accept path every listener shares (`sluice_net::accept`).
            "sluice-net",
        ],
    ),
    (
        "sluice-audio",
        &[
            "sluice-os",
            "sluice-runtime",
            "sluice-graph",
            "sluice-kernels",
            "sluice-formats",
            "sluice-conv",
        ],
    ),
    (
        "sluice-cluster",
        &[
            "sluice-os",
            "sluice-queue",
            "sluice-runtime",
            "sluice-graph",
            "sluice-net",
        ],
    ),
    (
        "sluice-registry",
        &[
            "sluice-graph",
            "sluice-blocks",
            "sluice-net",
            "sluice-zmq",
            "sluice-audio",
            "sluice-soapy",
        ],
    ),
    // The Python package: graphs through the standard registry, the engines alone.
    (
        "sluice-python",
        &[
            "sluice-runtime",
            "sluice-graph",
            "sluice-registry",
            "sluice-kernels",
            "sluice-conv",
            // `Graph.start(http=...)` serves the web console beside the run.
            "sluice-web",
        ],
    ),
    // The web console: watches and steers a run through the runtime's handles, FFTs for views.
    // Its listeners take connections through `sluice_net::accept`, as every listener does.
    (
        "sluice-web",
        &["sluice-runtime", "sluice-kernels", "sluice-net"],
    ),
    (
        "sluice-bench",
        &[
            "sluice-os",
            "sluice-queue",
            "sluice-runtime",
            "sluice-graph",
            "sluice-kernels",
            "sluice-formats",
            "sluice-plot",
            "sluice-blocks",
            "sluice-amps",
            "sluice-conv",
            "sluice-copy",
            "sluice-net",
            "sluice-zmq",
            "sluice-audio",
            "sluice-cluster",
            "sluice-registry",
            "sluice-pmt",
            "sluice-soapy",
            // `sluice bench console` runs the console beside a graph.
            "sluice-web",
        ],
    ),
];

/// Each workspace crate and the workspace crates it depends on: (normal, dev).
fn dependencies() -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut crates = BTreeMap::new();
    for package in meta["packages"].as_array().unwrap() {
        let (mut normal, mut dev) = (Vec::new(), Vec::new());
        for dep in package["dependencies"].as_array().unwrap() {
            let name = dep["name"].as_str().unwrap().to_string();
            if !name.starts_with("sluice") {
                continue;
            }
            match dep["kind"].as_str() {
                None => normal.push(name),
                Some("dev") => dev.push(name),
                Some(_) => normal.push(name),
            }
        }
        crates.insert(package["name"].as_str().unwrap().to_string(), (normal, dev));
    }
    crates
}

#[test]
fn crates_depend_only_as_the_architecture_allows() {
    let rules: BTreeMap<&str, &[&str]> = RULES.iter().copied().collect();
    let mut broken = Vec::new();
    for (name, (normal, dev)) in dependencies() {
        if dev.iter().chain(&normal).any(|d| d == "sluice") && name != "sluice" {
            broken.push(format!(
                "{name} depends on the command (sluice); no library may"
            ));
        }
        if name == "sluice" {
            continue;
        }
        let Some(allowed) = rules.get(name.as_str()) else {
            broken.push(format!(
                "{name} has no rule: add it to RULES and ARCHITECTURE.md"
            ));
            continue;
        };
        for dep in &normal {
            if !allowed.contains(&dep.as_str()) {
                broken.push(format!("{name} must not depend on {dep} (ARCHITECTURE.md)"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
