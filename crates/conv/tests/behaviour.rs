//! Errors, reset, threaded stress, IR change with crossfade.

mod common;

use common::*;
use sluice_conv::{
    ConvError, Convolver, ConvolverConfig, IrMatrix, Level, Partitioning, Scheduling,
};

fn threaded() -> Scheduling {
    Scheduling::Threaded {
        pin_cores: None,
        realtime_priority: None,
    }
}

#[test]
fn invalid_configs_are_rejected_with_clear_messages() {
    let ok = IrMatrix::mono_per_channel(1, &[1.0, 0.5]);
    let err = |cfg: ConvolverConfig, irs: &IrMatrix| {
        Convolver::new(cfg, irs)
            .err()
            .expect("must fail")
            .to_string()
    };
    assert!(
        err(config(64), &IrMatrix::mono_per_channel(1, &[])).contains("impulse response is empty")
    );
    assert!(err(config(64), &IrMatrix::mono_per_channel(1, &[0.0; 10]))
        .contains("impulse response is silent (all zeros)"));
    assert!(
        err(config(64), &IrMatrix::mono_per_channel(1, &[1.0, f32::NAN]))
            .contains("non-finite sample at index 1")
    );
    let long = vec![0.5f32; 5_000_000];
    assert!(err(config(64), &IrMatrix::mono_per_channel(1, &long))
        .contains("impulse response of 5000000 samples is longer than the supported 4194304"));
    assert!(err(config(0), &ok).contains("block size 0"));
    assert!(err(config(8193), &ok).contains("block size 8193"));
    assert!(err(config(64), &IrMatrix::new(2, 2)).contains("no impulse responses"));
    assert!(err(config(64), &IrMatrix::new(0, 2)).contains("no channels"));
    let bad_part = ConvolverConfig {
        partitioning: Partitioning::Explicit(vec![Level { size: 64, count: 1 }]),
        ..config(64)
    };
    assert!(err(bad_part, &IrMatrix::mono_per_channel(1, &[1.0; 100])).contains("cover 64 samples"));
    let mut m = IrMatrix::new(1, 1);
    assert!(matches!(
        m.set(1, 0, vec![1.0]),
        Err(ConvError::EntryOutOfRange { .. })
    ));
    assert!(matches!(
        m.set(0, 0, vec![0.0]),
        Err(ConvError::SilentIr { .. })
    ));
    assert!(IrMatrix::true_stereo(vec![1.0], vec![], vec![1.0], vec![1.0]).is_err());
    assert!(IrMatrix::per_channel(vec![]).is_err());

    // process() shape errors, before any state changes.
    let mut c = Convolver::new(config(16), &IrMatrix::mono_per_channel(2, &[1.0])).unwrap();
    let x = [0.0f32; 16];
    let mut y = [0.0f32; 16];
    let mut y2 = [0.0f32; 16];
    let e = c
        .process(&[&x], &mut [&mut y, &mut y2])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "process() got 1 input channels, expected 2");
    let e = c.process(&[&x, &x], &mut [&mut y]).unwrap_err().to_string();
    assert_eq!(e, "process() got 1 output channels, expected 2");
    let short = [0.0f32; 15];
    let e = c
        .process(&[&x, &short], &mut [&mut y, &mut y2])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "input channel 1 has 15 samples, expected the block size 16"
    );
    assert_eq!(c.stats().periods, 0);
}

#[test]
fn reset_restores_initial_output() {
    let mut r = rng(21);
    let irs = IrMatrix::mono_per_channel(2, &decaying_noise(&mut r, 9000));
    let x = vec![noise(&mut r, 6000), noise(&mut r, 6000)];
    for (block, mode) in [
        (64, threaded()),
        (48, Scheduling::Cooperative),
        (100, Scheduling::SingleThread),
    ] {
        let mut c = Convolver::new(
            ConvolverConfig {
                block_size: block,
                scheduling: mode,
                ..Default::default()
            },
            &irs,
        )
        .unwrap();
        let first = run(&mut c, &x, 2, 15_000);
        // Leave it mid-stream with state in every level, then reset.
        let _ = run(&mut c, &x, 2, 3_333);
        c.reset();
        let again = run(&mut c, &x, 2, 15_000);
        assert_eq!(first, again, "block {block}");
    }
}

#[test]
fn threaded_stress_bit_matches_single_thread() {
    // Block 16 with many levels: the workers get woken every 2nd callback.
    let mut r = rng(22);
    let irs = IrMatrix::mono_per_channel(2, &decaying_noise(&mut r, 40_000));
    let x = vec![noise(&mut r, 120_000), noise(&mut r, 120_000)];
    let total = 160_000; // 10_000 callbacks
    let mut st = Convolver::new(
        ConvolverConfig {
            block_size: 16,
            scheduling: Scheduling::SingleThread,
            ..Default::default()
        },
        &irs,
    )
    .unwrap();
    let mut th = Convolver::new(config(16), &irs).unwrap();
    assert!(th.levels().len() >= 3, "{:?}", th.levels());
    let a = run(&mut st, &x, 2, total);
    let b = run(&mut th, &x, 2, total);
    assert_eq!(a, b);
    let s = th.stats();
    assert_eq!(s.periods, 10_000);
    assert_eq!(s.threads, th.levels().len() - 1);
    assert!(s.wake_calls <= s.periods);
    assert!(!s.realtime_granted || s.threads > 0);
}

#[test]
fn explicit_realtime_request_is_reported_and_output_stays_exact() {
    let mut r = rng(23);
    let irs = IrMatrix::mono_per_channel(1, &decaying_noise(&mut r, 5000));
    let x = vec![noise(&mut r, 3000)];
    let cfg = ConvolverConfig {
        block_size: 32,
        scheduling: Scheduling::Threaded {
            pin_cores: Some(vec![0]),
            realtime_priority: Some(50),
        },
        ..Default::default()
    };
    let mut c = Convolver::new(cfg, &irs).unwrap();
    let got = run(&mut c, &x, 1, 8000);
    // Granted or not depends on the machine's permissions; either way it is reported and
    // the output is exact.
    let _granted: bool = c.stats().realtime_granted;
    check(&irs, &x, &got, &(0..8000).collect::<Vec<_>>(), "rt request");
}

#[test]
fn set_irs_crossfades_to_a_fresh_engine_without_clicks() {
    let mut r = rng(24);
    let a = IrMatrix::mono_per_channel(1, &decaying_noise(&mut r, 3000));
    let b = IrMatrix::mono_per_channel(1, &decaying_noise(&mut r, 5000));
    let x = noise(&mut r, 20_000);
    let block = 64;
    let fade = 1000;
    let switch = 40; // callback index of the change
    let cfg = ConvolverConfig {
        block_size: block,
        scheduling: Scheduling::SingleThread,
        ..Default::default()
    };
    let mut conv = Convolver::new(cfg.clone(), &a).unwrap();
    let mut only_a = Convolver::new(cfg.clone(), &a).unwrap();
    let mut fresh_b = Convolver::new(cfg.clone(), &b).unwrap();
    let mut y = vec![0.0f32; block];
    let mut ya = vec![0.0f32; block];
    let mut yb = vec![0.0f32; block];
    for c in 0..x.len() / block {
        let xin = &x[c * block..(c + 1) * block];
        if c == switch {
            conv.set_irs(&b, fade).unwrap();
            assert!(matches!(
                conv.set_irs(&b, fade),
                Err(ConvError::FadeInProgress)
            ));
        }
        conv.process(&[xin], &mut [&mut y]).unwrap();
        only_a.process(&[xin], &mut [&mut ya]).unwrap();
        if c >= switch {
            fresh_b.process(&[xin], &mut [&mut yb]).unwrap();
        }
        for i in 0..block {
            let n = (c * block + i) as isize - (switch * block) as isize;
            let want = if n < 0 {
                ya[i]
            } else {
                let g = ((n + 1) as f32 / fade as f32).min(1.0);
                yb[i] * g + ya[i] * (1.0 - g)
            };
            assert!(
                (y[i] - want).abs() <= 1e-6,
                "callback {c} sample {i}: {} vs {want}",
                y[i]
            );
        }
    }
    assert!(!conv.stats().fading);
    assert!(conv.take_retired().is_some());
    // Shape changes are refused.
    assert!(matches!(
        conv.set_irs(&IrMatrix::mono_per_channel(2, &[1.0]), 0),
        Err(ConvError::ShapeMismatch { .. })
    ));
}

#[test]
fn offline_convolution_returns_full_tail() {
    let mut r = rng(25);
    let irs = IrMatrix::mono_per_channel(1, &decaying_noise(&mut r, 1000));
    let x = vec![noise(&mut r, 777)];
    let cfg = ConvolverConfig {
        block_size: 100,
        scheduling: Scheduling::SingleThread,
        ..Default::default()
    };
    let y = sluice_conv::convolve_offline(&irs, &[&x[0]], &cfg).unwrap();
    assert_eq!(y[0].len(), 777 + 1000 - 1);
    check(
        &irs,
        &x,
        &y,
        &(0..y[0].len()).collect::<Vec<_>>(),
        "offline",
    );
}

#[test]
fn handles_move_between_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Convolver>();
    send::<sluice_conv::PreparedIrs>();
    send::<sluice_conv::RetiredIrs>();
    send_sync::<sluice_conv::IrLoader>();
    // Prepare on another thread, install in this one.
    let mut conv = Convolver::new(config(64), &IrMatrix::mono_per_channel(1, &[1.0])).unwrap();
    let loader = conv.loader();
    let prepared =
        std::thread::spawn(move || loader.prepare(&IrMatrix::mono_per_channel(1, &[0.5])))
            .join()
            .unwrap()
            .unwrap();
    assert!(conv.install(prepared, 0).unwrap().is_none());
    let x = [1.0f32; 64];
    let mut y = [0.0f32; 64];
    conv.process(&[&x], &mut [&mut y]).unwrap();
    assert!((y[0] - 0.5).abs() < 1e-6);
    assert!(conv.take_retired().is_some());
}

/// A stopped offline convolution is the convolution of the input read so far, tail included:
/// a shorter but complete result (what `sluice convolve` writes after Ctrl-C).
#[test]
fn a_stopped_offline_convolution_is_the_read_part_with_its_full_tail() {
    let ir: Vec<f32> = (0..300)
        .map(|n| 0.99f32.powi(n) * if n % 2 == 0 { 1.0 } else { -0.5 })
        .collect();
    let irs = IrMatrix::mono_per_channel(1, &ir);
    let x: Vec<f32> = (0..10_000)
        .map(|n| ((n * 7919) % 997) as f32 / 997.0 - 0.5)
        .collect();
    let cfg = config(256);
    let mut calls = 0;
    let stopped = sluice_conv::convolve_offline_until(&irs, &[&x], &cfg, |_| {
        calls += 1;
        calls < 5
    })
    .unwrap();
    let read = stopped[0].len() + 1 - ir.len();
    assert!(
        read > 0 && read < x.len(),
        "stopped after {read} input frames"
    );
    let whole = sluice_conv::convolve_offline(&irs, &[&x[..read]], &cfg).unwrap();
    assert_eq!(stopped[0].len(), whole[0].len());
    let err = stopped[0]
        .iter()
        .zip(&whole[0])
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(err < 1e-5, "largest difference {err}");
}
