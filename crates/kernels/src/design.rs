//! Windowed-sinc FIR designs: low-pass, band-pass (real taps) and complex band-pass.
//!
//! Frequencies are normalised to the sample rate (cycles per sample, Nyquist = 0.5). The
//! low-pass and band-pass taps are scaled to unit gain at DC and at the band centre.

use std::f64::consts::PI;

use num_complex::Complex32;

use super::DspError;

/// The window applied to the ideal (sinc) response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// Hamming: about 43 dB first side lobe.
    Hamming,
    /// Blackman: about 58 dB first side lobe, wider transition.
    Blackman,
    /// Kaiser with shape parameter `beta` (≥ 0; about 8.6 gives 90 dB).
    Kaiser {
        /// The shape parameter β.
        beta: f64,
    },
}

impl Window {
    /// The `len` window coefficients (symmetric).
    pub fn coefficients(self, len: usize) -> Result<Vec<f64>, DspError> {
        if len == 0 {
            return Err(DspError::EmptyTaps);
        }
        if let Window::Kaiser { beta } = self {
            if !(beta >= 0.0 && beta.is_finite()) {
                return Err(invalid("beta", beta, "a finite value >= 0"));
            }
        }
        if len == 1 {
            return Ok(vec![1.0]);
        }
        let m = (len - 1) as f64;
        Ok((0..len)
            .map(|i| {
                let x = i as f64 / m;
                match self {
                    Window::Hamming => 0.54 - 0.46 * (2.0 * PI * x).cos(),
                    Window::Blackman => {
                        0.42 - 0.5 * (2.0 * PI * x).cos() + 0.08 * (4.0 * PI * x).cos()
                    }
                    Window::Kaiser { beta } => {
                        let r = 2.0 * x - 1.0;
                        bessel_i0(beta * (1.0 - r * r).max(0.0).sqrt()) / bessel_i0(beta)
                    }
                }
            })
            .collect())
    }
}

/// Modified Bessel function of the first kind, order 0 (power series).
pub(crate) fn bessel_i0(x: f64) -> f64 {
    let (mut sum, mut term, q) = (1.0, 1.0, x * x / 4.0);
    for k in 1..200 {
        term *= q / (k * k) as f64;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

fn invalid(name: &'static str, value: f64, expected: &'static str) -> DspError {
    DspError::InvalidDesign {
        name,
        value: value.to_string(),
        expected,
    }
}

fn check_freq(name: &'static str, f: f64) -> Result<(), DspError> {
    if f > 0.0 && f < 0.5 {
        Ok(())
    } else {
        Err(invalid(
            name,
            f,
            "between 0 and 0.5 cycles/sample, exclusive",
        ))
    }
}

/// Windowed ideal low-pass of `len` taps cutting off at `cutoff`, in f64, unnormalised.
fn sinc_lowpass(len: usize, cutoff: f64, window: Window) -> Result<Vec<f64>, DspError> {
    let w = window.coefficients(len)?;
    let mid = (len - 1) as f64 / 2.0;
    Ok(w.iter()
        .enumerate()
        .map(|(i, wi)| {
            let t = i as f64 - mid;
            let ideal = if t == 0.0 {
                2.0 * cutoff
            } else {
                (2.0 * PI * cutoff * t).sin() / (PI * t)
            };
            ideal * wi
        })
        .collect())
}

/// A low-pass of `len` taps with cutoff `cutoff` (0 < cutoff < 0.5), unit gain at DC.
pub fn lowpass(len: usize, cutoff: f64, window: Window) -> Result<Vec<f32>, DspError> {
    check_freq("cutoff", cutoff)?;
    let h = sinc_lowpass(len, cutoff, window)?;
    let dc: f64 = h.iter().sum();
    Ok(h.iter().map(|v| (v / dc) as f32).collect())
}

/// A real band-pass of `len` taps passing `low..high` (0 < low < high < 0.5), unit gain at
/// the band centre.
pub fn bandpass(len: usize, low: f64, high: f64, window: Window) -> Result<Vec<f32>, DspError> {
    check_freq("low", low)?;
    check_freq("high", high)?;
    if low >= high {
        return Err(invalid("low", low, "below high"));
    }
    let half = (high - low) / 2.0;
    let centre = (high + low) / 2.0;
    let proto = sinc_lowpass(len, half, window)?;
    let mid = (len - 1) as f64 / 2.0;
    let h: Vec<f64> = proto
        .iter()
        .enumerate()
        .map(|(i, p)| 2.0 * p * (2.0 * PI * centre * (i as f64 - mid)).cos())
        .collect();
    let gain = response(&h, centre).norm();
    Ok(h.iter().map(|v| (v / gain) as f32).collect())
}

/// A complex band-pass of `len` taps passing `low..high` (−0.5 < low < high < 0.5, so the
/// band may be one-sided), unit gain at the band centre.
pub fn complex_bandpass(
    len: usize,
    low: f64,
    high: f64,
    window: Window,
) -> Result<Vec<Complex32>, DspError> {
    for (name, f) in [("low", low), ("high", high)] {
        if !(f > -0.5 && f < 0.5) {
            return Err(invalid(
                name,
                f,
                "between -0.5 and 0.5 cycles/sample, exclusive",
            ));
        }
    }
    if low >= high {
        return Err(invalid("low", low, "below high"));
    }
    let centre = (high + low) / 2.0;
    let proto = sinc_lowpass(len, (high - low) / 2.0, window)?;
    let dc: f64 = proto.iter().sum();
    let mid = (len - 1) as f64 / 2.0;
    Ok(proto
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let ph = 2.0 * PI * centre * (i as f64 - mid);
            Complex32::new((p / dc * ph.cos()) as f32, (p / dc * ph.sin()) as f32)
        })
        .collect())
}

/// Frequency response of real taps `h` at `f` cycles/sample.
fn response(h: &[f64], f: f64) -> num_complex::Complex64 {
    h.iter()
        .enumerate()
        .map(|(i, &v)| num_complex::Complex64::from_polar(v, -2.0 * PI * f * i as f64))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gain_db(h: &[f32], f: f64) -> f64 {
        let h64: Vec<f64> = h.iter().map(|&v| v as f64).collect();
        20.0 * response(&h64, f).norm().log10()
    }

    #[test]
    fn lowpass_passes_and_stops() {
        for w in [
            Window::Hamming,
            Window::Blackman,
            Window::Kaiser { beta: 8.6 },
        ] {
            let h = lowpass(101, 0.1, w).unwrap();
            assert!(gain_db(&h, 0.0).abs() < 1e-4, "{w:?} DC");
            assert!(gain_db(&h, 0.05).abs() < 0.1, "{w:?} passband");
            assert!(
                gain_db(&h, 0.2) < -40.0,
                "{w:?} stopband {}",
                gain_db(&h, 0.2)
            );
            assert!((h[0] - h[100]).abs() < 1e-7, "symmetric");
        }
    }

    #[test]
    fn bandpass_and_complex_bandpass_select_their_band() {
        let h = bandpass(129, 0.15, 0.25, Window::Blackman).unwrap();
        assert!(gain_db(&h, 0.2).abs() < 0.1);
        assert!(gain_db(&h, 0.02) < -50.0 && gain_db(&h, 0.4) < -50.0);
        let hc = complex_bandpass(129, 0.1, 0.2, Window::Kaiser { beta: 7.0 }).unwrap();
        let resp = |f: f64| -> f64 {
            let s: num_complex::Complex64 = hc
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    num_complex::Complex64::new(t.re as f64, t.im as f64)
                        * num_complex::Complex64::from_polar(1.0, -2.0 * PI * f * i as f64)
                })
                .sum();
            20.0 * s.norm().log10()
        };
        assert!(resp(0.15).abs() < 0.1);
        assert!(resp(-0.15) < -50.0, "one-sided: {}", resp(-0.15));
    }

    #[test]
    fn kaiser_window_matches_known_values() {
        let w = Window::Kaiser { beta: 5.0 }.coefficients(5).unwrap();
        // I0(5 · sqrt(1 − 0.25)) / I0(5) for the second point; ends are 1/I0(5).
        assert!((w[0] - 1.0 / 27.239_871_823_604_45).abs() < 1e-9);
        assert!((w[2] - 1.0).abs() < 1e-12);
        assert!((bessel_i0(1.0) - 1.266_065_877_752_008).abs() < 1e-12);
    }

    #[test]
    fn invalid_designs_name_the_value() {
        let e = lowpass(31, 0.7, Window::Hamming).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid filter design: cutoff = 0.7 (between 0 and 0.5 cycles/sample, exclusive)"
        );
        assert!(matches!(
            lowpass(0, 0.1, Window::Hamming),
            Err(DspError::EmptyTaps)
        ));
        let e = bandpass(31, 0.3, 0.2, Window::Blackman).unwrap_err();
        assert!(e.to_string().contains("low = 0.3"));
        let e = Window::Kaiser { beta: -1.0 }.coefficients(8).unwrap_err();
        assert!(e.to_string().contains("beta = -1"));
        assert!(complex_bandpass(31, -0.6, 0.1, Window::Hamming).is_err());
    }
}
