//! Every block type of the standard registry is as declared: its example passes its
//! declaration, and the node it builds has the declared ports (names, item types, vector
//! lengths) and exactly the declared settable parameters, each of which takes its declared
//! default while running. And `docs/blocks.md` is the reference the declarations generate.

use sluice_graph::{Direction, FileAccess, ResolvedPort};
use sluice_registry::standard_registry;
use sluice_runtime::{Node, TagValue};

/// A node's ports as the declaration resolves them.
fn built_ports(node: &dyn Node) -> Vec<ResolvedPort> {
    let ports = node.ports();
    let resolved = |direction, p: &sluice_runtime::PortSpec| ResolvedPort {
        direction,
        name: p.name.clone(),
        item: p.item.name().to_string(),
        vlen: p.vlen,
    };
    let inputs = ports.inputs.iter().map(|p| resolved(Direction::Input, p));
    inputs
        .chain(ports.outputs.iter().map(|p| resolved(Direction::Output, p)))
        .collect()
}

/// A block that reads a file, opens a device or a connection may fail to build for want of
/// it here, naming that parameter.
fn may_fail(b: &sluice_graph::BlockType, param: &str) -> bool {
    b.files().any(|(p, a)| p == param && a == FileAccess::Read)
        || matches!(
            b.family,
            sluice_graph::Family::Audio | sluice_graph::Family::Network
        )
}

#[test]
fn every_block_is_as_declared() {
    for b in standard_registry().types() {
        let name = &b.name;
        let mut params = b.example_params().unwrap();
        assert_eq!(b.check(&params), vec![], "{name}: its example");
        let declared = b.resolve_ports(&params);
        let mut node = match b.instantiate(&mut params) {
            Ok(node) => node,
            Err(e) => {
                assert!(may_fail(b, &e.param), "{name}: {e:?}");
                continue;
            }
        };
        let built = built_ports(node.as_ref());
        match declared {
            Some(declared) => assert_eq!(declared, built, "{name}: ports"),
            // Counted when built (one per channel of a file): every built port must still be
            // one the declaration names.
            None => {
                for port in &built {
                    assert!(
                        b.ports.iter().any(|d| d.direction == port.direction
                            && port.name.starts_with(d.name.as_ref())),
                        "{name}: port {port:?} is not declared"
                    );
                }
            }
        }
        let mut controls: Vec<String> =
            node.controls().iter().map(|c| c.name.to_string()).collect();
        let mut settable: Vec<String> = b.settable().map(str::to_string).collect();
        controls.sort();
        settable.sort();
        assert_eq!(controls, settable, "{name}: settable parameters");
        for param in &b.params {
            let (true, sluice_graph::Default::Value(v)) = (param.settable, &param.default) else {
                continue;
            };
            let value = match v {
                toml::Value::Float(x) => TagValue::F64(*x),
                toml::Value::Integer(i) => TagValue::F64(*i as f64),
                toml::Value::String(s) => TagValue::Str(s.as_str().into()),
                other => panic!("{name}.{}: default {other}", param.name),
            };
            node.set_control(&param.name, &value, 0)
                .unwrap_or_else(|e| panic!("{name}.{}: {e}", param.name));
        }
    }
}

#[test]
fn docs_blocks_md_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/blocks.md");
    let generated = standard_registry().reference_markdown();
    let written = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        written == generated,
        "docs/blocks.md is not what the declarations generate: run \
         `cargo run -p sluice -- blocks --markdown > docs/blocks.md`"
    );
}

#[test]
fn block_names_are_unique_and_families_are_set() {
    let registry = standard_registry();
    for b in registry.types() {
        assert!(!b.help.is_empty(), "{}: no help", b.name);
        for p in &b.params {
            assert!(!p.help.is_empty(), "{}.{}: no help", b.name, p.name);
        }
    }
}
