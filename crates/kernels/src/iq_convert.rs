//! Interleaved integer IQ, as SDR front ends deliver it, to complex `f32` and back.
//!
//! | format | front end | one sample | to `f32` |
//! |---|---|---|---|
//! | `cu8` | RTL-SDR (`rtl_sdr`), SigMF `cu8` | I, Q as unsigned bytes | `(v − 127.5) / 127.5` |
//! | `ci8` | HackRF (`hackrf_transfer`), SigMF `ci8` | I, Q as signed bytes | `v / 128` |
//! | `ci16` | USRP `sc16`, bladeRF, SigMF `ci16_le` | I, Q as little-endian `i16` | `v / 32768` |
//!
//! The conversions back round to the nearest integer; a value outside the format's range is
//! clipped to it and counted (a NaN becomes 0 and is counted too), so a sink can say how many
//! values it clipped. Bytes of `ci8` travel as `u8` (the graph item type) and are read as
//! two's complement.

use super::DspError;
use num_complex::Complex32;

/// An interleaved integer IQ format (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IqFormat {
    /// Unsigned bytes offset by 127.5 (RTL-SDR).
    Cu8,
    /// Signed bytes (HackRF).
    Ci8,
    /// Signed 16-bit integers.
    Ci16,
}

impl IqFormat {
    /// The format called `name` (`cu8`, `ci8`, `ci16`).
    pub fn parse(name: &str) -> Result<Self, DspError> {
        match name {
            "cu8" => Ok(IqFormat::Cu8),
            "ci8" => Ok(IqFormat::Ci8),
            "ci16" => Ok(IqFormat::Ci16),
            other => Err(DspError::InvalidParameter {
                name: "format",
                value: other.to_string(),
                expected: "cu8, ci8 or ci16",
            }),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            IqFormat::Cu8 => "cu8",
            IqFormat::Ci8 => "ci8",
            IqFormat::Ci16 => "ci16",
        }
    }

    /// `(scale, offset, min, max)`: a value `v` stands for `(v − offset) / scale`.
    fn mapping(self) -> (f32, f32, f32, f32) {
        match self {
            IqFormat::Cu8 => (127.5, 127.5, 0.0, 255.0),
            IqFormat::Ci8 => (128.0, 0.0, -128.0, 127.0),
            IqFormat::Ci16 => (32768.0, 0.0, -32768.0, 32767.0),
        }
    }
}

/// Integer values an IQ format is stored in: `u8` (for `cu8` and `ci8`) and `i16`.
pub trait IqValue: Copy + Default {
    /// The value as the format's integer (a `u8` of `ci8` is read as two's complement).
    fn level(self, format: IqFormat) -> f32;
    /// The integer `v` (already rounded and in range) as stored for `format`.
    fn store(v: f32, format: IqFormat) -> Self;
}

impl IqValue for u8 {
    #[inline]
    fn level(self, format: IqFormat) -> f32 {
        match format {
            IqFormat::Ci8 => f32::from(self as i8),
            _ => f32::from(self),
        }
    }
    #[inline]
    fn store(v: f32, format: IqFormat) -> Self {
        match format {
            IqFormat::Ci8 => (v as i8) as u8,
            _ => v as u8,
        }
    }
}

impl IqValue for i16 {
    #[inline]
    fn level(self, _: IqFormat) -> f32 {
        f32::from(self)
    }
    #[inline]
    fn store(v: f32, _: IqFormat) -> Self {
        v as i16
    }
}

/// Converts interleaved `x` (two values per sample) of `format` into complex samples:
/// `min(x.len() / 2, out.len())` of them, returned.
///
/// I and Q map alike, so the samples are converted as one flat run of `2n` values, with the
/// format fixed in each loop: loops the compiler vectorises (a radio source converts every
/// sample it receives here).
pub fn iq_to_c32<V: IqValue>(format: IqFormat, x: &[V], out: &mut [Complex32]) -> usize {
    let (scale, offset, _, _) = format.mapping();
    let inv = 1.0 / scale;
    let n = (x.len() / 2).min(out.len());
    let flat: &mut [f32] = bytemuck::cast_slice_mut(&mut out[..n]);
    let x = &x[..2 * n];
    match format {
        IqFormat::Cu8 => map_values(x, flat, |v| (v.level(IqFormat::Cu8) - offset) * inv),
        IqFormat::Ci8 => map_values(x, flat, |v| (v.level(IqFormat::Ci8) - offset) * inv),
        IqFormat::Ci16 => map_values(x, flat, |v| (v.level(IqFormat::Ci16) - offset) * inv),
    }
    n
}

/// `y[i] = f(x[i])`, one flat loop.
#[inline(always)]
fn map_values<V: Copy>(x: &[V], y: &mut [f32], f: impl Fn(V) -> f32) {
    for (o, &v) in y.iter_mut().zip(x) {
        *o = f(v);
    }
}

/// Converts complex samples into interleaved `out` of `format`: `min(x.len(), out.len() / 2)`
/// samples. Returns the samples done and how many values (I or Q) were clipped.
pub fn c32_to_iq<V: IqValue>(format: IqFormat, x: &[Complex32], out: &mut [V]) -> (usize, u64) {
    let (scale, offset, min, max) = format.mapping();
    let n = x.len().min(out.len() / 2);
    let mut clipped = 0u64;
    let mut one = |v: f32| -> V {
        let level = (v * scale + offset).round();
        let kept = if level.is_nan() {
            offset.round()
        } else {
            level.clamp(min, max)
        };
        clipped += u64::from(kept != level);
        V::store(kept, format)
    };
    for (o, v) in out.chunks_exact_mut(2).zip(&x[..n]) {
        o[0] = one(v.re);
        o[1] = one(v.im);
    }
    (n, clipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f64 reference of one value.
    fn reference(format: IqFormat, v: i32) -> f64 {
        match format {
            IqFormat::Cu8 => (f64::from(v) - 127.5) / 127.5,
            IqFormat::Ci8 => f64::from(v) / 128.0,
            IqFormat::Ci16 => f64::from(v) / 32768.0,
        }
    }

    #[test]
    fn every_byte_value_converts_as_the_f64_formula_and_back() {
        for format in [IqFormat::Cu8, IqFormat::Ci8] {
            let bytes: Vec<u8> = (0..=255u8).flat_map(|b| [b, 255 - b]).collect();
            let mut c = vec![Complex32::default(); 300];
            assert_eq!(iq_to_c32(format, &bytes, &mut c), 256);
            for (k, z) in c[..256].iter().enumerate() {
                let signed = |b: u8| match format {
                    IqFormat::Ci8 => i32::from(b as i8),
                    _ => i32::from(b),
                };
                let (i, q) = (signed(bytes[2 * k]), signed(bytes[2 * k + 1]));
                assert!((f64::from(z.re) - reference(format, i)).abs() < 1e-7, "{k}");
                assert!((f64::from(z.im) - reference(format, q)).abs() < 1e-7, "{k}");
            }
            let mut back = vec![0u8; 512];
            assert_eq!(c32_to_iq(format, &c[..256], &mut back), (256, 0));
            assert_eq!(back, bytes, "{format:?} round trip");
        }
    }

    #[test]
    fn ci16_round_trips_and_counts_clipping() {
        let x: Vec<i16> = vec![-32768, 32767, 0, -1, 12345, -23456];
        let mut c = vec![Complex32::default(); 3];
        assert_eq!(iq_to_c32(IqFormat::Ci16, &x, &mut c), 3);
        assert_eq!(c[0], Complex32::new(-1.0, 32767.0 / 32768.0));
        let mut back = vec![0i16; 6];
        assert_eq!(c32_to_iq(IqFormat::Ci16, &c, &mut back), (3, 0));
        assert_eq!(back, x);
        let loud = [
            Complex32::new(1.0, -1.5),
            Complex32::new(f32::NAN, 0.5),
            Complex32::new(-1.0, 2.0),
        ];
        let mut out = vec![0i16; 6];
        assert_eq!(c32_to_iq(IqFormat::Ci16, &loud, &mut out), (3, 4));
        assert_eq!(out, [32767, -32768, 0, 16384, -32768, 32767]);
        let mut bytes = vec![0u8; 6];
        assert_eq!(c32_to_iq(IqFormat::Cu8, &loud, &mut bytes), (3, 3));
        assert_eq!(bytes[..2], [255, 0]);
        assert_eq!(
            bytes[2], 128,
            "NaN is the format's zero (127.5 rounds to 128)"
        );
    }

    #[test]
    fn chunking_does_not_change_the_result_and_bad_names_are_errors() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 256) as u8).collect();
        let mut whole = vec![Complex32::default(); 500];
        iq_to_c32(IqFormat::Cu8, &bytes, &mut whole);
        let mut parts = vec![Complex32::default(); 500];
        let mut at = 0;
        for len in [1, 3, 300, 196] {
            at += iq_to_c32(
                IqFormat::Cu8,
                &bytes[2 * at..2 * (at + len)],
                &mut parts[at..],
            );
        }
        assert_eq!((at, &whole), (500, &parts));
        assert_eq!(IqFormat::parse("ci16").unwrap().name(), "ci16");
        assert!(IqFormat::parse("cs8")
            .unwrap_err()
            .to_string()
            .contains("cu8, ci8 or ci16"));
    }
}
