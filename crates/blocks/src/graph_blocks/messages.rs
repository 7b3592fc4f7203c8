//! Message and PDU blocks as graph-file block types (family `messages`): message sources and
//! sinks, tagged streams and PDUs, bursts, PDU metadata and DSP, and parameters set by
//! messages.

use super::common::node_err;
use crate::blocks::messages::{
    AddSystemTime, BurstDetector, MessageDebug, MessageStrobe, MessageToParam, PduFileSink,
    PduFmDemod, PduItem, PduSet, PduToTaggedStream, StreamToTaggedStream, TaggedStreamToPdu,
    TimeDelta, PACKET_LEN,
};
use num_complex::Complex32;
use sluice_graph::{BlockType, Family, ItemDecl, Param, ParamDecl, ParamError, Params, PortDecl};
use sluice_runtime::{control, MessageKind, Node, Pdu, TagValue, Uniform};
use std::path::PathBuf;
use std::time::Duration;

fn param_pdu_item() -> ParamDecl {
    Param::choice(
        "item",
        &["c32", "f32", "u8"],
        "sample type of the PDUs: c32 (complex f32), f32, u8",
    )
    .default("c32")
}

fn param_length_tag() -> ParamDecl {
    Param::text(
        "length_tag",
        "the tag that gives each packet's length on its first item",
    )
    .default(PACKET_LEN)
}

/// Builds a node generic over the PDU item types.
macro_rules! for_pdu_item {
    ($p:expr, $T:ident => $make:expr) => {{
        let node: Box<dyn Node> = match $p.str("item")?.as_str() {
            "f32" => {
                type $T = f32;
                Box::new($make)
            }
            "u8" => {
                type $T = u8;
                Box::new($make)
            }
            _ => {
                type $T = Complex32;
                Box::new($make)
            }
        };
        Ok(node)
    }};
}

/// A TOML value as a message: numbers, text (a symbol), booleans, lists (tuples) and tables
/// (dicts, keys as symbols).
fn message_of(v: &toml::Value) -> TagValue {
    match v {
        toml::Value::Integer(i) => TagValue::I64(*i),
        toml::Value::Float(x) => TagValue::F64(*x),
        toml::Value::Boolean(b) => TagValue::Bool(*b),
        toml::Value::String(s) => TagValue::Str(s.as_str().into()),
        toml::Value::Array(items) => TagValue::Tuple(items.iter().map(message_of).collect()),
        toml::Value::Table(t) => TagValue::Dict(
            t.iter()
                .map(|(k, v)| (TagValue::Str(k.as_str().into()), message_of(v)))
                .collect(),
        ),
        toml::Value::Datetime(d) => TagValue::Str(d.to_string().into()),
    }
}

/// The PDU of `message_strobe`: `items` zeros of `item`, metadata `meta`.
fn strobe_pdu(p: &mut Params) -> Result<TagValue, ParamError> {
    let items = p.u64_or("pdu_items", 64)? as usize;
    let data = match p.str("item")?.as_str() {
        "f32" => Uniform::F32(vec![0.0; items].into()),
        "u8" => Uniform::U8(vec![0; items].into()),
        _ => Uniform::C32(vec![Complex32::default(); items].into()),
    };
    let meta = match p.value("meta").map(message_of) {
        Some(TagValue::Dict(entries)) => entries,
        _ => Vec::new(),
    };
    Ok(Pdu { meta, data }.into_message())
}

fn message_strobe(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let period = p.f64_or("period", 1.0)?;
    if !(period.is_finite() && period >= 0.0) {
        return Err(ParamError::new(
            "period",
            format!("must be 0 s or more, not {period}"),
        ));
    }
    let count = p.u64_or("count", 0)?;
    let (message, kind) = match p.str("kind")?.as_str() {
        "pdu" => (strobe_pdu(p)?, MessageKind::Pdu),
        _ => {
            let text = p.str("message")?;
            (control::parse_value(&text), MessageKind::Any)
        }
    };
    Ok(Box::new(MessageStrobe::with_kind(
        message,
        Duration::from_secs_f64(period),
        (count > 0).then_some(count),
        kind,
    )))
}

fn burst_detector(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let length = p.str("length_tag")?;
    let node = BurstDetector::new(
        p.f64("threshold_db")?,
        p.f64_or("hysteresis_db", 3.0)?,
        p.u64_or("window", 32)? as usize,
        p.u64_or("holdoff", 64)?,
        p.u64_or("max_len", 65536)?,
        (!length.is_empty()).then_some(length.as_str()),
        p.bool_or("only_bursts", false)?,
    )
    .map_err(node_err("threshold_db"))?;
    Ok(Box::new(node))
}

fn tagged_stream_to_pdu(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let key = p.str("length_tag")?;
    let max = p.u64_or("max_items", 16384)?;
    if !(1..=1 << 24).contains(&max) {
        return Err(ParamError::new(
            "max_items",
            format!("must be between 1 and 16777216, not {max}"),
        ));
    }
    for_pdu_item!(p, T => TaggedStreamToPdu::<T>::new(&key, max as usize))
}

fn pdu_to_tagged_stream(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let key = p.str("length_tag")?;
    for_pdu_item!(p, T => PduToTaggedStream::<T>::new(&key))
}

fn stream_to_tagged_stream(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let key = p.str("length_tag")?;
    let len = p.u64("packet_len")?;
    fn make<T: PduItem>(len: u64, key: &str) -> Result<StreamToTaggedStream<T>, ParamError> {
        StreamToTaggedStream::new(len, key).map_err(node_err("packet_len"))
    }
    for_pdu_item!(p, T => make::<T>(len, &key)?)
}

fn pdu_file_sink(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let path = PathBuf::from(p.str("path")?);
    let data = match p.opt_str("data_path")? {
        Some(d) => PathBuf::from(d),
        None => {
            let mut d = path.clone().into_os_string();
            d.push(".data");
            PathBuf::from(d)
        }
    };
    Ok(Box::new(PduFileSink::new(&path, &data)))
}

fn message_to_param(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let scale = p.f64_or("scale", 1.0)?;
    if !scale.is_finite() {
        return Err(ParamError::new("scale", "must be a finite number"));
    }
    let key = p.opt_str("key")?;
    let (node, _) = MessageToParam::new(&p.str("node")?, &p.str("param")?, key.as_deref(), scale);
    Ok(match p.opt_f64("accumulate_from")? {
        Some(start) => Box::new(node.accumulate(start)),
        None => Box::new(node),
    })
}

pub(super) fn block_types() -> Vec<BlockType> {
    let pdus_in = || PortDecl::message_input("pdus", "pdu");
    let pdus_out = || PortDecl::message_output("pdus", "pdu");
    vec![
        BlockType::new("message_strobe", Family::Messages, "Sends a message every `period` seconds (the first at once), `count` times (0: until stopped); kind = \"pdu\" sends a PDU of `pdu_items` zeros with metadata `meta`.")
            .gnuradio(&["message_strobe"])
            .port(PortDecl::output("out", ItemDecl::Mapped { param: "kind".into(), cases: vec![("message".into(), "message".into()), ("pdu".into(), "pdu".into())] }))
            .param(Param::choice("kind", &["message", "pdu"], "what it sends: `message` or a PDU").default("message"))
            .param(Param::text("message", "the message, as `sluice ctl set` reads values: a whole number, a number, true/false, or text (a symbol)").default("TEST"))
            .param(param_pdu_item())
            .param(Param::integer("pdu_items", "samples in the PDU (kind = \"pdu\")").default(64))
            .param(Param::table("meta", "the PDU's metadata (kind = \"pdu\"): { key = value, … }").derived("none"))
            .param(Param::number("period", "seconds between messages").unit("s").default(1.0))
            .param(Param::integer("count", "messages to send; 0 sends until the graph stops").default(0))
            .example(r#"message = "hello", period = 0.5, count = 4"#)
            .build(message_strobe),
        BlockType::new("message_debug", Family::Messages, "Prints every message on one line (PMT notation, control characters escaped) and counts them (the node's items in).")
            .gnuradio(&["message_debug"])
            .port(PortDecl::message_input("in", "message"))
            .param(Param::bool("print", "print each message to standard output").default(true))
            .example("print = false")
            .build(|p| Ok(Box::new(MessageDebug::new(p.bool_or("print", true)?, false).0))),
        BlockType::new("stream_to_tagged_stream", Family::Messages, "Marks a stream as packets of `packet_len` items: a length tag on every packet's first item.")
            .gnuradio(&["stream_to_tagged_stream"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_pdu_item())
            .param(Param::integer("packet_len", "items per packet"))
            .param(param_length_tag())
            .example(r#"item = "f32", packet_len = 64"#)
            .build(stream_to_tagged_stream),
        BlockType::new("tagged_stream_to_pdu", Family::Messages, "Turns each packet of a tagged stream (a length tag on its first item) into a PDU: its items, and its other tags as metadata.")
            .gnuradio(&["tagged_stream_to_pdu"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(pdus_out())
            .param(param_pdu_item())
            .param(param_length_tag())
            .param(Param::integer("max_items", "the longest packet; the input's queue holds at least twice this").default(16384))
            .example(r#"item = "c32""#)
            .build(tagged_stream_to_pdu),
        BlockType::new("pdu_to_tagged_stream", Family::Messages, "Writes each PDU's samples to a stream, its length tag and metadata as tags on its first item.")
            .gnuradio(&["pdu_to_tagged_stream"])
            .port(pdus_in())
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_pdu_item())
            .param(param_length_tag())
            .example(r#"item = "f32""#)
            .build(pdu_to_tagged_stream),
        BlockType::new("burst_detector", Family::Messages, "Finds bursts by power (moving average over `window` samples above `threshold_db`, ending `hysteresis_db` lower after `holdoff` samples) and tags them burst_start / burst_end (their power in dB) and with the length tag; `only_bursts` passes the bursts' items alone, one packet each.")
            .port(PortDecl::input("in", ItemDecl::fixed("c32")))
            .port(PortDecl::output("out", ItemDecl::fixed("c32")))
            .param(Param::number("threshold_db", "power (dB of |x|²) that opens a burst").unit("dB"))
            .param(Param::number("hysteresis_db", "a burst closes this much below the threshold").unit("dB").default(3.0))
            .param(Param::integer("window", "samples in the power average").default(32))
            .param(Param::integer("holdoff", "samples the power must stay low before a burst closes").default(64))
            .param(Param::integer("max_len", "the longest burst: a longer one is cut here").default(65536))
            .param(Param::text("length_tag", "the length tag on each burst's first item (empty: none)").default(PACKET_LEN))
            .param(Param::bool("only_bursts", "pass only the bursts' items (a tagged stream of one packet per burst)").default(false))
            .example(r#"threshold_db = -20.0, only_bursts = true"#)
            .build(burst_detector),
        BlockType::new("pdu_fm_demod", Family::Messages, "FM-demodulates c32 PDUs into f32 PDUs (the phase step per sample times `gain`; fs/2π gives Hz) and adds their mean as metadata fm_mean.")
            .gnuradio(&["quadrature_demod_cf"])
            .port(pdus_in())
            .port(pdus_out())
            .param(Param::number("gain", "output per radian of phase step").default(1.0))
            .example("gain = 7639.4")
            .build(|p| Ok(Box::new(PduFmDemod::new(p.f32("gain")?).map_err(node_err("gain"))?))),
        BlockType::new("pdu_set", Family::Messages, "Sets metadata `key` to `value` in every PDU.")
            .gnuradio(&["pdu_set"])
            .port(pdus_in())
            .port(pdus_out())
            .param(Param::text("key", "the metadata key"))
            .param(Param::text("value", "the value, as `sluice ctl set` reads values"))
            .example(r#"key = "channel", value = "7""#)
            .build(|p| Ok(Box::new(PduSet::new(&p.str("key")?, control::parse_value(&p.str("value")?))))),
        BlockType::new("add_system_time", Family::Messages, "Stamps every PDU with the wall clock (seconds since 1970) under `key`.")
            .gnuradio(&["add_system_time"])
            .port(pdus_in())
            .port(pdus_out())
            .param(Param::text("key", "the metadata key").default("system_time"))
            .example(r#"key = "system_time""#)
            .build(|p| Ok(Box::new(AddSystemTime::new(&p.str("key")?)))),
        BlockType::new("time_delta", Family::Messages, "Adds to every PDU the milliseconds since its `time_key` stamp (add_system_time's) as `delta_key`.")
            .gnuradio(&["time_delta"])
            .port(pdus_in())
            .port(pdus_out())
            .param(Param::text("delta_key", "the metadata key of the delay").default("time_delta_ms"))
            .param(Param::text("time_key", "the metadata key of the stamp").default("system_time"))
            .example(r#"time_key = "system_time""#)
            .build(|p| Ok(Box::new(TimeDelta::new(&p.str("delta_key")?, &p.str("time_key")?).0))),
        BlockType::new("message_to_param", Family::Messages, "Sets run-time parameter `param` of node `node` from each message (the message, or the value under `key` of a PDU's metadata or a dict, times `scale`), as `sluice ctl set` does: at an item offset the target tags set:<param>.")
            .port(PortDecl::message_input("in", "message"))
            .param(Param::text("node", "the node whose parameter it sets"))
            .param(Param::text("param", "the run-time parameter"))
            .param(Param::text("key", "take the value under this metadata key").derived("the message itself"))
            .param(Param::number("scale", "multiplies numbers").default(1.0))
            .param(Param::number("accumulate_from", "each message moves the parameter by its value, from this start (a tracking loop)").derived("each message sets it"))
            .example(r#"node = "rot", param = "frequency", key = "fm_mean", scale = -1.0"#)
            .build(message_to_param),
        BlockType::new("pdu_file_sink", Family::Messages, "Writes one JSON line per PDU to `path` (pdu, type, items, offset, meta) and its samples, little-endian, at that byte offset of `data_path`.")
            .port(pdus_in())
            .param(Param::writes("path", "the JSON lines file"))
            .param(Param::writes("data_path", "the raw samples file").derived("path + \".data\""))
            .example(r#"path = "out/bursts.jsonl""#)
            .build(pdu_file_sink),
    ]
}
