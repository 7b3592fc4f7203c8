//! Every mode against an f64 direct-convolution reference.

mod common;

use common::*;
use rand::seq::SliceRandom;
use sluice_conv::{
    Convolver, ConvolverConfig, IrMatrix, LatePolicy, Level, Partitioning, Scheduling,
};

fn threaded() -> Scheduling {
    Scheduling::Threaded {
        pin_cores: None,
        realtime_priority: None,
    }
}

fn one_case(
    seed: u64,
    ir_len: usize,
    sig_len: usize,
    scheduling: Scheduling,
    partitioning: Partitioning,
    block: usize,
) {
    let mut r = rng(seed);
    let ir = decaying_noise(&mut r, ir_len);
    let irs = IrMatrix::mono_per_channel(1, &ir);
    let x = vec![noise(&mut r, sig_len)];
    let cfg = ConvolverConfig {
        block_size: block,
        partitioning: partitioning.clone(),
        scheduling: scheduling.clone(),
        ..Default::default()
    };
    let mut conv = Convolver::new(cfg, &irs).unwrap();
    let total = sig_len + ir_len - 1;
    let got = run(&mut conv, &x, 1, total);
    let pos = positions(total, 600, &mut r);
    let what = format!(
        "ir {ir_len} sig {sig_len} block {block} {scheduling:?} {partitioning:?} levels {:?}",
        conv.levels()
    );
    check(&irs, &x, &got, &pos, &what);
}

#[test]
fn all_modes_short_and_medium_irs() {
    let mut r = rng(1);
    let blocks = [16, 32, 64, 128, 256, 48, 96, 100, 17, 1000];
    let modes = [
        Scheduling::SingleThread,
        Scheduling::Cooperative,
        threaded(),
    ];
    for (idx, &len) in [1usize, 2, 63, 64, 65, 700, 4096, 20_000]
        .iter()
        .enumerate()
    {
        for (m, mode) in modes.iter().enumerate() {
            for part in [Partitioning::Auto, Partitioning::Uniform] {
                let block = *blocks.choose(&mut r).unwrap();
                one_case(
                    100 + (idx * 10 + m) as u64,
                    len,
                    3000,
                    mode.clone(),
                    part,
                    block,
                );
            }
        }
    }
}

#[test]
fn ir_2_16_every_mode() {
    for (i, mode) in [
        Scheduling::SingleThread,
        Scheduling::Cooperative,
        threaded(),
    ]
    .into_iter()
    .enumerate()
    {
        one_case(
            7 + i as u64,
            1 << 16,
            2000,
            mode,
            Partitioning::Auto,
            [64, 128, 32][i],
        );
    }
}

#[test]
fn ir_2_20_single_thread() {
    one_case(
        9,
        1 << 20,
        1500,
        Scheduling::SingleThread,
        Partitioning::Auto,
        512,
    );
}

#[test]
fn ir_2_20_every_mode() {
    for (i, mode) in [Scheduling::Cooperative, threaded()]
        .into_iter()
        .enumerate()
    {
        one_case(19 + i as u64, 1 << 20, 1500, mode, Partitioning::Auto, 64);
    }
}

#[test]
fn explicit_partitioning_with_slack_offsets() {
    // Offsets larger than the minimum 2S - n0 exercise the extra output slots.
    let levels = vec![
        Level { size: 64, count: 9 },
        Level {
            size: 256,
            count: 6,
        },
        Level {
            size: 1024,
            count: 12,
        },
    ];
    for mode in [
        Scheduling::SingleThread,
        Scheduling::Cooperative,
        threaded(),
    ] {
        one_case(
            31,
            13_000,
            4000,
            mode,
            Partitioning::Explicit(levels.clone()),
            64,
        );
    }
}

#[test]
fn tuned_partitioning_is_valid_and_exact() {
    let cache = std::env::temp_dir().join(format!("sluice-conv-tune-{}.txt", std::process::id()));
    one_case(
        41,
        30_000,
        2000,
        Scheduling::SingleThread,
        Partitioning::Tuned {
            cache: Some(cache.clone()),
        },
        64,
    );
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(text.contains("n0=64|len=30000"), "{text}");
    // Second run comes from the cache.
    one_case(
        41,
        30_000,
        2000,
        threaded(),
        Partitioning::Tuned {
            cache: Some(cache.clone()),
        },
        64,
    );
    let _ = std::fs::remove_file(cache);
}

#[test]
fn true_stereo_and_sparse_matrix() {
    let mut r = rng(5);
    let irs = IrMatrix::true_stereo(
        decaying_noise(&mut r, 5000),
        decaying_noise(&mut r, 3000),
        decaying_noise(&mut r, 7000),
        decaying_noise(&mut r, 100),
    )
    .unwrap();
    let x = vec![noise(&mut r, 4000), noise(&mut r, 4000)];
    for mode in [
        Scheduling::SingleThread,
        Scheduling::Cooperative,
        threaded(),
    ] {
        let cfg = ConvolverConfig {
            block_size: 64,
            scheduling: mode.clone(),
            ..Default::default()
        };
        let mut conv = Convolver::new(cfg, &irs).unwrap();
        let total = 4000 + 7000 - 1;
        let got = run(&mut conv, &x, 2, total);
        check(
            &irs,
            &x,
            &got,
            &(0..total).collect::<Vec<_>>(),
            &format!("true stereo {mode:?}"),
        );
    }
    // 3 inputs x 2 outputs, sparse, different lengths.
    let mut m = IrMatrix::new(3, 2);
    m.set(0, 0, decaying_noise(&mut r, 9000)).unwrap();
    m.set(2, 0, decaying_noise(&mut r, 50)).unwrap();
    m.set(1, 1, decaying_noise(&mut r, 2000)).unwrap();
    let x = vec![
        noise(&mut r, 3000),
        noise(&mut r, 3000),
        noise(&mut r, 3000),
    ];
    let mut conv = Convolver::new(config(32), &m).unwrap();
    let total = 3000 + 9000 - 1;
    let got = run(&mut conv, &x, 2, total);
    check(&m, &x, &got, &(0..total).collect::<Vec<_>>(), "sparse 3x2");
}

#[test]
fn unit_impulse_is_identity_with_zero_latency() {
    let mut r = rng(3);
    for &block in &[16usize, 64, 256, 96, 4096, 8192] {
        for delay in [0usize, 1, 5000] {
            let mut ir = vec![0.0f32; delay + 1];
            ir[delay] = 1.0;
            let irs = IrMatrix::mono_per_channel(1, &ir);
            let mut conv = Convolver::new(
                ConvolverConfig {
                    block_size: block,
                    scheduling: Scheduling::SingleThread,
                    ..Default::default()
                },
                &irs,
            )
            .unwrap();
            assert_eq!(conv.latency(), 0);
            let x = noise(&mut r, 3 * block + 7);
            let mut ib = vec![0.0f32; block];
            let mut ob = vec![0.0f32; block];
            let mut y = Vec::new();
            for c in 0..(x.len() + delay).div_ceil(block) + 1 {
                ib.fill(0.0);
                for (i, v) in ib.iter_mut().enumerate() {
                    if let Some(s) = x.get(c * block + i) {
                        *v = *s;
                    }
                }
                conv.process(&[&ib], &mut [&mut ob]).unwrap();
                y.extend_from_slice(&ob);
            }
            for (n, &got) in y.iter().enumerate() {
                let want = if n >= delay {
                    x.get(n - delay).copied().unwrap_or(0.0)
                } else {
                    0.0
                };
                assert!(
                    (got - want).abs() <= 1e-6,
                    "block {block} delay {delay} n {n}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn chunk_invariance_across_block_sizes() {
    // The same signal through different host block sizes gives the same signal.
    let mut r = rng(11);
    let ir = decaying_noise(&mut r, 6000);
    let irs = IrMatrix::mono_per_channel(1, &ir);
    let x = vec![noise(&mut r, 5000)];
    let total = 5000 + 6000 - 1;
    let mut base: Option<Vec<f32>> = None;
    for &block in &[64usize, 16, 100, 48, 512, 33] {
        let mut conv = Convolver::new(config(block), &irs).unwrap();
        let y = run(&mut conv, &x, 1, total).remove(0);
        if let Some(b) = &base {
            let max = b
                .iter()
                .zip(&y)
                .map(|(a, c)| (a - c).abs())
                .fold(0.0f32, f32::max);
            assert!(max < 1e-5, "block {block}: max diff {max}");
        } else {
            base = Some(y);
        }
    }
}

#[test]
fn modes_are_bit_identical() {
    let mut r = rng(12);
    let ir = decaying_noise(&mut r, 20_000);
    let irs = IrMatrix::mono_per_channel(2, &ir);
    let x = vec![noise(&mut r, 8000), noise(&mut r, 8000)];
    let total = 28_000;
    let outs: Vec<_> = [
        Scheduling::SingleThread,
        Scheduling::Cooperative,
        threaded(),
    ]
    .into_iter()
    .map(|s| {
        let mut c = Convolver::new(
            ConvolverConfig {
                block_size: 32,
                scheduling: s,
                ..Default::default()
            },
            &irs,
        )
        .unwrap();
        run(&mut c, &x, 2, total)
    })
    .collect();
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
}

#[test]
fn partial_sum_policy_stays_exact_when_workers_keep_up() {
    let mut r = rng(13);
    let irs = IrMatrix::mono_per_channel(1, &decaying_noise(&mut r, 10_000));
    let x = vec![noise(&mut r, 2000)];
    let cfg = ConvolverConfig {
        block_size: 256,
        late_policy: LatePolicy::PartialSum,
        ..Default::default()
    };
    let mut conv = Convolver::new(cfg, &irs).unwrap();
    let total: usize = 12_000;
    // Paced at roughly real time (256 samples at 48 kHz = 5.3 ms) so workers can keep up.
    let mut y = Vec::new();
    let mut ib = vec![0.0f32; 256];
    let mut ob = vec![0.0f32; 256];
    for c in 0..total.div_ceil(256) {
        ib.fill(0.0);
        for (i, v) in ib.iter_mut().enumerate() {
            if let Some(s) = x[0].get(c * 256 + i) {
                *v = *s;
            }
        }
        conv.process(&[&ib], &mut [&mut ob]).unwrap();
        y.extend_from_slice(&ob);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let st = conv.stats();
    // On a loaded machine a worker can still be late; then PartialSum must have counted it.
    if st.late_periods == 0 {
        check(
            &irs,
            &x,
            &[y],
            &(0..total).collect::<Vec<_>>(),
            "partial sum",
        );
    } else {
        assert!(st.late_per_level.iter().sum::<u64>() > 0);
    }
}
