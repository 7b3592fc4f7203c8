//! The `wav_files` block: one WAV file per channel of a vector stream.

use crate::blocks::WavFiles;
use sluice_graph::{BlockType, Family, ItemDecl, Param, ParamError, Params, PortDecl, Vlen};
use sluice_runtime::Node;

fn build(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let pattern = p.str("path")?;
    let channels = p.u64_or("channels", 1)?;
    if !(1..=65_536).contains(&channels) {
        return Err(ParamError::new(
            "channels",
            format!("must be between 1 and 65536, not {channels}"),
        ));
    }
    let labels: Vec<u64> = match p.opt_f64_list("labels")? {
        None => (0..channels).collect(),
        Some(list) => {
            if list.len() as u64 != channels
                || list.iter().any(|&v| v < 0.0 || v.fract() != 0.0 || v > 1e9)
            {
                return Err(ParamError::new(
                    "labels",
                    format!("must be {channels} whole numbers (one per channel), not {list:?}"),
                ));
            }
            list.iter().map(|&v| v as u64).collect()
        }
    };
    let rate = p.u64("sample_rate")?;
    if rate == 0 || rate > u64::from(u32::MAX) {
        return Err(ParamError::new(
            "sample_rate",
            format!("must be between 1 and {} Hz, not {rate}", u32::MAX),
        ));
    }
    let format = super::wav_format(p)?;
    let beyond = super::beyond_4gib(p)?;
    let sink = WavFiles::create(&pattern, &labels, rate as u32, format)
        .map_err(|e| ParamError::new("path", e.to_string()))?
        .beyond_4gib(beyond);
    Ok(Box::new(sink))
}

/// The block types of this module.
pub(super) fn block_types() -> Vec<BlockType> {
    vec![BlockType::new(
        "wav_files",
        Family::Files,
        "Writes each channel of a vector stream to a WAV file of its own (one node for all channels).",
    )
    .port(PortDecl::input("in", ItemDecl::fixed("f32")).vlen(Vlen::param("channels")))
    .param(
        Param::writes_pattern(
            "path",
            "file name pattern; its {} becomes the channel's label, zero-padded to 3 digits",
        )
        .labelled_by("labels", "channels"),
    )
    .param(Param::integer("channels", "channels per vector item (one file each)").default(1))
    .param(
        Param::integers("labels", "one whole number per channel, in vector order, for the file names")
            .derived("0, 1, …"),
    )
    .param(Param::integer("sample_rate", "sample rate").follows_stream())
    .params(super::wav_sink_params())
    .example(r#"path = "amps_ch{}.wav", channels = 3, labels = [1, 2, 333], sample_rate = 12000"#)
    .build(build)]
}
