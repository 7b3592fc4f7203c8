//! Choosing and validating the partitioning: sizes and counts of the FDL levels.
//!
//! A level of size `S` with `count` partitions covers impulse-response samples
//! `[offset, offset + count * S)`, where `offset` is the sum of the previous levels' coverage.
//! Level 0 has the internal block size `n0` and runs in the callback with offset 0.
//! A larger level computes block `j` (input samples `[jS, (j+1)S)`) during the period after
//! that block arrived, i.e. it has one full period `S` as its deadline, so its first output
//! sample `jS + offset` must not be needed before the callback that ends at `(j+2)S`:
//!
//! ```text
//! offset_l >= 2 * S_l - n0        (the zero-latency constraint)
//! ```
//!
//! Sizes are powers of two, strictly increasing, level 0 = `n0`, and the levels together must
//! cover the longest impulse response.

use std::path::Path;

use crate::ConvError;

/// Largest FDL block size we schedule (2^17 samples, 2.7 s at 48 kHz).
pub const MAX_LEVEL_SIZE: usize = 1 << 17;

/// One frequency-domain delay line: `count` partitions of `size` samples each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Level {
    /// Partition (and period) size in samples, a power of two.
    pub size: usize,
    /// Number of partitions in this FDL.
    pub count: usize,
}

/// How the impulse response is cut into FDL levels.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Partitioning {
    /// Garcia-style search over FDL sizes with a static cost model (FFT ~ N log N, MAC ~ N
    /// per partition): the default.
    #[default]
    Auto,
    /// One uniform FDL of the (internal) block size: the classic uniformly partitioned
    /// convolution. Simple, but its cost grows linearly with the IR length.
    Uniform,
    /// Exactly these levels; validated (see the module docs of the constraint).
    Explicit(Vec<Level>),
    /// Measured auto-tune: time every candidate level on this machine with the cache polluted
    /// before each run and pick the partitioning with the lowest worst-case load. The result
    /// is cached in `cache` (a small text file keyed by CPU model and parameters) if given.
    Tuned {
        /// Cache file; `None` tunes every time.
        cache: Option<std::path::PathBuf>,
    },
}

/// Parses a partitioning as a command line writes it: `auto`, `uniform`, `tuned`, or explicit
/// levels `SIZExCOUNT,...` (e.g. `64x16,1024x8`).
pub fn parse_partitioning(s: &str) -> Result<Partitioning, String> {
    match s {
        "auto" => return Ok(Partitioning::Auto),
        "uniform" => return Ok(Partitioning::Uniform),
        "tuned" => return Ok(Partitioning::Tuned { cache: None }),
        _ => {}
    }
    let bad = || {
        format!("'{s}' is not a partitioning: use auto, uniform, tuned or SIZExCOUNT,... (e.g. 64x16,1024x8)")
    };
    let mut levels = Vec::new();
    for part in s.split(',') {
        let (size, count) = part.trim().split_once('x').ok_or_else(bad)?;
        let size = size.trim().parse().map_err(|_| bad())?;
        let count = count.trim().parse().map_err(|_| bad())?;
        levels.push(Level { size, count });
    }
    Ok(Partitioning::Explicit(levels))
}

impl std::str::FromStr for Partitioning {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        parse_partitioning(s)
    }
}

/// Shape information the cost model needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub inputs: usize,
    pub outputs: usize,
    pub paths: usize,
}

/// Offsets of each level (sum of previous coverage).
pub(crate) fn offsets(levels: &[Level]) -> Vec<usize> {
    let mut o = 0;
    levels
        .iter()
        .map(|l| {
            let r = o;
            o += l.size * l.count;
            r
        })
        .collect()
}

/// Validates an explicit partitioning against internal block `n0` and IR length `len`.
pub(crate) fn validate(levels: &[Level], n0: usize, len: usize) -> Result<(), ConvError> {
    let err = |s: String| Err(ConvError::Partitioning(s));
    if levels.is_empty() {
        return err("no levels given".into());
    }
    if levels[0].size != n0 {
        return err(format!(
            "the first level has size {}, it must equal the internal block size {n0}",
            levels[0].size
        ));
    }
    let offs = offsets(levels);
    for (i, l) in levels.iter().enumerate() {
        if !l.size.is_power_of_two() {
            return err(format!("level {i} has size {}, not a power of two", l.size));
        }
        if l.size > MAX_LEVEL_SIZE {
            return err(format!(
                "level {i} has size {}, above the largest supported {MAX_LEVEL_SIZE}",
                l.size
            ));
        }
        if l.count == 0 {
            return err(format!("level {i} (size {}) has zero partitions", l.size));
        }
        if i > 0 {
            if l.size <= levels[i - 1].size {
                return err(format!(
                    "level {i} has size {}, not larger than level {} (size {})",
                    l.size,
                    i - 1,
                    levels[i - 1].size
                ));
            }
            let need = 2 * l.size - n0;
            if offs[i] < need {
                return err(format!(
                    "level {i} (size {}) starts at IR offset {}, but a level of that size can only \
                     start at offset >= 2*{} - {n0} = {need}; add partitions to the levels before it",
                    l.size, offs[i], l.size
                ));
            }
        }
    }
    let covered =
        offs[levels.len() - 1] + levels[levels.len() - 1].size * levels[levels.len() - 1].count;
    if covered < len {
        return err(format!(
            "the levels cover {covered} samples, the longest impulse response has {len}"
        ));
    }
    Ok(())
}

/// The uniform partitioning.
pub(crate) fn uniform(n0: usize, len: usize) -> Vec<Level> {
    vec![Level {
        size: n0,
        count: len.div_ceil(n0).max(1),
    }]
}

/// Cost of one level per second of audio, in arbitrary units; lower is better.
pub(crate) trait LevelCost {
    /// Cost per period of a level of `size` with `count` partitions, divided by `size`.
    fn per_sample(&self, size: usize, count: usize) -> f64;
}

/// Static cost model, in nanoseconds: a real FFT of `n` points costs `FFT_UNIT * n * log2(n)`,
/// a complex MAC per packed bin costs `MAC_UNIT`, and each level-period a fixed overhead
/// (wake-up, bookkeeping). The constants are rounded from the cache-polluted timings that
/// `cargo run --release -p sluice-conv --example throughput -- 0 1 64 timings` printed on the
/// development Xeon (AVX2+FMA kernels): about 0.2 ns per `n log2 n` for FFTs of 1024 points
/// and more, about 1.1-1.3 ns per bin for MACs whose data comes from memory.
pub(crate) struct StaticCost {
    pub shape: Shape,
}

const FFT_UNIT: f64 = 0.2;
const MAC_UNIT: f64 = 1.2;

impl LevelCost for StaticCost {
    fn per_sample(&self, size: usize, count: usize) -> f64 {
        let n = (2 * size) as f64;
        let ffts = (self.shape.inputs + self.shape.outputs) as f64;
        let fft = FFT_UNIT * n * n.log2() * ffts;
        // Each partition's MAC runs over `size` packed bins, once per matrix path.
        let mac = MAC_UNIT * (size * count * self.shape.paths) as f64;
        // A fixed overhead per level and period (wake-up, bookkeeping).
        let overhead = 2000.0;
        (fft + mac + overhead) / size as f64
    }
}

/// Searches all increasing power-of-two size sequences starting at `n0`; every level but the
/// last gets the fewest partitions that satisfy the next level's offset constraint, the last
/// covers the rest of the IR. Returns the cheapest.
pub(crate) fn search(n0: usize, len: usize, cost: &dyn LevelCost) -> Vec<Level> {
    let mut sizes = Vec::new();
    let mut s = 2 * n0;
    // A level can start no earlier than 2S - n0; beyond the IR it is useless.
    while s <= MAX_LEVEL_SIZE && 2 * s - n0 < len {
        sizes.push(s);
        s *= 2;
    }
    let mut best = uniform(n0, len);
    let mut best_cost = total(&best, cost);
    let mut cur = Vec::new();
    dfs(
        n0,
        0,
        n0,
        len,
        &sizes,
        0,
        cost,
        &mut cur,
        0.0,
        &mut best,
        &mut best_cost,
    );
    best
}

fn total(levels: &[Level], cost: &dyn LevelCost) -> f64 {
    levels
        .iter()
        .map(|l| cost.per_sample(l.size, l.count))
        .sum()
}

#[allow(clippy::too_many_arguments)]
fn dfs(
    n0: usize,
    offset: usize,
    size: usize,
    len: usize,
    sizes: &[usize],
    next_idx: usize,
    cost: &dyn LevelCost,
    cur: &mut Vec<Level>,
    cur_cost: f64,
    best: &mut Vec<Level>,
    best_cost: &mut f64,
) {
    // Option 1: this level covers the rest.
    let count = (len - offset).div_ceil(size).max(1);
    let c = cur_cost + cost.per_sample(size, count);
    if c < *best_cost {
        *best_cost = c;
        *best = cur.clone();
        best.push(Level { size, count });
    }
    // Option 2: as few partitions as allowed here, then a larger level.
    for (k, &next) in sizes.iter().enumerate().skip(next_idx) {
        if next <= size {
            continue;
        }
        let need = 2 * next - n0;
        let count = need.saturating_sub(offset).div_ceil(size).max(1);
        let new_off = offset + count * size;
        if new_off >= len {
            break;
        }
        let c = cur_cost + cost.per_sample(size, count);
        if c >= *best_cost {
            continue;
        }
        cur.push(Level { size, count });
        dfs(
            n0,
            new_off,
            next,
            len,
            sizes,
            k + 1,
            cost,
            cur,
            c,
            best,
            best_cost,
        );
        cur.pop();
    }
}

/// Reads the CPU model name, the key of the tuning cache.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
        .replace(['|', '\n'], " ")
}

/// Bumped whenever the FFT or MAC kernels change, so cached tunings measured with the old
/// kernels are not reused.
const KERNELS_VERSION: u32 = 2;

/// Cache key for a tuned partitioning: machine, kernels and problem shape.
pub(crate) fn cache_key(n0: usize, len: usize, shape: Shape) -> String {
    format!(
        "{}|kernels={KERNELS_VERSION}|n0={n0}|len={len}|in={}|out={}|paths={}",
        cpu_model(),
        shape.inputs,
        shape.outputs,
        shape.paths
    )
}

/// Looks `key` up in the cache file: lines `key => size:count,size:count`.
pub(crate) fn cache_lookup(path: &Path, key: &str) -> Option<Vec<Level>> {
    let text = std::fs::read_to_string(path).ok()?;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(" => ") {
            if k == key {
                let levels: Option<Vec<Level>> = v
                    .split(',')
                    .map(|p| {
                        let (s, c) = p.split_once(':')?;
                        Some(Level {
                            size: s.trim().parse().ok()?,
                            count: c.trim().parse().ok()?,
                        })
                    })
                    .collect();
                return levels;
            }
        }
    }
    None
}

/// Appends (or replaces) `key` in the cache file. Failures are ignored: the cache is an
/// optimisation only.
pub(crate) fn cache_store(path: &Path, key: &str, levels: &[Level]) {
    let mut lines: Vec<String> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_once(" => ").map(|(k, _)| k != key).unwrap_or(false))
        .map(str::to_string)
        .collect();
    let v: Vec<String> = levels
        .iter()
        .map(|l| format!("{}:{}", l.size, l.count))
        .collect();
    lines.push(format!("{key} => {}", v.join(",")));
    let _ = std::fs::write(path, lines.join("\n") + "\n");
}

#[cfg(test)]
mod tests {
    #[test]
    fn partitionings_parse_as_written_on_a_command_line() {
        assert_eq!(parse_partitioning("auto"), Ok(Partitioning::Auto));
        assert_eq!("uniform".parse(), Ok(Partitioning::Uniform));
        assert_eq!(
            parse_partitioning("64x4, 256x8"),
            Ok(Partitioning::Explicit(vec![
                Level { size: 64, count: 4 },
                Level {
                    size: 256,
                    count: 8
                }
            ]))
        );
        for bad in ["", "fast", "64", "64x", "x4", "64x4,"] {
            assert!(parse_partitioning(bad).is_err(), "{bad}");
        }
    }

    use super::*;

    fn shape() -> Shape {
        Shape {
            inputs: 1,
            outputs: 1,
            paths: 1,
        }
    }

    #[test]
    fn auto_partitions_are_valid_and_nonuniform_for_long_irs() {
        for (n0, len) in [
            (64, 1 << 14),
            (64, 1 << 19),
            (16, 1 << 22),
            (8192, 1 << 20),
            (64, 1),
            (128, 300),
        ] {
            let levels = search(n0, len, &StaticCost { shape: shape() });
            validate(&levels, n0, len).unwrap_or_else(|e| panic!("{n0} {len}: {e} {levels:?}"));
            if len >= 1 << 16 {
                assert!(levels.len() > 1, "{n0} {len}: {levels:?}");
            }
        }
    }

    #[test]
    fn explicit_validation_names_the_problem() {
        let l = |size, count| Level { size, count };
        let e = |v: &[Level]| validate(v, 64, 4096).unwrap_err().to_string();
        assert!(e(&[]).contains("no levels"));
        assert!(e(&[l(128, 64)]).contains("internal block size 64"));
        assert!(e(&[l(64, 2), l(128, 40)]).contains("offset >= 2*128 - 64 = 192"));
        assert!(e(&[l(64, 4), l(96, 40)]).contains("not a power of two"));
        assert!(e(&[l(64, 4), l(64, 40)]).contains("not larger"));
        assert!(e(&[l(64, 3), l(128, 2)]).contains("cover 448 samples"));
        assert!(e(&[l(64, 0)]).contains("zero partitions"));
        validate(&[l(64, 3), l(128, 31)], 64, 4096).unwrap();
    }

    #[test]
    fn cache_round_trip() {
        let dir = std::env::temp_dir().join(format!("sluice-conv-cache-{}", std::process::id()));
        let levels = vec![
            Level { size: 64, count: 3 },
            Level {
                size: 128,
                count: 9,
            },
        ];
        cache_store(&dir, "a|b", &levels);
        cache_store(&dir, "c", &levels[..1]);
        assert_eq!(cache_lookup(&dir, "a|b"), Some(levels.clone()));
        assert_eq!(cache_lookup(&dir, "c"), Some(levels[..1].to_vec()));
        assert_eq!(cache_lookup(&dir, "d"), None);
        let _ = std::fs::remove_file(&dir);
    }
}
