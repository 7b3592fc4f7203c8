//! The CPU backend: the engine's worker threads move the bytes themselves, with strategies
//! chosen by size (see [`Strategy`]) and cache-blocked tiles for rotations.

mod copy;
mod fill;
mod keyed;
mod tile;
#[cfg(target_arch = "x86_64")]
mod transpose512;

pub use copy::Method;

use crate::engine::Backend;
use crate::error::CopyError;
use crate::op::{ItemSize, Op};

/// Size thresholds and CPU features of the contiguous kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategy {
    /// Pieces of at least this many bytes use `rep movsb` (below: inline `memcpy`).
    pub rep_movsb_from: usize,
    /// Operations of at least this many bytes use non-temporal stores.
    pub non_temporal_from: usize,
    /// Use `rep movsb` at all (the CPU reports ERMS).
    pub rep_movsb: bool,
    /// AVX-512F is available.
    pub avx512: bool,
    /// AVX2 is available.
    pub avx2: bool,
    /// Large fills use non-temporal stores (else `memset` / the doubling copy).
    pub nt_fill: bool,
}

/// Bytes of the last-level cache, from sysfs (32 MiB when unknown).
pub fn last_level_cache_bytes() -> usize {
    let mut best = 0;
    for i in 0..8 {
        let path = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
        let Ok(s) = std::fs::read_to_string(path) else {
            continue;
        };
        let s = s.trim();
        let (num, mult) = match s.strip_suffix('K') {
            Some(n) => (n, 1024),
            None => match s.strip_suffix('M') {
                Some(n) => (n, 1024 * 1024),
                None => (s, 1),
            },
        };
        if let Ok(v) = num.parse::<usize>() {
            best = best.max(v * mult);
        }
    }
    if best == 0 {
        32 << 20
    } else {
        best
    }
}

impl Strategy {
    /// The strategy for this CPU: features detected at run time, non-temporal stores from
    /// three quarters of the last-level cache on (as glibc does), `rep movsb` from 2 KiB,
    /// fills through `memset` (faster than streaming stores where measured).
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        let (avx512, avx2, erms) = (
            std::is_x86_feature_detected!("avx512f"),
            std::is_x86_feature_detected!("avx2"),
            std::is_x86_feature_detected!("ermsb"),
        );
        #[cfg(not(target_arch = "x86_64"))]
        let (avx512, avx2, erms) = (false, false, false);
        Strategy {
            rep_movsb_from: 2048,
            non_temporal_from: last_level_cache_bytes() / 4 * 3,
            rep_movsb: erms,
            avx512,
            avx2,
            // Measured on Zen 4: glibc's memset (rep stosb) beats streaming stores.
            nt_fill: false,
        }
    }
}

/// The CPU kernels behind every operation (used by the CPU backend, by the caller for
/// operations below break-even, and for operations another backend does not support).
#[derive(Debug, Clone)]
pub struct Kernels {
    strategy: Strategy,
}

impl Kernels {
    /// Kernels with the detected [`Strategy`].
    pub fn detect() -> Self {
        Kernels {
            strategy: Strategy::detect(),
        }
    }

    /// Kernels with this strategy.
    pub fn with_strategy(strategy: Strategy) -> Self {
        Kernels { strategy }
    }

    /// The strategy.
    pub fn strategy(&self) -> &Strategy {
        &self.strategy
    }

    /// Runs `op` on the calling thread.
    ///
    /// # Safety
    ///
    /// As for [`Backend::execute`]: `op` validated against the regions at `src` and `dst`,
    /// which nothing else accesses meanwhile.
    pub unsafe fn run(&self, op: &Op, src: *const u8, dst: *mut u8) {
        let s = &self.strategy;
        // SAFETY: (all arms) validation put every byte touched inside the regions and kept
        // what is written apart from what is read; each kernel's contract is that.
        unsafe {
            match op {
                Op::Copy {
                    src: so,
                    dst: d,
                    len,
                } => copy::copy(s, dst.add(*d), src.add(*so), *len),
                Op::Fill {
                    dst: d,
                    len,
                    pattern,
                } => fill::fill(s, dst.add(*d), *len, pattern.as_bytes()),
                Op::Copy2d {
                    src: sp,
                    dst: dp,
                    row_bytes,
                    rows,
                } => tile::copy_2d(
                    s,
                    dst.add(dp.offset),
                    dp.stride,
                    src.add(sp.offset),
                    sp.stride,
                    *row_bytes,
                    *rows,
                ),
                Op::Rotate {
                    src: sp,
                    dst: dp,
                    width,
                    height,
                    item,
                    transform,
                } => {
                    let r = tile::Rotation {
                        width: *width,
                        height: *height,
                        src_stride: sp.stride,
                        dst_stride: dp.stride,
                        transform: *transform,
                    };
                    let (from, to) = (src.add(sp.offset), dst.add(dp.offset));
                    match item {
                        ItemSize::B1 => tile::rotate::<u8>(s, from, to, &r),
                        ItemSize::B2 => tile::rotate::<u16>(s, from, to, &r),
                        ItemSize::B4 => tile::rotate::<u32>(s, from, to, &r),
                        ItemSize::B8 => tile::rotate::<u64>(s, from, to, &r),
                        ItemSize::B16 => tile::rotate::<u128>(s, from, to, &r),
                    }
                }
                Op::KeyedCopy {
                    src: so,
                    dst: d,
                    len,
                    item,
                    key,
                } => {
                    let (from, to) = (src.add(*so), dst.add(*d));
                    let n = len / item.bytes();
                    match item {
                        ItemSize::B1 => keyed::keyed_copy(to, from, n, key[0]),
                        ItemSize::B2 => {
                            keyed::keyed_copy(to, from, n, u16::from_ne_bytes([key[0], key[1]]))
                        }
                        ItemSize::B4 => {
                            keyed::keyed_copy(to, from, n, u32::from_ne_bytes(take(key)))
                        }
                        ItemSize::B8 => {
                            keyed::keyed_copy(to, from, n, u64::from_ne_bytes(take(key)))
                        }
                        ItemSize::B16 => keyed::keyed_copy(to, from, n, u128::from_ne_bytes(*key)),
                    }
                }
                Op::Sg { src: sl, dst: dl } => {
                    let total = op.bytes();
                    let (mut si, mut so) = (0usize, 0usize);
                    for d in dl {
                        let mut done = 0;
                        while done < d.len {
                            while sl[si].len == so {
                                si += 1;
                                so = 0;
                            }
                            let n = (d.len - done).min(sl[si].len - so);
                            let m = s.method(n, total);
                            copy::copy_with(
                                s,
                                m,
                                dst.add(d.offset + done),
                                src.add(sl[si].offset + so),
                                n,
                            );
                            done += n;
                            so += n;
                        }
                    }
                }
            }
        }
    }
}

fn take<const N: usize>(key: &[u8; 16]) -> [u8; N] {
    let mut k = [0u8; N];
    k.copy_from_slice(&key[..N]);
    k
}

/// The CPU backend: the engine's workers run the [`Kernels`] themselves.
#[derive(Debug, Clone)]
pub struct CpuBackend {
    kernels: Kernels,
}

impl CpuBackend {
    /// A CPU backend with these kernels.
    pub fn new(kernels: Kernels) -> Self {
        CpuBackend { kernels }
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    unsafe fn execute(&self, op: &Op, src: *const u8, dst: *mut u8) -> Result<(), CopyError> {
        // SAFETY: the same contract as `Backend::execute`.
        unsafe { self.kernels.run(op, src, dst) };
        Ok(())
    }
}
