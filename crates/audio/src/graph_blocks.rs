//! `jack_source` and `jack_sink` as graph-file block types; [`register`] adds them to a
//! [`Registry`].

use sluice_graph::{BlockType, ParamDoc, ParamError, Params, Registry};
use sluice_runtime::Node;

use crate::{JackPorts, JackSink, JackSource};

const SINK_PARAMS: &[ParamDoc] = &[
    ParamDoc {
        name: "client",
        default: "sluice-out",
        help: "JACK client name",
    },
    ParamDoc {
        name: "server",
        default: "the default server",
        help: "JACK server name",
    },
    ParamDoc {
        name: "channels",
        default: "2",
        help: "number of inputs (in0, in1, …) and JACK ports (out_1, …)",
    },
    ParamDoc {
        name: "connect",
        default: "none",
        help: "JACK ports to connect to, comma-separated, one per channel (e.g. system:playback_1,system:playback_2)",
    },
    ParamDoc {
        name: "buffer",
        default: "16384",
        help: "frames buffered per channel between the graph and the JACK callback",
    },
    ParamDoc {
        name: "prefill",
        default: "2048",
        help: "frames buffered before playback starts",
    },
];

const SOURCE_PARAMS: &[ParamDoc] = &[
    ParamDoc {
        name: "client",
        default: "sluice-in",
        help: "JACK client name",
    },
    SINK_PARAMS[1],
    ParamDoc {
        name: "channels",
        default: "2",
        help: "number of JACK ports (in_1, …) and outputs (out0, out1, …)",
    },
    ParamDoc {
        name: "connect",
        default: "none",
        help:
            "JACK ports to connect from, comma-separated, one per channel (e.g. system:capture_1)",
    },
    ParamDoc {
        name: "buffer",
        default: "65536",
        help: "frames buffered per channel between the JACK callback and the graph",
    },
    ParamDoc {
        name: "frames",
        default: "until stopped",
        help: "end after this many frames",
    },
];

fn ports(p: &mut Params, client: &str, buffer: u64) -> Result<JackPorts, ParamError> {
    let channels = p.u64_or("channels", 2)?;
    if channels == 0 || channels > crate::MAX_PORTS as u64 {
        return Err(ParamError::new(
            "channels",
            format!("must be between 1 and {}, not {channels}", crate::MAX_PORTS),
        ));
    }
    let connect: Vec<String> = p
        .opt_str("connect")?
        .map(|s| {
            s.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()
        })
        .unwrap_or_default();
    if connect.len() as u64 > channels {
        return Err(ParamError::new(
            "connect",
            format!("{} ports for {channels} channels", connect.len()),
        ));
    }
    Ok(JackPorts {
        client: p.opt_str("client")?.unwrap_or_else(|| client.to_string()),
        server: p.opt_str("server")?,
        channels: channels as usize,
        connect,
        buffer: p.u64_or("buffer", buffer)? as usize,
    })
}

fn build_sink(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let cfg = ports(p, "sluice-out", 16384)?;
    let prefill = p.u64_or("prefill", 2048)? as usize;
    let sink = JackSink::new(cfg, prefill).map_err(|e| ParamError::new("buffer", e.to_string()))?;
    Ok(Box::new(sink))
}

fn build_source(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let cfg = ports(p, "sluice-in", 65536)?;
    let frames = p.opt_u64("frames")?;
    let src = JackSource::new(cfg, frames).map_err(|e| ParamError::new("buffer", e.to_string()))?;
    Ok(Box::new(src))
}

/// Adds `jack_sink` and `jack_source` to `registry`.
pub fn register(registry: &mut Registry) {
    let types = [
        BlockType {
            name: "jack_sink",
            help: "Plays its f32 streams on JACK output ports; the callback never waits: it takes what is there, plays silence for the rest and counts underruns.",
            ports: "in0, in1, …: f32",
            params: SINK_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "speakers"
type = "jack_sink"
params = { channels = 2, connect = "system:playback_1,system:playback_2" }"#,
            build: build_sink,
            memory: None,
        },
        BlockType {
            name: "jack_source",
            help: "Records JACK input ports into f32 streams tagged with the server's sample rate; a period the graph has no room for is dropped, counted and tagged as a gap.",
            ports: "out0, out1, …: f32",
            params: SOURCE_PARAMS,
            files: &[],
            settable: &[],
            example: r#"[[node]]
name = "mics"
type = "jack_source"
params = { channels = 2, connect = "system:capture_1,system:capture_2" }"#,
            build: build_source,
            memory: None,
        },
    ];
    for t in types {
        registry
            .add(t)
            .expect("jack_sink and jack_source are registered once");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params_of(example: &str) -> Params {
        let doc: toml::Table = toml::from_str(example).expect("examples are TOML");
        let node = &doc["node"].as_array().expect("[[node]]")[0];
        let values = node
            .get("params")
            .and_then(|p| p.as_table())
            .map(|t| {
                t.iter()
                    .map(|(k, v)| (k.clone(), toml::Spanned::new(0..0, v.clone())))
                    .collect()
            })
            .unwrap_or_default();
        Params::new(values)
    }

    /// Building does not touch JACK (the client opens when the graph starts), so the examples
    /// build anywhere.
    #[test]
    fn the_examples_build_and_bad_parameters_are_named() {
        let mut registry = Registry::new();
        register(&mut registry);
        for b in registry.types() {
            let mut params = params_of(b.example);
            (b.build)(&mut params).unwrap_or_else(|e| panic!("{}: {e:?}", b.name));
            assert!(
                params.unused().is_empty(),
                "{}: {:?}",
                b.name,
                params.unused()
            );
        }
        let sink = registry.find("jack_sink").unwrap();
        let e = (sink.build)(&mut params_of(
            "[[node]]\nname = \"s\"\ntype = \"jack_sink\"\nparams = { channels = 1, connect = \"a:b,c:d\" }",
        ))
        .err()
        .unwrap();
        assert_eq!(e.param, "connect");
        assert!(e.message.contains("2 ports for 1 channels"), "{e:?}");
        let e = (sink.build)(&mut params_of(
            "[[node]]\nname = \"s\"\ntype = \"jack_sink\"\nparams = { channels = 0 }",
        ))
        .err()
        .unwrap();
        assert_eq!(e.param, "channels");
    }
}
