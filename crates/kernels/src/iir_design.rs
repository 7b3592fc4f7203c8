//! IIR designs as biquad sections: Butterworth low-pass, high-pass and band-pass by the
//! bilinear transform (with prewarping, so the cutoffs land where asked), FM de-emphasis and
//! a DC blocker.
//!
//! Frequencies are in cycles per sample (0 < f < 0.5), as the FIR designs take them. The
//! bilinear transform maps the analog frequency `W = 2·tan(π·f)` onto digital `f`, so each
//! design's magnitude is exactly the analog prototype's at the warped frequency: for a
//! Butterworth low-pass of order N, `|H(f)|² = 1 / (1 + (tan πf / tan πfc)^2N)`.

use super::{Biquad, DspError};
use num_complex::Complex64;
use std::f64::consts::PI;

/// The most poles of a Butterworth design (a band-pass has twice the order).
pub const MAX_IIR_ORDER: usize = 16;

/// What a Butterworth design passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Butterworth {
    /// Below `cutoff` (cycles/sample, the −3 dB point).
    Lowpass {
        /// The −3 dB frequency.
        cutoff: f64,
    },
    /// Above `cutoff`.
    Highpass {
        /// The −3 dB frequency.
        cutoff: f64,
    },
    /// Between `low` and `high` (the −3 dB points); the design has `2·order` poles.
    Bandpass {
        /// Lower −3 dB frequency.
        low: f64,
        /// Upper −3 dB frequency.
        high: f64,
    },
}

fn invalid(name: &'static str, value: f64, expected: &'static str) -> DspError {
    DspError::InvalidParameter {
        name,
        value: value.to_string(),
        expected,
    }
}

fn frequency(name: &'static str, f: f64) -> Result<f64, DspError> {
    if f.is_finite() && f > 0.0 && f < 0.5 {
        Ok(2.0 * (PI * f).tan())
    } else {
        Err(invalid(name, f, "between 0 and 0.5 cycles/sample"))
    }
}

/// The bilinear transform (`s = 2·(1 − z⁻¹)/(1 + z⁻¹)`) of the analog section
/// `(n0 + n1 s + n2 s²) / (d0 + d1 s + d2 s²)` (coefficients from the constant term up). A
/// first-order section (`n2 = d2 = 0`) stays first order.
fn bilinear(n: [f64; 3], d: [f64; 3]) -> Result<Biquad, DspError> {
    let first_order = n[2] == 0.0 && d[2] == 0.0;
    let z = |[c0, c1, c2]: [f64; 3]| {
        if first_order {
            [2.0 * c1 + c0, c0 - 2.0 * c1, 0.0]
        } else {
            [
                4.0 * c2 + 2.0 * c1 + c0,
                2.0 * c0 - 8.0 * c2,
                4.0 * c2 - 2.0 * c1 + c0,
            ]
        }
    };
    Biquad::new(z(n), z(d))
}

/// A Butterworth filter of `order` (1 ..= [`MAX_IIR_ORDER`]) as biquad sections, unity gain in
/// the pass band.
pub fn butterworth(kind: Butterworth, order: usize) -> Result<Vec<Biquad>, DspError> {
    if order == 0 || order > MAX_IIR_ORDER {
        return Err(invalid("order", order as f64, "between 1 and 16"));
    }
    // The normalised prototype's poles in the left half plane: one complex pole per pair
    // (its conjugate is implied), and −1 for odd orders.
    let pairs: Vec<Complex64> = (0..order / 2)
        .map(|k| Complex64::from_polar(1.0, PI * (2 * k + order + 1) as f64 / (2 * order) as f64))
        .collect();
    let odd = order % 2 == 1;
    let mut out = Vec::new();
    match kind {
        Butterworth::Lowpass { cutoff } | Butterworth::Highpass { cutoff } => {
            let w = frequency("cutoff", cutoff)?;
            let low = matches!(kind, Butterworth::Lowpass { .. });
            for p in &pairs {
                let d = [w * w, -2.0 * p.re * w, 1.0];
                let n = if low {
                    [w * w, 0.0, 0.0]
                } else {
                    [0.0, 0.0, 1.0]
                };
                out.push(bilinear(n, d)?);
            }
            if odd {
                let n = if low { [w, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
                out.push(bilinear(n, [w, 1.0, 0.0])?);
            }
        }
        Butterworth::Bandpass { low, high } => {
            let (wl, wh) = (frequency("low", low)?, frequency("high", high)?);
            if wl >= wh {
                return Err(invalid("high", high, "above low"));
            }
            let (b, w0sq) = (wh - wl, wl * wh);
            // Each prototype pole p becomes the two roots of s² − p·B·s + W0² = 0; each root
            // with its conjugate is one section with numerator B·s.
            let section = |s: Complex64| bilinear([0.0, b, 0.0], [s.norm_sqr(), -2.0 * s.re, 1.0]);
            for p in &pairs {
                let root = (p * p * b * b - 4.0 * w0sq).sqrt();
                out.push(section((p * b + root) / 2.0)?);
                out.push(section((p * b - root) / 2.0)?);
            }
            if odd {
                // p = −1: s² + B·s + W0², real coefficients whatever its roots.
                out.push(bilinear([0.0, b, 0.0], [w0sq, b, 1.0])?);
            }
        }
    }
    Ok(out)
}

/// FM de-emphasis: the one-pole low-pass `1 / (1 + s·tau)` of broadcast FM (`tau` = 75 µs in
/// the Americas and Korea, 50 µs elsewhere), at `sample_rate` Hz, its corner prewarped so that
/// the −3 dB point is `1 / (2π·tau)` Hz exactly (as GNU Radio's `fm_deemph`). Unity gain at DC.
pub fn deemphasis(tau: f64, sample_rate: f64) -> Result<Biquad, DspError> {
    if !(sample_rate.is_finite() && sample_rate > 0.0) {
        return Err(invalid(
            "sample_rate",
            sample_rate,
            "a positive number of Hz",
        ));
    }
    if !(tau.is_finite() && tau > 0.0) {
        return Err(invalid("tau", tau, "a positive time constant in seconds"));
    }
    let corner = 1.0 / (2.0 * PI * tau) / sample_rate;
    let w = frequency("tau", corner)
        .map_err(|_| invalid("tau", tau, "a corner 1/(2π·tau) below half the sample rate"))?;
    bilinear([w, 0.0, 0.0], [w, 1.0, 0.0])
}

/// A DC blocker: `(1 − z⁻¹) / (1 − pole·z⁻¹)`, a zero at DC and a pole just inside it; the
/// closer `pole` (0 < pole < 1) is to 1, the narrower the notch (−3 dB at about
/// `(1 − pole) / 2π` cycles/sample).
pub fn dc_blocker(pole: f64) -> Result<Biquad, DspError> {
    if !(pole > 0.0 && pole < 1.0) {
        return Err(invalid("pole", pole, "between 0 and 1"));
    }
    Biquad::new([1.0, -1.0, 0.0], [1.0, -pole, 0.0])
}

/// The response of a cascade at `f` cycles/sample.
pub fn cascade_response(sections: &[Biquad], f: f64) -> Complex64 {
    sections.iter().map(|s| s.response(f)).product()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warped(f: f64) -> f64 {
        (PI * f).tan()
    }

    fn check(sections: &[Biquad], want: impl Fn(f64) -> f64, what: &str) {
        for k in 1..200 {
            let f = k as f64 / 400.0;
            let got = cascade_response(sections, f).norm_sqr();
            assert!(
                (got - want(f)).abs() <= 1e-9,
                "{what} at {f}: {got} vs {}",
                want(f)
            );
        }
    }

    #[test]
    fn butterworth_magnitudes_match_the_warped_analog_prototype() {
        for order in 1..=8 {
            let n = 2 * order as i32;
            let lp = butterworth(Butterworth::Lowpass { cutoff: 0.1 }, order).unwrap();
            assert_eq!(lp.len(), order.div_ceil(2));
            check(
                &lp,
                |f| 1.0 / (1.0 + (warped(f) / warped(0.1)).powi(n)),
                "lowpass",
            );
            let hp = butterworth(Butterworth::Highpass { cutoff: 0.3 }, order).unwrap();
            check(
                &hp,
                |f| 1.0 / (1.0 + (warped(0.3) / warped(f)).powi(n)),
                "highpass",
            );
            let bp = butterworth(
                Butterworth::Bandpass {
                    low: 0.05,
                    high: 0.2,
                },
                order,
            )
            .unwrap();
            assert_eq!(bp.len(), order);
            let (wl, wh) = (2.0 * warped(0.05), 2.0 * warped(0.2));
            check(
                &bp,
                |f| {
                    let w = 2.0 * warped(f);
                    let omega = (w * w - wl * wh) / ((wh - wl) * w);
                    1.0 / (1.0 + omega.powi(n))
                },
                "bandpass",
            );
        }
    }

    #[test]
    fn deemphasis_and_dc_blocker_have_their_corners() {
        let fs = 48000.0;
        let d = deemphasis(75e-6, fs).unwrap();
        let corner = 1.0 / (2.0 * PI * 75e-6) / fs;
        check(
            &[d],
            |f| 1.0 / (1.0 + (warped(f) / warped(corner)).powi(2)),
            "deemphasis",
        );
        assert!((cascade_response(&[d], 0.0).norm() - 1.0).abs() < 1e-12);
        let dc = dc_blocker(0.999).unwrap();
        assert!(cascade_response(&[dc], 0.0).norm() < 1e-12);
        assert!((cascade_response(&[dc], 0.25).norm() - 1.0).abs() < 1e-3);
    }

    #[test]
    fn invalid_designs_are_errors_naming_the_parameter() {
        let err = |r: Result<Vec<Biquad>, DspError>| r.unwrap_err().to_string();
        assert!(err(butterworth(Butterworth::Lowpass { cutoff: 0.5 }, 2)).contains("cutoff = 0.5"));
        assert!(err(butterworth(Butterworth::Lowpass { cutoff: 0.1 }, 0)).contains("order"));
        assert!(err(butterworth(Butterworth::Highpass { cutoff: 0.1 }, 17)).contains("order"));
        let swapped = Butterworth::Bandpass {
            low: 0.2,
            high: 0.1,
        };
        assert!(err(butterworth(swapped, 2)).contains("above low"));
        assert!(deemphasis(75e-6, 0.0).is_err());
        assert!(deemphasis(1e-9, 48000.0)
            .unwrap_err()
            .to_string()
            .contains("tau"));
        assert!(dc_blocker(1.0).is_err());
    }
}
