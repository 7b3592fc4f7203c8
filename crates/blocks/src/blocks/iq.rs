//! Interleaved integer IQ (as SDR front ends and SigMF files store it) to complex `f32` and
//! back: [`IqToComplex`] and [`ComplexToIq`], over the kernels of
//! [`kernels::iq_to_c32`](sluice_kernels::iq_to_c32).
//!
//! The integer side carries vectors of 2 values (I and Q) per sample: `u8[2]` for `cu8` and
//! `ci8`, `i16[2]` for `ci16`; a `file_source` or `stdin_source` with `item = "u8"`,
//! `vlen = 2` reads `rtl_sdr` output as it is. One vector is one sample, so the sample rate is
//! unchanged; tags move to the sample they were on.

use super::tag_map::move_tags;
use num_complex::Complex32;
use sluice_kernels::{c32_to_iq, iq_to_c32, IqFormat, IqValue};
use sluice_runtime::{Item, Node, NodeError, Ports, Tag, TagPolicy, Work, WorkIo};
use std::marker::PhantomData;

/// Interleaved integer IQ in (`V` = `u8` for `cu8`/`ci8`, `i16` for `ci16`), `Complex32` out.
#[derive(Debug)]
pub struct IqToComplex<V> {
    format: IqFormat,
    tags: Vec<Tag>,
    _values: PhantomData<V>,
}

impl<V: IqValue + Item> IqToComplex<V> {
    /// Reads `format`; its values must be `V` (`u8` for `cu8` and `ci8`, `i16` for `ci16`).
    pub fn new(format: IqFormat) -> Result<Self, NodeError> {
        check_value_type::<V>(format)?;
        Ok(IqToComplex {
            format,
            tags: Vec::new(),
            _values: PhantomData,
        })
    }
}

/// Whether `V` is the storage type of `format`.
fn check_value_type<V: 'static>(format: IqFormat) -> Result<(), NodeError> {
    let wide = std::any::TypeId::of::<V>() == std::any::TypeId::of::<i16>();
    if wide != (format == IqFormat::Ci16) {
        return Err(NodeError::msg(format!(
            "{} is stored as {}",
            format.name(),
            if format == IqFormat::Ci16 {
                "i16"
            } else {
                "u8"
            }
        )));
    }
    Ok(())
}

impl<V: IqValue + Item> Node for IqToComplex<V> {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input_vectors::<V>("in", 2, 0);
        ports.add_output::<Complex32>("out");
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<V>(0)?;
        let output = io.outputs.get::<Complex32>(0)?;
        let (read, written) = (input.items_read(), output.items_written());
        let Some(x) = input.window(2)? else {
            return Ok(Work::NeedInput { port: 0, items: 2 });
        };
        if x.len() < 2 {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = iq_to_c32(self.format, x, y);
        move_tags(input, output, read + 2 * n as u64, &mut self.tags, |i| {
            Some(written + (i - read) / 2)
        });
        input.consume(2 * n);
        output.commit(n);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

/// `Complex32` in, interleaved integer IQ out; values outside the format's range are clipped
/// and counted (reported as a warning when the node ends).
#[derive(Debug)]
pub struct ComplexToIq<V> {
    format: IqFormat,
    tags: Vec<Tag>,
    values: u64,
    clipped: u64,
    _values: PhantomData<V>,
}

impl<V: IqValue + Item> ComplexToIq<V> {
    /// Writes `format`; its values must be `V` (`u8` for `cu8` and `ci8`, `i16` for `ci16`).
    pub fn new(format: IqFormat) -> Result<Self, NodeError> {
        check_value_type::<V>(format)?;
        Ok(ComplexToIq {
            format,
            tags: Vec::new(),
            values: 0,
            clipped: 0,
            _values: PhantomData,
        })
    }

    /// Values (I or Q) clipped so far.
    pub fn clipped(&self) -> u64 {
        self.clipped
    }
}

impl<V: IqValue + Item> Node for ComplexToIq<V> {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input::<Complex32>("in");
        ports.add_output_vectors::<V>("out", 2, 0);
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<Complex32>(0)?;
        let output = io.outputs.get::<V>(0)?;
        let (read, written) = (input.items_read(), output.items_written());
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let Some(y) = output.reserve(2)? else {
            return Ok(Work::NeedOutput { port: 0, items: 2 });
        };
        let (n, clipped) = c32_to_iq(self.format, x, y);
        self.values += 2 * n as u64;
        self.clipped += clipped;
        move_tags(input, output, read + n as u64, &mut self.tags, |i| {
            Some(written + 2 * (i - read))
        });
        input.consume(n);
        output.commit(2 * n);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn warnings(&mut self) -> Vec<String> {
        if self.clipped == 0 {
            return Vec::new();
        }
        vec![format!(
            "{} of {} values clipped to the {} range (lower the level before converting)",
            self.clipped,
            self.values,
            self.format.name()
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{StreamToVector, VectorToStream};
    use crate::blocks::{VectorSink, VectorSource};
    use sluice_runtime::{Graph, Rated, TagValue};

    #[test]
    fn rtl_sdr_bytes_become_samples_and_go_back_with_tags_on_their_samples() {
        let bytes: Vec<u8> = (0..2000u32).map(|i| (i * 7 % 256) as u8).collect();
        let mut g = Graph::new();
        let src =
            VectorSource::new(bytes.clone())
                .max_chunk(101)
                .with_tag(10, "mark", TagValue::U64(5));
        let src = g.add("src", src).unwrap();
        let pairs = g
            .add("pairs", Rated::new(StreamToVector::<u8>::new(2)))
            .unwrap();
        let to_c = IqToComplex::<u8>::new(IqFormat::Cu8).unwrap();
        let to_c = g.add("to_c32", to_c).unwrap();
        let (probe, samples) = VectorSink::<Complex32>::new();
        let probe = g.add("samples", probe).unwrap();
        let back = ComplexToIq::<u8>::new(IqFormat::Cu8).unwrap();
        let back = g.add("to_cu8", back).unwrap();
        let flat = g
            .add("flat", Rated::new(VectorToStream::<u8>::new(2)))
            .unwrap();
        let (sink, data) = VectorSink::<u8>::new();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", pairs, "in").unwrap();
        g.connect(pairs, "out", to_c, "in").unwrap();
        g.connect(to_c, "out", probe, "in").unwrap();
        g.connect(to_c, "out", back, "in").unwrap();
        g.connect(back, "out", flat, "in").unwrap();
        g.connect(flat, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        let c = samples.items();
        assert_eq!(c.len(), 1000);
        assert_eq!(
            c[3],
            Complex32::new((42.0 - 127.5) / 127.5, (49.0 - 127.5) / 127.5)
        );
        let tags: Vec<u64> = samples.tags().iter().map(|t| t.index).collect();
        assert_eq!(tags, [5], "byte 10 is sample 5");
        assert_eq!(data.items(), bytes);
        let tags: Vec<u64> = data.tags().iter().map(|t| t.index).collect();
        assert_eq!(tags, [10], "and back on byte 10");
    }

    #[test]
    fn clipping_is_counted_and_a_wrong_storage_type_refused() {
        let mut block = ComplexToIq::<i16>::new(IqFormat::Ci16).unwrap();
        assert!(block.warnings().is_empty());
        block.clipped = 3;
        block.values = 10;
        assert_eq!(
            block.warnings(),
            ["3 of 10 values clipped to the ci16 range (lower the level before converting)"]
        );
        let err = IqToComplex::<u8>::new(IqFormat::Ci16).unwrap_err();
        assert_eq!(err.to_string(), "ci16 is stored as i16");
        assert!(ComplexToIq::<i16>::new(IqFormat::Ci8).is_err());
    }
}
