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

use super::{DspError, SimdLevel};
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
    /// `values` as `i16`s when they are (for the explicit `ci16` loops); `None` otherwise.
    fn as_i16(_values: &mut [Self]) -> Option<&mut [i16]> {
        None
    }
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
    fn as_i16(values: &mut [Self]) -> Option<&mut [i16]> {
        Some(values)
    }
}

/// Converts interleaved `x` (two values per sample) of `format` into complex samples:
/// `min(x.len() / 2, out.len())` of them, returned.
///
/// I and Q map alike, so the samples are converted as one flat run of `2n` values, with the
/// format fixed in each loop: loops the compiler vectorises, built once more for AVX2 and for
/// AVX-512 and chosen at run time (a radio source converts every sample it receives here; the
/// baseline x86-64 build alone has only 128-bit vectors).
pub fn iq_to_c32<V: IqValue>(format: IqFormat, x: &[V], out: &mut [Complex32]) -> usize {
    iq_to_c32_with(crate::simd::best(), format, x, out)
}

/// [`iq_to_c32`] at a stated instruction-set level (a level the CPU cannot run falls back to
/// the portable loop), so that tests can check every level against the same reference.
pub fn iq_to_c32_with<V: IqValue>(
    level: SimdLevel,
    format: IqFormat,
    x: &[V],
    out: &mut [Complex32],
) -> usize {
    let n = (x.len() / 2).min(out.len());
    let flat: &mut [f32] = bytemuck::cast_slice_mut(&mut out[..n]);
    let x = &x[..2 * n];
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU runs AVX-512F (checked just now).
        SimdLevel::Avx512 if crate::simd::usable(level) => unsafe {
            levels::avx512(format, x, flat)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU runs AVX2 (checked just now).
        SimdLevel::Avx2Fma if crate::simd::usable(level) => unsafe {
            levels::avx2(format, x, flat)
        },
        _ => convert(format, x, flat),
    }
    n
}

/// The conversion of `x` into `flat` (equal lengths), inlined into each level's build.
#[inline(always)]
fn convert<V: IqValue>(format: IqFormat, x: &[V], flat: &mut [f32]) {
    let (scale, offset, _, _) = format.mapping();
    let inv = 1.0 / scale;
    match format {
        IqFormat::Cu8 => map_values(x, flat, |v| (v.level(IqFormat::Cu8) - offset) * inv),
        IqFormat::Ci8 => map_values(x, flat, |v| (v.level(IqFormat::Ci8) - offset) * inv),
        IqFormat::Ci16 => map_values(x, flat, |v| (v.level(IqFormat::Ci16) - offset) * inv),
    }
}

/// [`convert`] compiled for wider vectors: the same loop, so the same results bit for bit.
#[cfg(target_arch = "x86_64")]
mod levels {
    use super::{convert, convert_back, IqFormat, IqValue};

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512<V: IqValue>(format: IqFormat, x: &[V], flat: &mut [f32]) {
        convert(format, x, flat);
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2<V: IqValue>(format: IqFormat, x: &[V], flat: &mut [f32]) {
        convert(format, x, flat);
    }

    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512_back<V: IqValue>(
        format: IqFormat,
        flat: &[f32],
        out: &mut [V],
    ) -> u64 {
        convert_back(format, flat, out)
    }

    /// `c32_to_iq` for `ci16` in explicit AVX-512: the compiled loop stayed scalar (its
    /// rounding and saturating cast do not vectorise), a third of a recording's time. The same
    /// arithmetic as [`convert_back`], lane by lane: scale, round half away from zero
    /// (truncate, then step away from zero where the fraction is at least one half), NaN to 0,
    /// clamp, count what changed, convert and narrow.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn ci16_avx512(flat: &[f32], out: &mut [i16]) -> u64 {
        use std::arch::x86_64::*;
        let lanes = flat.len() / 16 * 16;
        let (scale, half, one) = (
            _mm512_set1_ps(32768.0),
            _mm512_set1_ps(0.5),
            _mm512_set1_ps(1.0),
        );
        let (low, high, sign) = (
            _mm512_set1_ps(-32768.0),
            _mm512_set1_ps(32767.0),
            _mm512_set1_ps(-0.0),
        );
        let mut clipped = 0u64;
        for at in (0..lanes).step_by(16) {
            // SAFETY: `at + 16 <= lanes <= flat.len()`, and `out` holds as many values.
            let v = unsafe { _mm512_loadu_ps(flat.as_ptr().add(at)) };
            let x = _mm512_mul_ps(v, scale);
            let whole = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
            let away =
                _mm512_cmp_ps_mask::<_CMP_GE_OQ>(_mm512_abs_ps(_mm512_sub_ps(x, whole)), half);
            // ±1 with x's sign (integer ops: the float ones need AVX-512DQ).
            let step = _mm512_castsi512_ps(_mm512_or_si512(
                _mm512_castps_si512(one),
                _mm512_and_si512(_mm512_castps_si512(x), _mm512_castps_si512(sign)),
            ));
            let level = _mm512_mask_add_ps(whole, away, whole, step);
            let number = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(level, level);
            let kept = _mm512_maskz_mov_ps(number, _mm512_min_ps(_mm512_max_ps(level, low), high));
            // NaN lanes compare unequal too: counted, as the portable loop counts them.
            clipped += u64::from(_mm512_cmp_ps_mask::<_CMP_NEQ_UQ>(kept, level).count_ones());
            let narrow = _mm512_cvtsepi32_epi16(_mm512_cvttps_epi32(kept));
            // SAFETY: as for the load.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(at).cast(), narrow) };
        }
        clipped + convert_back(IqFormat::Ci16, &flat[lanes..], &mut out[lanes..])
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_back<V: IqValue>(
        format: IqFormat,
        flat: &[f32],
        out: &mut [V],
    ) -> u64 {
        convert_back(format, flat, out)
    }
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
    c32_to_iq_with(crate::simd::best(), format, x, out)
}

/// [`c32_to_iq`] at a stated instruction-set level (see [`iq_to_c32_with`]).
pub fn c32_to_iq_with<V: IqValue>(
    level: SimdLevel,
    format: IqFormat,
    x: &[Complex32],
    out: &mut [V],
) -> (usize, u64) {
    let n = x.len().min(out.len() / 2);
    let flat: &[f32] = bytemuck::cast_slice(&x[..n]);
    let out = &mut out[..2 * n];
    let clipped = match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU runs AVX-512F (checked just now).
        SimdLevel::Avx512 if crate::simd::usable(level) => {
            if format == IqFormat::Ci16 {
                if let Some(out) = V::as_i16(&mut *out) {
                    // SAFETY: the CPU runs AVX-512F (checked just now).
                    return (n, unsafe { levels::ci16_avx512(flat, out) });
                }
            }
            // SAFETY: as above.
            unsafe { levels::avx512_back(format, flat, out) }
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU runs AVX2 (checked just now).
        SimdLevel::Avx2Fma if crate::simd::usable(level) => unsafe {
            levels::avx2_back(format, flat, out)
        },
        _ => convert_back(format, flat, out),
    };
    (n, clipped)
}

/// The conversion of `flat` into `out` (equal lengths), with the values clipped counted;
/// inlined into each level's build (the baseline build has no vector rounding: SSE4.1).
#[inline(always)]
fn convert_back<V: IqValue>(format: IqFormat, flat: &[f32], out: &mut [V]) -> u64 {
    let (scale, offset, min, max) = format.mapping();
    let zero = offset.round();
    let mut clipped = 0u64;
    for (o, &v) in out.iter_mut().zip(flat) {
        let level = (v * scale + offset).round();
        let kept = if level.is_nan() {
            zero
        } else {
            level.clamp(min, max)
        };
        // A NaN is never equal to what is kept: counted, as a clipped value is.
        clipped += u64::from(kept != level);
        *o = V::store(kept, format);
    }
    clipped
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
    fn every_level_converts_every_value_as_the_portable_loop_does() {
        // Every i16 value, in a length that leaves a tail after any vector width.
        let x: Vec<i16> = (i16::MIN..=i16::MAX).chain([7, -7]).collect();
        let mut want = vec![Complex32::default(); x.len() / 2];
        iq_to_c32_with(SimdLevel::Portable, IqFormat::Ci16, &x, &mut want);
        for (k, z) in want.iter().enumerate() {
            assert!((f64::from(z.re) - reference(IqFormat::Ci16, x[2 * k].into())).abs() < 1e-9);
        }
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1026).collect();
        for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
            let mut got = vec![Complex32::default(); want.len()];
            iq_to_c32_with(level, IqFormat::Ci16, &x, &mut got);
            assert_eq!(got, want, "{level:?}");
            for format in [IqFormat::Cu8, IqFormat::Ci8] {
                let (mut a, mut b) = (
                    vec![Complex32::default(); 513],
                    vec![Complex32::default(); 513],
                );
                iq_to_c32_with(SimdLevel::Portable, format, &bytes, &mut a);
                iq_to_c32_with(level, format, &bytes, &mut b);
                assert_eq!(a, b, "{level:?} {format:?}");
            }
        }
    }

    #[test]
    fn every_level_converts_back_and_clips_as_the_portable_loop_does() {
        let x: Vec<Complex32> = (0..20_001)
            .map(|k| {
                let t = k as f32 * 0.0007;
                Complex32::new(1.3 * t.sin(), (0.999 * t.cos()).max(-1.2))
            })
            .chain([
                Complex32::new(f32::NAN, 0.5),
                Complex32::new(0.5 / 32768.0, -1.5 / 32768.0),
            ])
            .collect();
        for format in [IqFormat::Ci16, IqFormat::Cu8, IqFormat::Ci8] {
            let portable =
                |out: &mut Vec<i16>| c32_to_iq_with(SimdLevel::Portable, format, &x, out);
            let mut want = vec![0i16; 2 * x.len()];
            let (n, clipped) = portable(&mut want);
            assert_eq!(n, x.len());
            assert!(clipped > 1000, "{format:?}: {clipped}");
            for level in [SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                let mut got = vec![0i16; 2 * x.len()];
                assert_eq!(
                    c32_to_iq_with(level, format, &x, &mut got),
                    (n, clipped),
                    "{level:?}"
                );
                assert_eq!(got, want, "{level:?} {format:?}");
                let (mut a, mut b) = (vec![0u8; 2 * x.len()], vec![0u8; 2 * x.len()]);
                let ra = c32_to_iq_with(SimdLevel::Portable, format, &x, &mut a);
                assert_eq!(c32_to_iq_with(level, format, &x, &mut b), ra, "{level:?}");
                assert_eq!(a, b, "{level:?} {format:?}");
            }
        }
        // Halves round away from zero at every level, as f32::round does.
        let mut out = [0i16; 2];
        c32_to_iq_with(
            SimdLevel::Avx512,
            IqFormat::Ci16,
            &x[x.len() - 1..],
            &mut out,
        );
        assert_eq!(out, [1, -2]);
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
