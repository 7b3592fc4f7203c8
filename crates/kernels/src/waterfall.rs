//! The data of a spectrum picture: the rows of a waterfall (spectra over time) in bounded
//! memory, their mean spectrum, and a colour map.
//!
//! Rows come in as dB (from [`PowerSpectrum`](super::PowerSpectrum)). Up to `2·max_rows` are
//! kept; then neighbours are merged (their powers averaged) to `max_rows`, and from then on
//! each kept row stands for twice as many input rows, so a run of any length fits and every
//! input row counts equally. The mean spectrum averages every row's power.

use super::DspError;

/// Waterfall rows and their mean (see the module docs).
#[derive(Debug, Clone)]
pub struct Waterfall {
    bins: usize,
    max_rows: usize,
    /// Input rows per kept row.
    merge: u64,
    /// Kept rows, linear power, row after row.
    rows: Vec<f32>,
    /// The row being merged (linear power sums) and how many input rows it holds.
    partial: Vec<f64>,
    partial_count: u64,
    /// Sum of every input row's linear power, and their count.
    total: Vec<f64>,
    count: u64,
}

fn power(db: f32) -> f64 {
    10f64.powf(f64::from(db) / 10.0)
}

fn db(power: f64) -> f32 {
    (10.0 * power.max(1e-30).log10()) as f32
}

impl Waterfall {
    /// Rows of `bins` values; at most `2·max_rows` (and at least `max_rows` once that many
    /// came) kept.
    pub fn new(bins: usize, max_rows: usize) -> Result<Self, DspError> {
        if bins == 0 || max_rows == 0 {
            return Err(DspError::InvalidParameter {
                name: if bins == 0 { "fft_size" } else { "max_rows" },
                value: "0".into(),
                expected: "at least 1",
            });
        }
        // The most rows ever kept, reserved now so that `push` allocates nothing; the pages
        // are touched only as rows come. Where that much cannot be reserved, rows grow as
        // they come instead.
        let mut rows = Vec::new();
        if let Some(most) = max_rows.checked_mul(2).and_then(|r| r.checked_mul(bins)) {
            let _ = rows.try_reserve_exact(most);
        }
        Ok(Waterfall {
            bins,
            max_rows,
            merge: 1,
            rows,
            partial: vec![0.0; bins],
            partial_count: 0,
            total: vec![0.0; bins],
            count: 0,
        })
    }

    /// Adds the whole rows of `x` (dB, `bins` each); returns the values used.
    pub fn push(&mut self, x: &[f32]) -> usize {
        let whole = x.len() / self.bins * self.bins;
        for row in x[..whole].chunks_exact(self.bins) {
            for ((p, t), &v) in self.partial.iter_mut().zip(&mut self.total).zip(row) {
                let w = power(v);
                *p += w;
                *t += w;
            }
            self.count += 1;
            self.partial_count += 1;
            if self.partial_count == self.merge {
                let n = self.partial_count as f64;
                self.rows
                    .extend(self.partial.iter().map(|&p| (p / n) as f32));
                self.partial.fill(0.0);
                self.partial_count = 0;
                if self.rows.len() == 2 * self.max_rows * self.bins {
                    self.halve();
                }
            }
        }
        whole
    }

    fn halve(&mut self) {
        let b = self.bins;
        for r in 0..self.max_rows {
            for k in 0..b {
                self.rows[r * b + k] =
                    0.5 * (self.rows[2 * r * b + k] + self.rows[(2 * r + 1) * b + k]);
            }
        }
        self.rows.truncate(self.max_rows * b);
        self.merge *= 2;
    }

    /// Input rows so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Input rows each kept row stands for.
    pub fn rows_per_row(&self) -> u64 {
        self.merge
    }

    /// The kept rows in dB, first (oldest) first; a partly merged last row is left out.
    pub fn rows_db(&self) -> Vec<Vec<f32>> {
        self.rows
            .chunks_exact(self.bins)
            .map(|r| r.iter().map(|&p| db(f64::from(p))).collect())
            .collect()
    }

    /// The mean of every row's power, in dB (empty before the first row).
    pub fn mean_db(&self) -> Vec<f32> {
        if self.count == 0 {
            return Vec::new();
        }
        self.total
            .iter()
            .map(|&t| db(t / self.count as f64))
            .collect()
    }
}

/// An RGB colour for `level` in 0..=1 (clamped): dark blue through green to yellow, in the
/// spirit of `viridis`.
pub fn colour_map(level: f32) -> (u8, u8, u8) {
    const STOPS: [(f32, f32, f32); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if level.is_nan() {
        0.0
    } else {
        level.clamp(0.0, 1.0)
    } * 4.0;
    let i = (t as usize).min(3);
    let f = t - i as f32;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: f32, y: f32| (x + (y - x) * f).round() as u8;
    (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_merge_in_pairs_and_every_row_counts_in_the_mean() {
        let mut w = Waterfall::new(2, 3).unwrap();
        // Row r has power r + 1 in bin 0 and 1 in bin 1.
        let rows: Vec<f32> = (0..13).flat_map(|r| [db(f64::from(r + 1)), 0.0]).collect();
        assert_eq!(w.push(&rows[..5]), 4, "whole rows only");
        w.push(&rows[4..]);
        assert_eq!((w.count(), w.rows_per_row()), (13, 4));
        // Rows 1..6 merge in pairs to [1.5, 3.5, 5.5]; 7..12 come in pairs and merge again.
        let kept: Vec<f64> = w.rows_db().iter().map(|r| power(r[0])).collect();
        let want = [2.5, 6.5, 10.5];
        assert_eq!(kept.len(), 3);
        for (k, v) in kept.iter().zip(want) {
            assert!((k - v).abs() < 1e-4, "{kept:?}");
        }
        let mean = w.mean_db();
        assert!((power(mean[0]) - 7.0).abs() < 1e-4, "{mean:?}");
        assert!(mean[1].abs() < 1e-4);
        assert!(Waterfall::new(0, 1).is_err());
        assert!(Waterfall::new(1, 0).is_err());
    }

    #[test]
    fn the_colour_map_runs_from_dark_to_bright() {
        assert_eq!(colour_map(0.0), (68, 1, 84));
        assert_eq!(colour_map(1.0), (253, 231, 37));
        assert_eq!(colour_map(-3.0), colour_map(0.0));
        assert_eq!(colour_map(f32::NAN), colour_map(0.0));
        let brightness = |l: f32| {
            let (r, g, b) = colour_map(l);
            u32::from(r) + u32::from(g) + u32::from(b)
        };
        assert!((0..10).all(|k| brightness(k as f32 / 10.0) < brightness((k + 1) as f32 / 10.0)));
    }
}
