//! Where to cut a row of nodes into contiguous groups, one thread and one core each, from a
//! model of the work: each node's busy seconds, the bytes that would cross each possible cut,
//! and the rate at which one core passes bytes to another.
//!
//! A group's thread takes as long as its nodes' busy time; a cut behaves like one more stage of
//! the pipeline, taking as long as its bytes need at the cross-core rate; the whole takes as
//! long as its slowest stage (see `auto.rs` for the measurements behind this). Finding the
//! grouping with the smallest slowest stage is the linear partition problem, solved exactly by
//! dynamic programming over (groups, prefix) in O(groups × nodes²).

/// Another group (another core) is only worth its wake-ups, its spinning and the core it
/// takes from the rest of the machine if it shortens the estimate by more than this share: of
/// the groupings whose estimate is within this share of the best, the one with the fewest
/// groups is chosen.
const GROUP_MARGIN: f64 = 0.1;

/// What the model knows of a row of nodes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Model<'a> {
    /// Busy seconds of each node, in graph order.
    pub busy: &'a [f64],
    /// `crossing[j]`: the bytes that would cross a cut before node `j` (`crossing[0]` unused).
    pub crossing: &'a [f64],
    /// Bytes per second one core passes to another.
    pub bytes_per_sec: f64,
}

/// A grouping and its estimate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grouping {
    /// The index of the first node of every group but the first, ascending (empty: one group).
    pub cuts: Vec<usize>,
    /// The estimated seconds of the slowest stage (a group's work or a cut's transfer).
    pub estimate: f64,
}

impl Model<'_> {
    /// The seconds a cut before node `j` needs.
    fn transfer(&self, j: usize) -> f64 {
        self.crossing.get(j).copied().unwrap_or(0.0) / self.bytes_per_sec
    }

    /// The estimate of a grouping given by its cuts: its slowest group or cut.
    pub(crate) fn estimate(&self, cuts: &[usize]) -> f64 {
        let mut bounds = Vec::with_capacity(cuts.len() + 2);
        bounds.push(0);
        bounds.extend_from_slice(cuts);
        bounds.push(self.busy.len());
        let work = bounds
            .windows(2)
            .map(|w| self.busy[w[0]..w[1]].iter().sum::<f64>())
            .fold(0.0, f64::max);
        cuts.iter().map(|&j| self.transfer(j)).fold(work, f64::max)
    }

    /// The best grouping into at most `max_groups` groups: the fewest groups whose estimate is
    /// within [`GROUP_MARGIN`] of the best possible, and among those cuts, the ones that spread
    /// the work most evenly (when the transfer is the slowest stage, every cut is as fast, and
    /// a balanced one leaves each core the most slack).
    pub(crate) fn best(&self, max_groups: usize) -> Grouping {
        let n = self.busy.len();
        let max_groups = max_groups.clamp(1, n.max(1));
        if n < 2 || max_groups < 2 {
            return Grouping {
                cuts: Vec::new(),
                estimate: self.busy.iter().sum(),
            };
        }
        let prefix = self.prefix();
        // slowest[g - 1][i]: the smallest slowest stage of the first i nodes in g groups.
        let mut slowest = vec![prefix.clone()];
        for g in 2..=max_groups {
            let prev = &slowest[g - 2];
            let mut row = vec![f64::INFINITY; n + 1];
            for (i, slot) in row.iter_mut().enumerate().skip(g) {
                *slot = (g - 1..i)
                    .map(|j| prev[j].max(self.transfer(j)).max(prefix[i] - prefix[j]))
                    .fold(f64::INFINITY, f64::min);
            }
            slowest.push(row);
        }
        let best = slowest
            .iter()
            .map(|row| row[n])
            .fold(f64::INFINITY, f64::min);
        let groups = slowest
            .iter()
            .position(|row| row[n] <= best * (1.0 + GROUP_MARGIN))
            .map_or(1, |g| g + 1);
        let bound = slowest[groups - 1][n];
        let cuts = self.balanced(groups, bound, &prefix);
        Grouping {
            estimate: self.estimate(&cuts),
            cuts,
        }
    }

    /// `prefix[i]`: the busy seconds of the first `i` nodes.
    fn prefix(&self) -> Vec<f64> {
        let mut prefix = Vec::with_capacity(self.busy.len() + 1);
        prefix.push(0.0);
        let mut sum = 0.0;
        for b in self.busy {
            sum += b;
            prefix.push(sum);
        }
        prefix
    }

    /// The cuts into `groups` groups with the least work in the busiest group, among those
    /// whose every cut transfers within `bound` seconds (one grouping whose slowest stage is
    /// `bound` exists, so the result's slowest stage is `bound` too).
    fn balanced(&self, groups: usize, bound: f64, prefix: &[f64]) -> Vec<usize> {
        let n = self.busy.len();
        // A little slack, so that sums added in another order still pass.
        let allowed = |j: usize| self.transfer(j) <= bound * (1.0 + 1e-9);
        // heaviest[g - 1][i] and where its last group starts.
        let mut heaviest = vec![prefix.to_vec()];
        let mut start = vec![vec![0usize; n + 1]];
        for g in 2..=groups {
            let prev = &heaviest[g - 2];
            let mut row = vec![f64::INFINITY; n + 1];
            let mut from = vec![0usize; n + 1];
            for i in g..=n {
                for j in (g - 1..i).filter(|&j| allowed(j)) {
                    let h = prev[j].max(prefix[i] - prefix[j]);
                    if h < row[i] {
                        row[i] = h;
                        from[i] = j;
                    }
                }
            }
            heaviest.push(row);
            start.push(from);
        }
        let mut cuts = Vec::with_capacity(groups - 1);
        let mut end = n;
        for g in (2..=groups).rev() {
            end = start[g - 1][end];
            cuts.push(end);
        }
        cuts.reverse();
        cuts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every grouping of `n` nodes into at most `max_groups` contiguous groups, as cut lists.
    fn every_grouping(n: usize, max_groups: usize) -> Vec<Vec<usize>> {
        (0u32..1 << (n - 1))
            .map(|mask| (1..n).filter(|j| mask & (1 << (j - 1)) != 0).collect())
            .filter(|cuts: &Vec<usize>| cuts.len() < max_groups)
            .collect()
    }

    /// The optimum by brute force: the best estimate with at most `max_groups` groups, and the
    /// fewest groups that come within the margin of it.
    fn brute_force(model: &Model<'_>, max_groups: usize) -> (f64, usize) {
        let all = every_grouping(model.busy.len(), max_groups);
        let best = all
            .iter()
            .map(|c| model.estimate(c))
            .fold(f64::INFINITY, f64::min);
        let fewest = all
            .iter()
            .filter(|c| model.estimate(c) <= best * (1.0 + GROUP_MARGIN))
            .map(|c| c.len() + 1)
            .min()
            .unwrap_or(1);
        (best, fewest)
    }

    /// A small deterministic generator, so that the synthetic machines are the same every run.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Synthetic 8- and 16-core machines fed with rows of 16 nodes of uneven cost (a few heavy
    /// filters among cheap copies) and uneven edges: the chosen grouping is as fast as the best
    /// of all 2^15 groupings, uses no more groups than needed to come within the margin, and
    /// never more groups than cores.
    #[test]
    fn the_grouping_matches_brute_force_on_8_and_16_cores() {
        let mut rng = Lcg(7);
        for cores in [8, 16] {
            for round in 0..40 {
                let n = 16;
                let busy: Vec<f64> = (0..n)
                    .map(|_| {
                        let heavy = rng.next() < 0.25;
                        1e-3 * if heavy {
                            5.0 + 10.0 * rng.next()
                        } else {
                            rng.next()
                        }
                    })
                    .collect();
                let crossing: Vec<f64> = (0..n).map(|_| 4e6 + 60e6 * rng.next()).collect();
                let bytes_per_sec = [2e9, 5.5e9, 20e9][round % 3];
                let model = Model {
                    busy: &busy,
                    crossing: &crossing,
                    bytes_per_sec,
                };
                let got = model.best(cores);
                let (best, fewest) = brute_force(&model, cores);
                let context = format!("{cores} cores, round {round}: {got:?}");
                assert!(got.cuts.windows(2).all(|w| w[0] < w[1]), "{context}");
                assert!(got.cuts.iter().all(|&j| (1..n).contains(&j)), "{context}");
                assert!(got.cuts.len() < cores, "{context}");
                assert_eq!(got.cuts.len() + 1, fewest, "{context}");
                assert!(
                    got.estimate <= best * (1.0 + GROUP_MARGIN) * (1.0 + 1e-9),
                    "{context}, best {best}"
                );
                assert!((got.estimate - model.estimate(&got.cuts)).abs() < 1e-12);
            }
        }
    }

    /// A long row of equal nodes with cheap edges on 16 cores is spread over all of them, in
    /// groups of equal size; on 8 cores over 8.
    #[test]
    fn equal_nodes_with_cheap_edges_fill_every_core() {
        let busy = vec![1e-3; 32];
        let crossing = vec![1e3; 32];
        for cores in [8, 16] {
            let model = Model {
                busy: &busy,
                crossing: &crossing,
                bytes_per_sec: 5.5e9,
            };
            let got = model.best(cores);
            let want: Vec<usize> = (1..cores).map(|g| g * 32 / cores).collect();
            assert_eq!(got.cuts, want, "{cores} cores");
        }
    }

    /// When the transfer bounds every grouping, more cores do not help: the row is cut once,
    /// in the middle of its work.
    #[test]
    fn a_transfer_bound_row_is_cut_once_in_the_middle() {
        let busy = vec![1e-3; 13];
        let crossing = vec![40e6; 13];
        let model = Model {
            busy: &busy,
            crossing: &crossing,
            bytes_per_sec: 5.5e9,
        };
        let got = model.best(16);
        assert_eq!(got.cuts.len(), 1, "{got:?}");
        assert!(got.cuts[0].abs_diff(13 / 2) <= 1, "{got:?}");
    }

    #[test]
    fn one_node_or_one_core_is_one_group() {
        let model = Model {
            busy: &[1.0],
            crossing: &[0.0],
            bytes_per_sec: 5.5e9,
        };
        assert!(model.best(16).cuts.is_empty());
        let model = Model {
            busy: &[1.0, 1.0],
            crossing: &[0.0, 0.0],
            bytes_per_sec: 5.5e9,
        };
        assert!(model.best(1).cuts.is_empty());
        assert_eq!(model.best(2).cuts, [1]);
    }
}
