//! Stream plumbing: delay, skip head, interleave and deinterleave, standard input and output,
//! and the real-time throttle.

use super::common::{node_err, positive};
use super::{param_item, param_vlen, vectors, vlen, with_item, ForItem};
use crate::blocks::{
    Deinterleave, Delay, FdSink, FdSource, Interleave, RtMode, RtThrottle, SkipHead,
};
use sluice_graph::{
    BlockType, Family, ItemDecl, Param, ParamDecl, ParamError, Params, PortDecl, Vlen,
};
use sluice_runtime::{Item, Node};

fn param_items() -> ParamDecl {
    Param::integer("items", "number of items")
}

fn param_streams() -> ParamDecl {
    Param::integer("streams", "number of streams (1-65536)")
}

struct DelayB;
impl ForItem for DelayB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        Ok(Box::new(Delay::<T>::new(p.u64("items")?)))
    }
}

struct SkipB;
impl ForItem for SkipB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        Ok(Box::new(SkipHead::<T>::new(p.u64("items")?)))
    }
}

fn streams(p: &mut Params) -> Result<usize, ParamError> {
    let n = p.u64("streams")?;
    if !(1..=crate::blocks::interleave::MAX_STREAMS as u64).contains(&n) {
        return Err(ParamError::new(
            "streams",
            format!("must be between 1 and 65536, not {n}"),
        ));
    }
    Ok(n as usize)
}

struct InterleaveB;
impl ForItem for InterleaveB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let n = streams(p)?;
        Ok(Box::new(
            Interleave::<T>::new(n).map_err(node_err("streams"))?,
        ))
    }
}

struct DeinterleaveB;
impl ForItem for DeinterleaveB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let n = streams(p)?;
        Ok(Box::new(
            Deinterleave::<T>::new(n).map_err(node_err("streams"))?,
        ))
    }
}

struct StdinB;
impl ForItem for StdinB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let n = vlen(p)?;
        let realtime = p.bool_or("realtime", false)?;
        let source = FdSource::<T>::stdin(realtime).map_err(node_err("realtime"))?;
        Ok(vectors(Box::new(source), n))
    }
}

struct StdoutB;
impl ForItem for StdoutB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let n = vlen(p)?;
        Ok(vectors(
            Box::new(FdSink::<T>::stdout().map_err(node_err("vlen"))?),
            n,
        ))
    }
}

struct RtB;
impl ForItem for RtB {
    fn build<T: Item>(&self, p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        let rate = positive(p, "rate", 48000.0)?;
        let mode = match p.opt_str("mode")?.as_deref().unwrap_or("source") {
            "source" => RtMode::Source,
            "sink" => RtMode::Sink,
            other => {
                return Err(ParamError::new(
                    "mode",
                    format!("unknown mode '{other}' (use source or sink)"),
                ))
            }
        };
        let buffer = p.u64_or("buffer", (rate * 0.05).ceil() as u64)?;
        Ok(Box::new(
            RtThrottle::<T>::new(rate, mode, buffer).map_err(node_err("rate"))?,
        ))
    }
}

pub(super) fn block_types() -> Vec<BlockType> {
    vec![
        BlockType::new("delay", Family::Plumbing, "`items` zero items first, then the stream (tags move with their items).")
            .gnuradio(&["delay"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(param_items())
            .example(r#"item = "f32", items = 480"#)
            .build(|p| with_item(p, &DelayB)),
        BlockType::new("skip_head", Family::Plumbing, "Drops the first `items` items; their metadata tags (rx_rate, rx_freq, rx_time moved on) land on the first item passed.")
            .gnuradio(&["skiphead"])
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(param_items())
            .example(r#"item = "c32", items = 2048"#)
            .build(|p| with_item(p, &SkipB)),
        BlockType::new("interleave", Family::Plumbing, "Streams in0, in1, … into frames of one item from each (the channels = N layout); ends with the shortest.")
            .gnuradio(&["interleave"])
            .port(PortDecl::input("in", ItemDecl::item()).counted("streams"))
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("streams")))
            .param(param_item())
            .param(param_streams())
            .example(r#"item = "f32", streams = 2"#)
            .build(|p| with_item(p, &InterleaveB)),
        BlockType::new("deinterleave", Family::Plumbing, "Frames of `streams` items split into streams out0, out1, … (one per channel).")
            .gnuradio(&["deinterleave"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("streams")))
            .port(PortDecl::output("out", ItemDecl::item()).counted("streams"))
            .param(param_item())
            .param(param_streams())
            .example(r#"item = "f32", streams = 2"#)
            .build(|p| with_item(p, &DeinterleaveB)),
        BlockType::new("stdin_source", Family::Sources, "Reads raw little-endian items from standard input (`rtl_sdr - | sluice run g.toml`); with realtime, drops what the graph cannot take and tags each gap rt_overflow.")
            .gnuradio(&["file_descriptor_source"])
            .port(PortDecl::output("out", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .param(param_item())
            .param(param_vlen())
            .param(Param::bool("realtime", "never push back on the writer: drop items that find the queue full, count them, tag the next item rt_overflow = items lost").default(false))
            .example(r#"item = "u8", vlen = 2, realtime = true"#)
            .build(|p| with_item(p, &StdinB)),
        BlockType::new("stdout_sink", Family::Sinks, "Writes raw little-endian items to standard output (`sluice run g.toml | sox …`); a reader that goes away ends it.")
            .gnuradio(&["file_descriptor_sink"])
            .port(PortDecl::input("in", ItemDecl::item()).vlen(Vlen::param("vlen")))
            .param(param_item())
            .param(param_vlen())
            .example(r#"item = "f32""#)
            .build(|p| with_item(p, &StdoutB)),
        BlockType::new("rt_throttle", Family::Plumbing, "Paces a stream as a real-time device that cannot wait: as a source it drops what downstream cannot take in time (tag rt_overflow), as a sink it plays zeros for items upstream delivers late (tag rt_underflow).")
            .port(PortDecl::input("in", ItemDecl::item()))
            .port(PortDecl::output("out", ItemDecl::item()))
            .param(param_item())
            .param(Param::number("rate", "items per second").default(48000.0))
            .param(Param::text("mode", "source (overflow: drop) or sink (underflow: zeros)").derived("source"))
            .param(Param::integer("buffer", "the device's buffer in items: items that may wait (source) or run ahead (sink)").derived("50 ms"))
            .example(r#"item = "c32", rate = 2.048e6, mode = "source""#)
            .build(|p| with_item(p, &RtB)),
    ]
}
