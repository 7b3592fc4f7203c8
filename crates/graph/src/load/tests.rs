//! The loader's tests, on minimal blocks of their own.

use super::*;
use crate::{BlockType, Family, ItemDecl, Param, Rate};
use num_complex_free::*;
use sluice_runtime::{Item, Node, NodeError, Ports, Work, WorkIo};

/// Minimal blocks, so that the loader is tested without the DSP crate.
mod num_complex_free {
    use super::*;

    /// `items` zeros of `T`.
    pub struct Count<T> {
        pub left: u64,
        pub _t: std::marker::PhantomData<T>,
    }
    impl<T: Item + Default> Node for Count<T> {
        fn ports(&self) -> Ports {
            Ports::new().output::<T>("out")
        }
        fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            if self.left == 0 {
                return Ok(Work::Done);
            }
            let out = io.outputs.get::<T>(0)?;
            let Some(space) = out.reserve(1)? else {
                return Ok(Work::NeedOutput { port: 0, items: 1 });
            };
            let n = space.len().min(self.left as usize);
            space[..n].fill(T::default());
            out.commit(n);
            self.left -= n as u64;
            Ok(Work::Progress)
        }
    }

    /// Passes f32s on.
    pub struct Pass;
    impl Node for Pass {
        fn ports(&self) -> Ports {
            Ports::new().input::<f32>("in").output::<f32>("out")
        }
        fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            let input = io.inputs.get::<f32>(0)?;
            let output = io.outputs.get::<f32>(0)?;
            let Some(w) = input.window(1)? else {
                return Ok(Work::NeedInput { port: 0, items: 1 });
            };
            if w.is_empty() {
                return Ok(Work::Done);
            }
            let Some(space) = output.reserve(1)? else {
                return Ok(Work::NeedOutput { port: 0, items: 1 });
            };
            let n = w.len().min(space.len());
            space[..n].copy_from_slice(&w[..n]);
            input.consume(n);
            output.commit(n);
            Ok(Work::Progress)
        }
    }

    /// Consumes `T`s.
    pub struct Drain<T>(pub std::marker::PhantomData<T>);
    impl<T: Item> Node for Drain<T> {
        fn ports(&self) -> Ports {
            Ports::new().input::<T>("in")
        }
        fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
            let input = io.inputs.get::<T>(0)?;
            let Some(w) = input.window(1)? else {
                return Ok(Work::NeedInput { port: 0, items: 1 });
            };
            if w.is_empty() {
                return Ok(Work::Done);
            }
            let n = w.len();
            input.consume(n);
            Ok(Work::Progress)
        }
    }
}

fn registry() -> Registry {
    let mut r = Registry::new();
    let item = || ItemDecl::Param("item".into());
    r.add(
        BlockType::new("count", Family::Sources, "zeros")
            .output("out", item())
            .param(Param::integer("items", "how many"))
            .param(Param::choice("item", &["f32", "u8"], "f32 or u8").default("f32"))
            .param(Param::number("rate", "its rate").derived("-"))
            .rate(Rate::param("rate"))
            .build(|p| {
                let left = p.u64("items")?;
                match p.str("item")?.as_str() {
                    "f32" => Ok(Box::new(Count::<f32> {
                        left,
                        _t: Default::default(),
                    })),
                    _ => Ok(Box::new(Count::<u8> {
                        left,
                        _t: Default::default(),
                    })),
                }
            }),
    )
    .unwrap();
    r.add(
        BlockType::new(
            "tap",
            Family::Filters,
            "passes on; its build checks the rate it was given",
        )
        .input("in", ItemDecl::fixed("f32"))
        .output("out", ItemDecl::fixed("f32"))
        .param(Param::integer("decimation", "the rate's divisor").default(1))
        .param(Param::number("sample_rate", "the input's rate").follows_stream())
        .param(Param::number("expect", "the rate the build must see").derived("-"))
        .rate(Rate::divided_by("decimation"))
        .build(|p| {
            let seen = p.opt_f64("sample_rate")?;
            match p.opt_f64("expect")? {
                Some(expect) if seen != Some(expect) => Err(ParamError::new(
                    "sample_rate",
                    format!("is {seen:?}, not {expect}"),
                )),
                _ => Ok(Box::new(Pass)),
            }
        }),
    )
    .unwrap();
    r.add(
        BlockType::new("drain", Family::Sinks, "consumes")
            .input("in", ItemDecl::fixed("f32"))
            .param(Param::writes("path", "a file it would write").derived("-"))
            .build(|_| Ok(Box::new(Drain::<f32>(Default::default())))),
    )
    .unwrap();
    r
}

fn error_of(text: &str) -> String {
    match load_str(text, "g.toml", &registry()) {
        Ok(_) => panic!("loaded"),
        Err(e) => e.to_string(),
    }
}

const GOOD: &str = r#"
[[node]]
name = "src"
type = "count"
params = { items = 1000 }

[[node]]
name = "sink"
type = "drain"

[[edge]]
from = "src.out"
to = "sink.in"
"#;

#[test]
fn a_good_file_runs() {
    let report = load_str(GOOD, "g.toml", &registry())
        .unwrap()
        .run_stepped()
        .unwrap();
    assert_eq!(report.node("sink").unwrap().items_in, 1000);
}

#[test]
fn unknown_parameters_name_line_column_and_the_likely_one() {
    let text = GOOD.replace("items = 1000", "items = 1000, itmes = 5");
    assert_eq!(
        error_of(&text),
        "g.toml:5:34: node 'src': unknown parameter 'itmes' for count (did you mean 'item'?)"
    );
    let text = GOOD.replace("items = 1000", "items = 1000, colour = 5");
    assert_eq!(
        error_of(&text),
        "g.toml:5:35: node 'src': unknown parameter 'colour' for count (count takes: items, item, rate)"
    );
}

#[test]
fn bad_parameter_values_name_the_place() {
    let text = GOOD.replace("items = 1000", "items = \"many\"");
    assert_eq!(
        error_of(&text),
        "g.toml:5:20: node 'src': parameter 'items' must be a whole number, not a string"
    );
    let text = GOOD.replace("items = 1000", "items = -3");
    assert_eq!(
        error_of(&text),
        "g.toml:5:20: node 'src': parameter 'items' must be at least 0, not -3"
    );
}

#[test]
fn a_misspelt_parameter_is_named_before_the_block_checks_anything() {
    // `items` is required: the block would say so, but the misspelling is the mistake.
    let text = GOOD.replace("items = 1000", "itme = 1000");
    assert_eq!(
        error_of(&text),
        "g.toml:5:19: node 'src': unknown parameter 'itme' for count (did you mean 'items'?)\n\
         g.toml:2:1: node 'src': parameter 'items' is required (the node gives 'itme': a misspelling?)"
    );
}

#[test]
fn every_mistake_of_a_file_is_reported() {
    let text = GOOD
        .replace("items = 1000", "items = 1000, colour = 1, item = \"f64\"")
        .replace("type = \"drain\"", "type = \"drian\"");
    let err = error_of(&text);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "g.toml:9:8: node 'sink': unknown block type 'drian' (did you mean drain?)",
            "g.toml:5:35: node 'src': unknown parameter 'colour' for count (count takes: items, item, rate)",
            "g.toml:5:45: node 'src': parameter 'item' must be one of f32, u8, not 'f64'",
        ]
    );
}

#[test]
fn a_file_for_a_newer_format_is_refused_clearly() {
    let ok = format!("sluice = 1\n{GOOD}");
    assert!(load_str(&ok, "g.toml", &registry()).is_ok());
    assert_eq!(
        error_of(&format!("sluice = 2\n{GOOD}")),
        "g.toml:1:10: the file is written for graph format 2, and this sluice reads format 1 to 1: install a newer sluice"
    );
}

#[test]
fn unknown_types_ports_and_mismatches_are_named() {
    let text = GOOD.replace("type = \"count\"", "type = \"cuont\"");
    assert_eq!(
        error_of(&text),
        "g.toml:4:8: node 'src': unknown block type 'cuont' (did you mean count?)"
    );
    let text = GOOD.replace("to = \"sink.in\"", "to = \"sink.input\"");
    assert_eq!(
        error_of(&text),
        "g.toml:13:6: edge src.out -> sink.input: node 'sink' has no input port 'input' (it has: in)"
    );
    let text = GOOD.replace("items = 1000", "items = 1000, item = \"u8\"");
    assert_eq!(
        error_of(&text),
        "g.toml:12:8: edge src.out -> sink.in: cannot connect src.out (u8) to sink.in (f32): the item types differ"
    );
}

#[test]
fn syntax_errors_and_unknown_keys_name_the_line() {
    let err = error_of("[[node]]\nname = \"a\"\ntype = \"count\"\nparms = {}\n");
    assert!(
        err.starts_with("g.toml:4:1: node 'a': unknown field `parms`"),
        "{err}"
    );
    let err = error_of("[[node]]\nname = \"a\nx");
    assert!(err.starts_with("g.toml:2:"), "{err}");
    let err = error_of("[[edge]]\nfrom = \"a.out\"\nto = \"b.in\"\n");
    assert_eq!(err, "g.toml: the graph has no [[node]] entries");
}

#[test]
fn unconnected_ports_and_duplicate_names_are_found_when_loading() {
    let text = GOOD.replace("[[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n", "");
    assert_eq!(
        error_of(&text),
        "g.toml:8: node 'sink': input port 'in' is not connected (add an [[edge]] to it)\n\
         g.toml:3: node 'src': output port 'out' is not connected (add an [[edge]] from it)"
    );
    let text = GOOD.replace("name = \"sink\"", "name = \"src\"");
    assert_eq!(
        error_of(&text),
        "g.toml:8:8: node 'src': a node of that name is already declared on line 3; names must be unique"
    );
}

/// A typed graph loads as its file does, with every check, its mistakes named without lines.
#[test]
fn a_typed_graph_loads_as_its_file_does() {
    let doc = crate::GraphDoc::from_graph_file(GOOD).unwrap();
    let report = load_doc(&doc, "partition", &registry())
        .unwrap()
        .graph
        .run_stepped()
        .unwrap();
    assert_eq!(report.node("sink").unwrap().items_in, 1000);
    // Written as a file and read back, it is the same graph.
    assert_eq!(
        crate::GraphDoc::from_graph_file(&doc.to_toml()).unwrap(),
        doc
    );
    let mut bad = doc.clone();
    bad.nodes[0]
        .params
        .insert("itmes".into(), toml::Value::Integer(1));
    bad.edges.clear();
    bad.nodes.push(bad.nodes[1].clone());
    let err = load_doc(&bad, "partition", &registry()).err().unwrap();
    assert_eq!(
        err.to_string(),
        "partition: node 'sink': a node of that name is already declared; names must be unique\n\
         partition: node 'src': unknown parameter 'itmes' for count (did you mean 'item'?)"
    );
    assert_eq!((err.line, err.column), (None, None));
}

#[test]
fn overrides_replace_parameters_and_must_name_a_node() {
    let set: Override = "src.items=10".parse().unwrap();
    let loaded = load_with(GOOD, "g.toml", &registry(), &[set]).unwrap();
    let report = loaded.graph.run_stepped().unwrap();
    assert_eq!(report.node("sink").unwrap().items_in, 10);
    let set: Override = "nope.items=10".parse().unwrap();
    let err = load_with(GOOD, "g.toml", &registry(), &[set])
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "g.toml: --set nope.items: the graph has no node named 'nope'"
    );
    assert!("src.items".parse::<Override>().is_err());
    let word: Override = "a.b=hello".parse().unwrap();
    assert_eq!(word.value, Value::String("hello".into()));
}

#[test]
fn dot_shows_nodes_and_typed_edges() {
    let dot = load_with(GOOD, "g.toml", &registry(), &[])
        .unwrap()
        .to_dot();
    assert!(dot.contains("\"src\" [label=\"src\\ncount\"]"), "{dot}");
    assert!(
        dot.contains("\"src\" -> \"sink\" [label=\"out → in\\nf32, rate known when it runs\"]"),
        "{dot}"
    );
}

fn with_hosts(hosts: &str) -> String {
    format!(
        "{hosts}\n[[node]]\nname = \"src\"\ntype = \"count\"\nhost = \"a\"\nparams = {{ items = 10 }}\n\n[[node]]\nname = \"sink\"\ntype = \"drain\"\nhost = \"b\"\n\n[[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n"
    )
}

#[test]
fn standbys_are_declared_hosts_without_nodes() {
    let ok = with_hosts("[hosts.a]\nstandby = \"s\"\n[hosts.b]\n[hosts.s]\n");
    let loaded = load_with(&ok, "g.toml", &registry(), &[]).unwrap();
    let a = &loaded.source.hosts["a"];
    assert_eq!(a.standby.as_deref(), Some("s"));
    assert_eq!(a.standby_mode, StandbyMode::Hot);
    assert_eq!(loaded.source.hosts["b"].standby, None);
    let hot =
        with_hosts("[hosts.a]\nstandby = \"s\"\nstandby_mode = \"hot\"\n[hosts.b]\n[hosts.s]\n");
    assert!(load_str(&hot, "g.toml", &registry()).is_ok());
    let warm =
        with_hosts("[hosts.a]\nstandby = \"s\"\nstandby_mode = \"warm\"\n[hosts.b]\n[hosts.s]\n");
    let loaded = load_with(&warm, "g.toml", &registry(), &[]).unwrap();
    assert_eq!(loaded.source.hosts["a"].standby_mode, StandbyMode::Warm);

    let cases = [
        (
            "[hosts.a]\nstandby = \"s\"\nstandby_mode = \"cold\"\n[hosts.b]\n[hosts.s]\n",
            "g.toml:3:16: hosts.a (line 1): standby_mode must be \"hot\" or \"warm\", not \"cold\"",
        ),
        (
            "[hosts.a]\nstandby = \"x\"\n[hosts.b]\n",
            "g.toml:2:11: hosts.a (line 1): standby \"x\" is not a declared host (declared hosts: a, b)",
        ),
        (
            "[hosts.a]\nstandby = \"a\"\n[hosts.b]\n",
            "is the host itself",
        ),
        (
            "[hosts.a]\nstandby = \"b\"\n[hosts.b]\n",
            "hosts.a (line 1): standby \"b\" runs nodes of its own (node 'sink')",
        ),
        (
            "[hosts.a]\nstandby = \"s\"\n[hosts.b]\nstandby = \"s\"\n[hosts.s]\n",
            "hosts.b (line 3): standby \"s\" already stands by for host a",
        ),
        (
            "[hosts.a]\nstandby = \"s\"\n[hosts.b]\n[hosts.s]\nstandby = \"t\"\n[hosts.t]\n",
            "standby \"s\" has a standby of its own (line 4)",
        ),
    ];
    for (hosts, expected) in cases {
        let err = error_of(&with_hosts(hosts));
        assert!(err.contains(expected), "{err}\nexpected: {expected}");
    }
}

const RATES: &str = r#"
connect = ["src -> dec -> tune", "tune.out -> sink.in"]

[[node]]
name = "src"
type = "count"
params = { items = 100, rate = 480000 }

[[node]]
name = "dec"
type = "tap"
params = { decimation = 10, expect = 480000 }

[[node]]
name = "tune"
type = "tap"
params = { expect = 48000 }

[[node]]
name = "sink"
type = "drain"
"#;

#[test]
fn rates_follow_the_stream_through_rate_changes() {
    let loaded = load_with(RATES, "g.toml", &registry(), &[]).unwrap();
    let rate = |n: &str| loaded.source.rates.get(n).map(|r| (r.hz, r.origin.clone()));
    assert_eq!(rate("src"), Some((480_000.0, "src".into())));
    assert_eq!(rate("dec"), Some((48_000.0, "dec".into())));
    assert_eq!(rate("tune"), Some((48_000.0, "dec".into())));
    let dot = loaded.to_dot();
    assert!(dot.contains("out → in\\nf32, 480 kHz"), "{dot}");
    assert!(
        dot.contains("\"tune\" -> \"sink\" [label=\"out → in\\nf32, 48 kHz\"]"),
        "{dot}"
    );
    let report = loaded.graph.run_stepped().unwrap();
    assert_eq!(report.node("sink").unwrap().items_in, 100);
}

#[test]
fn a_rate_that_disagrees_with_the_stream_names_both_nodes() {
    let text = RATES.replace(
        "params = { expect = 48000 }",
        "params = { sample_rate = 44100 }",
    );
    assert_eq!(
        error_of(&text),
        "g.toml:17:26: node 'tune': parameter 'sample_rate' = 44.1 kHz disagrees with the stream's rate, 48 kHz (set by 'dec', line 10): leave it out to follow the stream"
    );
    // Where nothing upstream knows the rate, the one given is the stream's from there on.
    let unknown = text
        .replace(", rate = 480000", "")
        .replace(", expect = 480000", "");
    let loaded = load_with(&unknown, "g.toml", &registry(), &[]).unwrap();
    assert_eq!(
        loaded.source.rates.get("tune").map(|r| r.hz),
        Some(44_100.0)
    );
    assert!(!loaded.source.rates.contains_key("dec"));
}

#[test]
fn connect_chains_name_ports_only_where_a_node_has_several() {
    let bad = RATES.replace("\"src -> dec -> tune\"", "\"src -> dec.in -> tune\"");
    assert_contains(
        &error_of(&bad),
        "g.toml:2:12: connect \"src -> dec.in -> tune\": 'dec.in' is in the middle of the chain, where it is both an input and an output: write the node alone, or split the chain"
    );
    let lone = RATES.replace("\"src -> dec -> tune\"", "\"src\"");
    assert!(error_of(&lone).contains("a connection is two or more ends joined by '->'"));
    let sink_out = RATES.replace("\"tune.out -> sink.in\"", "\"tune -> sink -> src\"");
    assert!(
        error_of(&sink_out).contains("node 'sink' has no output"),
        "{}",
        error_of(&sink_out)
    );
}

#[test]
fn connect_after_a_table_is_explained() {
    let late = format!("{GOOD}\nconnect = [\"src -> sink\"]\n")
        .replace("[[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n", "");
    let e = error_of(&late);
    assert!(
        e.contains("write `connect` before the first [[node]]"),
        "{e}"
    );
}

fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{text}\ndoes not contain\n{part}");
}

#[test]
fn a_number_the_parser_refuses_names_its_node() {
    let text = GOOD.replace("items = 1000", "items = 99999999999999999999");
    assert_eq!(
        error_of(&text),
        "g.toml:5:20: node 'src': number too large to fit in target type (a whole number in a graph file is at most 2^63 − 1)"
    );
}

#[test]
fn a_node_built_in_code_has_the_files_checks_and_words() {
    let node = |kind: &str, values: &[(&str, Value)]| {
        let params = Params::from_values(values.iter().map(|(k, v)| (k.to_string(), v.clone())));
        build_node(&registry(), "src", kind, params)
    };
    assert!(node("count", &[("items", Value::Integer(10))]).is_ok());
    let unknown = node("cuont", &[]).err().unwrap();
    assert_eq!(unknown[0].kind, MistakeKind::UnknownBlock);
    assert_eq!(
        unknown[0].message,
        "node 'src': unknown block type 'cuont' (did you mean count?)"
    );
    let misspelt = node("count", &[("itme", Value::Integer(10))])
        .err()
        .unwrap();
    let text = GOOD.replace("items = 1000", "itme = 1000");
    let in_file = error_of(&text);
    let messages: Vec<&str> = misspelt.iter().map(|m| m.message.as_str()).collect();
    // The file's lines are `g.toml:LINE:COLUMN: ` and then the same words.
    for (line, message) in in_file.lines().zip(&messages) {
        assert!(line.ends_with(message), "{line} / {message}");
    }
    assert_eq!(misspelt.len(), 2);
    assert_eq!(misspelt[0].kind, MistakeKind::UnknownParam);
    assert_eq!(misspelt[1].kind, MistakeKind::BadParam);
    assert_eq!(misspelt[1].param.as_deref(), Some("items"));
}

#[test]
fn a_graph_built_in_code_follows_rates_as_its_file_does() {
    let node = |name: &str, kind: &str, values: &[(&str, Value)]| CodeNode {
        name: name.into(),
        kind: kind.into(),
        params: Params::from_values(values.iter().map(|(k, v)| (k.to_string(), v.clone()))),
    };
    // The nodes of RATES, with "obj" standing for a node added as an object (no declared
    // rate, so not among the nodes): rates stop there.
    let mut nodes = vec![
        node(
            "src",
            "count",
            &[("items", 1000.into()), ("rate", 480000.into())],
        ),
        node("dec", "tap", &[("decimation", 10.into())]),
        node("tune", "tap", &[("expect", 48000.into())]),
        node("after", "tap", &[("expect", 48000.into())]),
        node("sink", "drain", &[]),
    ];
    let edge = |a: &str, port: Option<&str>, b: &str| (a.into(), port.map(String::from), b.into());
    let edges = vec![
        edge("src", Some("out"), "dec"),
        edge("dec", None, "tune"),
        edge("tune", None, "obj"),
        edge("obj", None, "after"),
        edge("after", None, "sink"),
    ];
    // Before rates are followed, "tune" cannot be built: it waits for its stream's rate.
    let waiting = build_node(&registry(), "tune", "tap", nodes[2].params.clone())
        .err()
        .unwrap();
    assert_eq!(waiting[0].kind, MistakeKind::RateUnknown);
    let (rates, mistakes) = follow_rates(&registry(), &mut nodes, &edges);
    assert!(mistakes.is_empty(), "{mistakes:?}");
    let rate = |n: &str| rates.get(n).map(|r| (r.hz, r.origin.clone()));
    assert_eq!(rate("dec"), Some((48_000.0, "dec".into())));
    assert_eq!(rate("tune"), Some((48_000.0, "dec".into())));
    assert_eq!(rate("after"), None);
    assert_eq!(
        nodes[2].params.value("sample_rate"),
        Some(&Value::Float(48_000.0))
    );
    assert_eq!(nodes[3].params.value("sample_rate"), None);
    assert!(build_node(&registry(), "tune", "tap", nodes[2].params.clone()).is_ok());

    // A given rate that disagrees: the file's words, without the file's lines.
    nodes[2].params = Params::from_values([("sample_rate".to_string(), 44100.into())]);
    let (_, mistakes) = follow_rates(&registry(), &mut nodes, &edges);
    assert_eq!(mistakes.len(), 1);
    let (node, mistake) = &mistakes[0];
    assert_eq!(node, "tune");
    assert_eq!(mistake.kind, MistakeKind::BadParam);
    assert_eq!(mistake.param.as_deref(), Some("sample_rate"));
    assert_eq!(
        mistake.message,
        "node 'tune': parameter 'sample_rate' = 44.1 kHz disagrees with the stream's rate, 48 kHz (set by 'dec'): leave it out to follow the stream"
    );
}

const BRANCH: &str = r#"
[[node]]
name = "pass"
type = "tap"

[[node]]
name = "sink"
type = "drain"

[[edge]]
from = "pass.out"
to = "sink.in"

[[feed]]
from = "main.out"
to = "pass.in"
"#;

#[test]
fn a_branch_file_names_its_feeds_and_its_fed_inputs_count_as_connected() {
    let branch = load_branch(BRANCH, "b.toml", &registry()).unwrap();
    assert_eq!(
        branch.feeds,
        [Feed {
            from: "main.out".into(),
            to: "pass.in".into()
        }]
    );
    assert!(branch.graph.node_id("pass").is_some());
}

#[test]
fn feeds_are_refused_in_a_graph_file_and_checked_in_a_branch_file() {
    let e = error_of(&format!(
        "{GOOD}\n[[feed]]\nfrom = \"a.out\"\nto = \"sink.in\"\n"
    ));
    assert!(
        e.starts_with("g.toml:15:1: a [[feed]] belongs in a branch file"),
        "{e}"
    );
    let load = |text: &str| match load_branch(text, "b.toml", &registry()) {
        Ok(_) => panic!("loaded"),
        Err(e) => e.to_string(),
    };
    let e = load(&BRANCH.replace("to = \"pass.in\"", "to = \"pass.nope\""));
    assert!(
        e.contains(
            "b.toml:16:6: feed to 'pass.nope': node 'pass' has no input 'nope' (inputs: in)"
        ),
        "{e}"
    );
    let e = load(&BRANCH.replace("to = \"pass.in\"", "to = \"ghost.in\""));
    assert!(
        e.contains("feed to 'ghost.in': this file declares no node 'ghost'"),
        "{e}"
    );
    let e = load(&BRANCH.replace("from = \"main.out\"", "from = \"main\""));
    assert!(
        e.contains(
            "b.toml:15:8: feed from 'main': name an output of the running graph as NODE.PORT"
        ),
        "{e}"
    );
    // Without its feed, the input is unconnected, as in any graph file.
    let e = load(&BRANCH.replace("[[feed]]\nfrom = \"main.out\"\nto = \"pass.in\"\n", ""));
    assert!(e.contains("input port 'in' is not connected"), "{e}");
}

/// A file name pattern with declared labels is compared per label: with a file another node
/// reads or writes, with another pattern, and with itself (a label given twice).
#[test]
fn a_pattern_is_compared_per_label() {
    let mut reg = registry();
    reg.add(
        BlockType::new("drain_each", Family::Sinks, "consumes, a file per label")
            .input("in", ItemDecl::fixed("f32"))
            .param(Param::writes_pattern("path", "files").labelled_by("labels", "channels"))
            .param(Param::integer("channels", "how many").default(2))
            .param(Param::integers("labels", "their labels").derived("0, 1, …"))
            .build(|_| Ok(Box::new(Drain::<f32>(Default::default())))),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let graph = |each: &str, sink: &str| {
        format!(
            "[[node]]\nname = \"src\"\ntype = \"count\"\nparams = {{ items = 10 }}\n\
             [[node]]\nname = \"each\"\ntype = \"drain_each\"\nparams = {{ {each} }}\n\
             [[node]]\nname = \"sink\"\ntype = \"drain\"\nparams = {{ {sink} }}\n\
             [[edge]]\nfrom = \"src.out\"\nto = \"each.in\"\n\
             [[edge]]\nfrom = \"src.out\"\nto = \"sink.in\"\n"
        )
    };
    let error = |text: &str| match load_str(text, "g.toml", &reg) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    };
    // Labels 0 and 1 by default: ch001 is the pattern's.
    let e = error(&graph(
        &format!("path = \"{d}/ch{{}}.wav\""),
        &format!("path = \"{d}/./ch001.wav\""),
    ))
    .unwrap();
    assert!(
        e.contains(&format!(
            "node 'each': writes {d}/ch001.wav, which node 'sink' writes"
        )),
        "{e}"
    );
    // Other labels, another directory, another name: no collision.
    for (each, sink) in [
        (
            format!("path = \"{d}/ch{{}}.wav\", labels = [5, 7]"),
            format!("path = \"{d}/ch001.wav\""),
        ),
        (
            format!("path = \"{d}/ch{{}}.wav\""),
            format!("path = \"{d}/sub/ch001.wav\""),
        ),
        (
            format!("path = \"{d}/ch{{}}.wav\""),
            format!("path = \"{d}/ch1.wav\""),
        ),
    ] {
        assert_eq!(error(&graph(&each, &sink)), None, "{each} / {sink}");
    }
    let e = error(&graph(
        &format!("path = \"{d}/ch{{}}.wav\", channels = 12"),
        &format!("path = \"{d}/ch011.wav\""),
    ))
    .unwrap();
    assert!(e.contains("ch011.wav, which node 'sink' writes"), "{e}");
    // A label given twice names one file twice.
    let e = error(&graph(
        &format!("path = \"{d}/ch{{}}.wav\", labels = [3, 4, 3]"),
        &format!("path = \"{d}/x.wav\""),
    ))
    .unwrap();
    assert!(
        e.contains(&format!(
            "writes {d}/ch003.wav, which the same node also writes"
        )),
        "{e}"
    );
    // Two patterns that share a label in one directory.
    let twice = graph(
        &format!("path = \"{d}/ch{{}}.wav\", labels = [1, 2]"),
        &format!("path = \"{d}/x.wav\""),
    )
    .replace(
        "[[edge]]\nfrom = \"src.out\"\nto = \"each.in\"",
        "[[node]]\nname = \"more\"\ntype = \"drain_each\"\nparams = { path = \"DIR/ch{}.wav\", labels = [2, 9] }\n[[edge]]\nfrom = \"src.out\"\nto = \"each.in\"\n[[edge]]\nfrom = \"src.out\"\nto = \"more.in\"",
    )
    .replace("DIR", &d.to_string());
    let e = error(&twice).unwrap();
    assert!(
        e.contains(&format!(
            "node 'each': writes {d}/ch002.wav, which node 'more' writes"
        )),
        "{e}"
    );
}
