//! What a block remembers of its input: declared per block type, for warm standbys, which
//! re-prime a partition of finite-memory blocks from resent input.

/// What a block remembers of its input stream: whether a fresh instance, started part-way
/// through a stream, reproduces an uninterrupted run's outputs (a warm standby re-primes
/// partitions of such blocks from resent input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// A fresh instance started at input offset `s` (a multiple of `decimation`) produces
    /// outputs numbered from `s / decimation`; its output `j` is bit-identical to the
    /// uninterrupted run's output `j` whenever `j * decimation >= s + history`.
    Finite {
        /// Input items per output item.
        decimation: u64,
        /// Input items before an output's own that it depends on.
        history: u64,
    },
    /// State that depends on the whole past (IIR, AGC, de-emphasis, counters, ...).
    Infinite,
}

/// The memory of a chain of blocks (each feeding the next): total decimation and the lag, in
/// output items, after which a fresh chain started at an input offset `s` that is a multiple
/// of the total decimation gives the uninterrupted run's outputs (output `j` is exact when
/// `j >= s / decimation + lag`). `None` if any is infinite (or the decimation overflows).
///
/// Stage `k` starts at its input offset `s_k` and is exact from its output
/// `s_k / D_k + lag_k`, where `lag_k = ceil((lag_{k-1} + H_k) / D_k)` (`lag_0 = 0`).
pub fn chain_memory(chain: &[Memory]) -> Option<(u64, u64)> {
    let mut decimation: u64 = 1;
    let mut lag: u64 = 0;
    for stage in chain {
        match *stage {
            Memory::Finite {
                decimation: d,
                history,
            } => {
                if d == 0 {
                    return None;
                }
                lag = lag.checked_add(history)?.div_ceil(d);
                decimation = decimation.checked_mul(d)?;
            }
            Memory::Infinite => return None,
        }
    }
    Some((decimation, lag))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finite(decimation: u64, history: u64) -> Memory {
        Memory::Finite {
            decimation,
            history,
        }
    }

    #[test]
    fn chain_memory_adds_lags_through_decimations() {
        assert_eq!(chain_memory(&[]), Some((1, 0)));
        assert_eq!(chain_memory(&[finite(1, 0)]), Some((1, 0)));
        // One FIR: 126 items of history at decimation 4 → 32 outputs (31.5 rounded up).
        assert_eq!(chain_memory(&[finite(4, 126)]), Some((4, 32)));
        assert_eq!(chain_memory(&[finite(4, 128)]), Some((4, 32)));
        assert_eq!(chain_memory(&[finite(4, 129)]), Some((4, 33)));
        // FIR (D 2, H 10) → channelizer (D 8, H 56) → FM (D 1, H 1):
        // ceil(10/2) = 5, ceil((5 + 56)/8) = 8, 8 + 1 = 9.
        assert_eq!(
            chain_memory(&[finite(2, 10), finite(8, 56), finite(1, 1)]),
            Some((16, 9))
        );
        // History after a decimation costs whole outputs; before it, a fraction of one.
        assert_eq!(chain_memory(&[finite(8, 0), finite(1, 9)]), Some((8, 9)));
        assert_eq!(chain_memory(&[finite(1, 9), finite(8, 0)]), Some((8, 2)));
    }

    #[test]
    fn chain_memory_is_none_for_infinite_or_absurd_stages() {
        assert_eq!(chain_memory(&[finite(2, 3), Memory::Infinite]), None);
        assert_eq!(chain_memory(&[Memory::Infinite]), None);
        assert_eq!(chain_memory(&[finite(0, 3)]), None);
        assert_eq!(
            chain_memory(&[finite(1 << 40, 0), finite(1 << 40, 0)]),
            None
        );
    }
}
