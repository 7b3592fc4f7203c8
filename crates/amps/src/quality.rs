//! How well a receiver's audio matches the audio sent: both band-limited to the voice band,
//! the delay found (integer samples by cross-correlation, then a fraction by golden-section
//! search, the reference being a closed form that can be evaluated at any time), then the
//! correlation and the SNR (signal over what the best-scaled reference leaves).

use num_complex::Complex32;
use sluice_kernels::FftPlanCache;

/// The result of [`align_and_compare`].
#[derive(Debug, Clone, Copy)]
pub struct Comparison {
    /// The receiver's delay, seconds (negative: ahead, as a filter that drops its start-up).
    pub delay_s: f64,
    /// Normalised correlation in the voice band (1: identical up to scale).
    pub correlation: f64,
    /// Signal to error in the voice band, dB (error: what remains after the best-scaled
    /// reference is subtracted).
    pub snr_db: f64,
    /// Power of the received audio in the voice band (mean square).
    pub power: f64,
}

/// `x` (sampled at `rate`) with everything outside `low…high` Hz removed (an FFT mask over
/// the whole block; compare only away from its ends).
pub fn band_limit(x: &[f64], rate: f64, low: f64, high: f64) -> Vec<f64> {
    let n = x.len();
    if n == 0 {
        return Vec::new();
    }
    let mut spec: Vec<Complex32> = x.iter().map(|&v| Complex32::new(v as f32, 0.0)).collect();
    FftPlanCache::global().forward(n).process(&mut spec);
    for (k, v) in spec.iter_mut().enumerate() {
        let f = k.min(n - k) as f64 * rate / n as f64;
        if f < low || f > high {
            *v = Complex32::default();
        }
    }
    FftPlanCache::global().inverse(n).process(&mut spec);
    spec.iter().map(|v| f64::from(v.re) / n as f64).collect()
}

/// Correlation of `a` and `b`.
fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let ab: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let aa: f64 = a.iter().map(|x| x * x).sum();
    let bb: f64 = b.iter().map(|x| x * x).sum();
    ab / (aa * bb).sqrt().max(f64::MIN_POSITIVE)
}

/// Compares `received` (at `rate`, from `skip_s` on, the voice band `low…high` Hz) with
/// `reference(t)`, searching delays of `−max_delay_s` to `max_delay_s`.
pub fn align_and_compare(
    received: &[f32],
    rate: f64,
    reference: &dyn Fn(f64) -> f64,
    skip_s: f64,
    max_delay_s: f64,
    (low, high): (f64, f64),
) -> Comparison {
    let skip = (skip_s * rate) as usize;
    let rx: Vec<f64> = received[skip.min(received.len())..]
        .iter()
        .map(|&v| f64::from(v))
        .collect();
    let n = rx.len();
    let rb = band_limit(&rx, rate, low, high);
    // Compare the middle 80 % of the block (the mask's wrap-around stays at the ends).
    let (a, b) = (n / 10, n - n / 10);
    let reference_at = |delay: f64| {
        let r: Vec<f64> = (0..n)
            .map(|i| reference((skip + i) as f64 / rate - delay))
            .collect();
        band_limit(&r, rate, low, high)
    };
    let score = |delay: f64| correlation(&rb[a..b], &reference_at(delay)[a..b]);
    // Coarse: integer lags (either sign: a filter that drops its start-up runs ahead) on one
    // long reference.
    let max_lag = (max_delay_s * rate).ceil() as i64;
    let span = max_lag as usize;
    let long: Vec<f64> = (0..n + 2 * span)
        .map(|j| reference((skip + j) as f64 / rate - max_lag as f64 / rate))
        .collect();
    let long = band_limit(&long, rate, low, high);
    let at_lag = |lag: i64| {
        let r = &long[(max_lag - lag) as usize..][..n];
        correlation(&rb[a..b], &r[a..b])
    };
    let best_lag = (-max_lag..=max_lag)
        .max_by(|&p, &q| at_lag(p).total_cmp(&at_lag(q)))
        .unwrap_or(0);
    // Fine: golden-section search on ±1 sample.
    let (mut lo, mut hi) = (
        (best_lag as f64 - 1.0) / rate,
        (best_lag as f64 + 1.0) / rate,
    );
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..30 {
        let (x1, x2) = (hi - g * (hi - lo), lo + g * (hi - lo));
        if score(x1) > score(x2) {
            hi = x2;
        } else {
            lo = x1;
        }
    }
    let delay = (lo + hi) / 2.0;
    let r = reference_at(delay);
    let correlation = correlation(&rb[a..b], &r[a..b]);
    let power = rb[a..b].iter().map(|x| x * x).sum::<f64>() / (b - a) as f64;
    Comparison {
        delay_s: delay,
        correlation,
        snr_db: -10.0 * (1.0 - correlation * correlation).max(1e-30).log10(),
        power,
    }
}

/// Power (mean square, in the voice band `low…high` Hz) of the part of `received` (from
/// `skip_s` on) that follows `other(t − other_delay_s)`: how much of another talker leaks into
/// this channel. With `own` (this channel's talker and delay), both are fitted together
/// (least squares), so what the two talkers happen to share is not counted as a leak.
pub fn projected_power(
    received: &[f32],
    rate: f64,
    other: (&dyn Fn(f64) -> f64, f64),
    own: Option<(&dyn Fn(f64) -> f64, f64)>,
    skip_s: f64,
    (low, high): (f64, f64),
) -> f64 {
    let skip = (skip_s * rate) as usize;
    let rx: Vec<f64> = received[skip.min(received.len())..]
        .iter()
        .map(|&v| f64::from(v))
        .collect();
    let n = rx.len();
    let (a, b) = (n / 10, n - n / 10);
    let rb = band_limit(&rx, rate, low, high);
    let talker = |(f, delay): (&dyn Fn(f64) -> f64, f64)| {
        let r: Vec<f64> = (0..n)
            .map(|i| f((skip + i) as f64 / rate - delay))
            .collect();
        band_limit(&r, rate, low, high)[a..b].to_vec()
    };
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f64>();
    let r = talker(other);
    let x = &rb[a..b];
    let (rr, xr) = (dot(&r, &r), dot(x, &r));
    let alpha = match own.map(talker) {
        None => xr / rr.max(f64::MIN_POSITIVE),
        Some(o) => {
            // Normal equations of x ≈ α·r + β·o.
            let (oo, ro, xo) = (dot(&o, &o), dot(&r, &o), dot(x, &o));
            let det = rr * oo - ro * ro;
            (xr * oo - xo * ro) / det.max(f64::MIN_POSITIVE)
        }
    };
    alpha * alpha * rr / (b - a) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delayed_noisy_copy_is_found_and_measured() {
        let voice = super::super::TestVoice::for_channel(5);
        let rate = 12_000.0;
        let delay = 3.37e-3;
        let mut seed = 7u32;
        let rx: Vec<f32> = (0..6000)
            .map(|i| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let noise = (seed >> 8) as f64 / (1u32 << 24) as f64 - 0.5;
                (0.5 * voice.at(i as f64 / rate - delay) + 0.001 * noise) as f32
            })
            .collect();
        let c = align_and_compare(&rx, rate, &|t| voice.at(t), 0.05, 0.02, (300.0, 3000.0));
        assert!((c.delay_s - delay).abs() < 2e-6, "delay {}", c.delay_s);
        assert!(c.correlation > 0.999 && c.snr_db > 40.0, "{c:?}");
    }
}
