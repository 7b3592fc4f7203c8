//! The catalogue teaches GNU Radio's users: its block names lead to sluice's, in graph files
//! and in `sluice blocks`.

use sluice_graph::load_str;
use sluice_registry::standard_registry;
use std::collections::BTreeMap;

#[test]
fn gnuradio_names_lead_to_the_block() {
    let registry = standard_registry();
    for (gnuradio, ours) in [
        ("quadrature_demod", "fm_demod"),
        ("analog.quadrature_demod_cf", "fm_demod"),
        ("freq_xlating_fir_filter_ccc", "xlating_fir"),
        ("pfb_channelizer_ccf", "channelizer"),
        ("blocks.multiply_const_vcc", "multiply_const"),
        ("sig_source_c", "signal_source"),
        ("fm_deemph", "deemphasis"),
        ("wavfile_sink", "wav_sink"),
    ] {
        let (block, _) = registry
            .from_gnuradio(gnuradio)
            .unwrap_or_else(|| panic!("{gnuradio}: no block"));
        assert_eq!(block.name, ours, "{gnuradio}");
        let text = registry.describe_one(gnuradio).unwrap();
        assert!(text.starts_with(&format!("{ours} (")), "{text}");
    }
    assert!(registry.from_gnuradio("quadrature").is_none());
    let graph = "[[node]]\nname = \"demod\"\ntype = \"quadrature_demod_cf\"\n";
    let e = load_str(graph, "g.toml", &registry)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        e,
        "g.toml:3:8: node 'demod': unknown block type 'quadrature_demod_cf' (did you mean fm_demod? (GNU Radio: quadrature_demod))"
    );
}

#[test]
fn no_two_blocks_claim_one_gnuradio_name() {
    let mut seen = BTreeMap::new();
    for b in standard_registry().types() {
        for g in &b.gnuradio {
            if let Some(other) = seen.insert(g.to_string(), b.name.to_string()) {
                panic!("GNU Radio's {g} is claimed by {other} and {}", b.name);
            }
            assert!(
                standard_registry().find(g).is_none() || *g == b.name,
                "{g} is another block's name"
            );
        }
    }
}

#[test]
fn the_brief_catalogue_is_one_line_per_block() {
    let registry = standard_registry();
    let text = registry.describe();
    let blocks = registry.types().len();
    let lines = text.lines().count();
    // A family heading and a blank line per family, and two lines of advice.
    assert!(
        lines < blocks + 2 * 16 + 3,
        "{lines} lines for {blocks} blocks"
    );
    let one = registry.describe_one("rotator").unwrap();
    assert_eq!(one.matches("settable").count(), 1, "{one}");
    assert!(!one.contains("standby"), "{one}");
}
