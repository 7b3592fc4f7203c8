//! Band-limited resampling between sample rates (offline, whole signals): a Kaiser-windowed
//! sinc, interpolated from a table. Used to bring an impulse response to the rate of the audio
//! it convolves.

use super::design::bessel_i0;
use std::f64::consts::PI;

/// Zero crossings on each side of the resampling kernel.
const SINC_ZEROS: usize = 48;
/// Kernel table entries per zero crossing (linearly interpolated between).
const SINC_OVERSAMPLE: usize = 512;
/// Kaiser window shape: about 90 dB stop-band attenuation.
const KAISER_BETA: f64 = 9.0;
/// Cutoff as a fraction of the lower Nyquist frequency (the transition band ends near it).
const ROLLOFF: f64 = 0.95;

/// Band-limited resampling of `x` from `from` Hz to `to` Hz with a Kaiser-windowed sinc
/// (48 zero crossings per side, ~90 dB stop band, pass band to 0.95 × the lower Nyquist minus
/// the transition band). Keeps the waveform: a sine keeps its amplitude. The output has
/// `ceil(len × to / from)` samples.
pub fn resample(x: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || x.is_empty() {
        return x.to_vec();
    }
    let step = f64::from(from) / f64::from(to); // input samples per output sample
    let fc = ROLLOFF * (1.0f64).min(1.0 / step); // cutoff, in cycles per 2 input samples
    let table: Vec<f64> = (0..=SINC_ZEROS * SINC_OVERSAMPLE + 1)
        .map(|i| windowed_sinc(i as f64 / SINC_OVERSAMPLE as f64, SINC_ZEROS, KAISER_BETA))
        .collect();
    let kernel = |u: f64| {
        let p = u.abs() * SINC_OVERSAMPLE as f64;
        let i = p as usize;
        if i >= SINC_ZEROS * SINC_OVERSAMPLE {
            return 0.0;
        }
        let f = p - i as f64;
        table[i] * (1.0 - f) + table[i + 1] * f
    };
    let half = SINC_ZEROS as f64 / fc; // kernel half-width in input samples
    let out_len = (x.len() as u64 * u64::from(to)).div_ceil(u64::from(from)) as usize;
    (0..out_len)
        .map(|n| {
            let t = n as f64 * step;
            let k0 = (t - half).ceil().max(0.0) as usize;
            let k1 = ((t + half).floor() as usize).min(x.len() - 1);
            let acc: f64 = (k0..=k1)
                .map(|k| f64::from(x[k]) * kernel(fc * (t - k as f64)))
                .sum();
            (acc * fc) as f32
        })
        .collect()
}

/// The band-limiting kernel shared by the resamplers: `sinc(u)` (zero crossings at the
/// integers) under a Kaiser window of shape `beta` that reaches zero at `|u| = zeros`.
pub(super) fn windowed_sinc(u: f64, zeros: usize, beta: f64) -> f64 {
    let r = u / zeros as f64;
    if r.abs() >= 1.0 {
        return 0.0;
    }
    let sinc = if u == 0.0 {
        1.0
    } else {
        (PI * u).sin() / (PI * u)
    };
    sinc * bessel_i0(beta * (1.0 - r * r).sqrt()) / bessel_i0(beta)
}

/// Resamples an impulse response from `from` Hz to `to` Hz keeping its frequency response:
/// the waveform is resampled and scaled by `from / to` (an impulse stays of unit DC gain).
pub fn resample_ir(ir: &[f32], from: u32, to: u32) -> Vec<f32> {
    let gain = (f64::from(from) / f64::from(to)) as f32;
    let mut y = resample(ir, from, to);
    if from != to {
        y.iter_mut().for_each(|v| *v *= gain);
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resampler_keeps_a_sine() {
        for (from, to) in [
            (48000, 44100),
            (44100, 48000),
            (48000, 96000),
            (96000, 44100),
        ] {
            let f = 1000.0;
            let x: Vec<f32> = (0..from as usize / 10)
                .map(|n| (2.0 * PI * f * n as f64 / f64::from(from)).sin() as f32)
                .collect();
            let y = resample(&x, from, to);
            assert_eq!(y.len(), (x.len() * to as usize).div_ceil(from as usize));
            // Away from the edges (the kernel's half-width) the sine must be exact to ~1e-4.
            let margin = 200;
            let err = y[margin..y.len() - margin]
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let n = (i + margin) as f64;
                    (f64::from(v) - (2.0 * PI * f * n / f64::from(to)).sin()).abs()
                })
                .fold(0.0, f64::max);
            assert!(err < 2e-4, "{from} -> {to}: max error {err}");
        }
        assert_eq!(resample(&[1.0, 2.0], 48000, 48000), vec![1.0, 2.0]);
    }

    #[test]
    fn resampled_ir_keeps_its_gain() {
        let mut ir = vec![0.0f32; 2000];
        ir[1000] = 1.0;
        for (from, to) in [(48000, 44100), (44100, 48000)] {
            let y = resample_ir(&ir, from, to);
            let dc: f64 = y.iter().map(|&v| f64::from(v)).sum();
            assert!((dc - 1.0).abs() < 1e-3, "{from} -> {to}: DC gain {dc}");
        }
    }
}
