//! Latency statistics of a probe run: mean, standard deviation (the seed's "jitter"),
//! percentiles and extremes, and the latency a hop adds between two runs.

/// A summary of per-packet latencies, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Packets counted.
    pub packets: u64,
    /// Mean latency.
    pub mean: f64,
    /// Standard deviation (population): the seed's jitter.
    pub std: f64,
    /// Smallest latency.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest latency.
    pub max: f64,
}

/// The value at quantile `q` of sorted `v` (nearest rank: the smallest value with at least
/// `q` of the values at or below it).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Summary {
    /// Summarises `latencies` (µs); `None` if empty.
    pub fn of(latencies: &[f64]) -> Option<Summary> {
        if latencies.is_empty() {
            return None;
        }
        let n = latencies.len() as f64;
        let mean = latencies.iter().sum::<f64>() / n;
        let var = latencies.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let mut sorted = latencies.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        Some(Summary {
            packets: latencies.len() as u64,
            mean,
            std: var.sqrt(),
            min: sorted[0],
            p50: quantile(&sorted, 0.5),
            p99: quantile(&sorted, 0.99),
            p999: quantile(&sorted, 0.999),
            max: sorted[sorted.len() - 1],
        })
    }

    /// What one more hop added, from the run without it (`fewer`) to this one, the seed's way:
    /// the difference of the means, the jitter `sqrt(σ² − σ₀²)` (0 when this run's jitter is
    /// the smaller: independent delays only add variance), and the difference of the p99s.
    pub fn added_over(&self, fewer: &Summary) -> Added {
        Added {
            mean: self.mean - fewer.mean,
            jitter: (self.std.powi(2) - fewer.std.powi(2)).max(0.0).sqrt(),
            p99: self.p99 - fewer.p99,
        }
    }
}

/// Latency one hop added (see [`Summary::added_over`]), in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Added {
    /// Difference of the means.
    pub mean: f64,
    /// `sqrt(σ² − σ₀²)`.
    pub jitter: f64,
    /// Difference of the 99th percentiles.
    pub p99: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_known_set() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!(s.packets, 1000);
        assert!((s.mean - 500.5).abs() < 1e-9);
        let std = ((1000.0f64 * 1000.0 - 1.0) / 12.0).sqrt();
        assert!((s.std - std).abs() < 1e-9, "{} vs {std}", s.std);
        assert_eq!(
            (s.min, s.p50, s.p99, s.p999, s.max),
            (1.0, 500.0, 990.0, 999.0, 1000.0)
        );
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn added_latency_is_the_seeds_arithmetic() {
        // The seed: 4.3 ms / 0.434 ms with two machines, 6.5 / 0.625 with three: 2.2 ms and
        // 0.45 ms added by the third.
        let two = Summary {
            packets: 1,
            mean: 4300.0,
            std: 434.0,
            min: 0.0,
            p50: 0.0,
            p99: 0.0,
            p999: 0.0,
            max: 0.0,
        };
        let three = Summary {
            mean: 6500.0,
            std: 625.0,
            ..two
        };
        let a = three.added_over(&two);
        assert!((a.mean - 2200.0).abs() < 1e-9);
        assert!((a.jitter - 449.7).abs() < 0.1, "{}", a.jitter);
    }
}
