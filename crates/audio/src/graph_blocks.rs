//! `jack_source` and `jack_sink` as graph-file block types; [`register`] adds them to a
//! [`Registry`].

use sluice_graph::{
    BlockType, Family, ItemDecl, Param, ParamDecl, ParamError, Params, PortDecl, Registry,
};
use sluice_runtime::Node;

use crate::{JackPorts, JackSink, JackSource};

fn sink_params() -> Vec<ParamDecl> {
    vec![
        Param::text("client", "JACK client name").derived("sluice-out"),
        Param::text("server", "JACK server name").derived("the default server"),
        Param::integer("channels", "number of inputs (in0, in1, …) and JACK ports (out_1, …)").derived("2"),
        Param::text("connect", "JACK ports to connect to, comma-separated, one per channel (e.g. system:playback_1,system:playback_2)").derived("none"),
        Param::integer("buffer", "frames buffered per channel between the graph and the JACK callback").default(16384),
        Param::integer("prefill", "frames buffered before playback starts").default(2048),
    ]
}

fn source_params() -> Vec<ParamDecl> {
    [vec![
        Param::text("client", "JACK client name").derived("sluice-in"),
    ], sink_params()[1..=1].to_vec(), vec![
        Param::integer("channels", "number of JACK ports (in_1, …) and outputs (out0, out1, …)").derived("2"),
        Param::text("connect", "JACK ports to connect from, comma-separated, one per channel (e.g. system:capture_1)").derived("none"),
        Param::integer("buffer", "frames buffered per channel between the JACK callback and the graph").default(65536),
        Param::integer("frames", "end after this many frames").derived("until stopped"),
    ]].concat()
}

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
        BlockType::new("jack_sink", Family::Audio, "Plays its f32 streams on JACK output ports; the callback never waits: it takes what is there, plays silence for the rest and counts underruns.")
            .gnuradio(&["audio_sink"])
            .port(PortDecl::input("in", ItemDecl::fixed("f32")).counted("channels"))
            .params(sink_params())
            .example(r#"channels = 2, connect = "system:playback_1,system:playback_2""#)
            .build(build_sink),
        BlockType::new("jack_source", Family::Audio, "Records JACK input ports into f32 streams tagged with the server's sample rate; a period the graph has no room for is dropped, counted and tagged as a gap.")
            .gnuradio(&["audio_source"])
            .port(PortDecl::output("out", ItemDecl::fixed("f32")).counted("channels"))
            .params(source_params())
            .example(r#"channels = 2, connect = "system:capture_1,system:capture_2""#)
            .build(build_source),
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
            let mut params = b.example_params().unwrap();
            b.instantiate(&mut params)
                .unwrap_or_else(|e| panic!("{}: {e:?}", b.name));
            assert!(
                params.unused().is_empty(),
                "{}: {:?}",
                b.name,
                params.unused()
            );
        }
        let sink = registry.find("jack_sink").unwrap();
        let e = sink.instantiate(&mut params_of(
            "[[node]]\nname = \"s\"\ntype = \"jack_sink\"\nparams = { channels = 1, connect = \"a:b,c:d\" }",
        ))
        .err()
        .unwrap();
        assert_eq!(e.param, "connect");
        assert!(e.message.contains("2 ports for 1 channels"), "{e:?}");
        let e = sink
            .instantiate(&mut params_of(
                "[[node]]\nname = \"s\"\ntype = \"jack_sink\"\nparams = { channels = 0 }",
            ))
            .err()
            .unwrap();
        assert_eq!(e.param, "channels");
    }
}
