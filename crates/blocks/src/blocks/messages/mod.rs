//! Message and PDU blocks: sources and sinks of messages, the bridges between tagged streams
//! and PDUs, burst detection, PDU processing, and a message that sets another node's parameter.

pub mod burst_detector;
pub mod debug;
pub mod pdu_demod;
pub mod pdu_file_sink;
pub mod pdu_meta;
pub mod pdu_to_stream;
pub mod stream_to_pdu;
pub mod stream_to_tagged;
pub mod strobe;
pub mod to_param;

pub use burst_detector::{BurstDetector, BURST_END, BURST_ITEM, BURST_START};
pub use debug::{MessageDebug, MessageLog};
pub use pdu_demod::PduFmDemod;
pub use pdu_file_sink::PduFileSink;
pub use pdu_meta::{AddSystemTime, PduSet, TimeDelta};
pub use pdu_to_stream::PduToTaggedStream;
pub use stream_to_pdu::TaggedStreamToPdu;
pub use stream_to_tagged::StreamToTaggedStream;
pub use strobe::MessageStrobe;
pub use to_param::MessageToParam;

use num_complex::Complex32;
use sluice_runtime::{Item, Uniform};

/// Items that a PDU's vector can hold: the stream item types with a PMT uniform vector.
pub trait PduItem: Item {
    /// GNU Radio's element name (`c32`, `f32`, `u8`).
    const NAME: &'static str;
    /// `items` as a uniform vector.
    fn to_uniform(items: &[Self]) -> Uniform;
    /// The elements of `u` if they are of this type.
    fn from_uniform(u: &Uniform) -> Option<&[Self]>;
}

impl PduItem for Complex32 {
    const NAME: &'static str = "c32";
    fn to_uniform(items: &[Self]) -> Uniform {
        Uniform::C32(items.into())
    }
    fn from_uniform(u: &Uniform) -> Option<&[Self]> {
        match u {
            Uniform::C32(v) => Some(v),
            _ => None,
        }
    }
}

impl PduItem for f32 {
    const NAME: &'static str = "f32";
    fn to_uniform(items: &[Self]) -> Uniform {
        Uniform::F32(items.into())
    }
    fn from_uniform(u: &Uniform) -> Option<&[Self]> {
        match u {
            Uniform::F32(v) => Some(v),
            _ => None,
        }
    }
}

impl PduItem for u8 {
    const NAME: &'static str = "u8";
    fn to_uniform(items: &[Self]) -> Uniform {
        Uniform::U8(items.into())
    }
    fn from_uniform(u: &Uniform) -> Option<&[Self]> {
        match u {
            Uniform::U8(v) => Some(v),
            _ => None,
        }
    }
}

/// GNU Radio's default length tag key for tagged streams.
pub const PACKET_LEN: &str = "packet_len";
