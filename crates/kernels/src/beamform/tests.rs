use super::*;
use crate::Gaussian;
use num_complex::Complex64;

/// `n` antennas of independent unit-power complex noise, `len` samples each.
fn noise(n: usize, len: usize, seed: u64) -> Vec<Vec<Complex32>> {
    (0..n)
        .map(|k| {
            let mut g = Gaussian::new(seed + k as u64);
            (0..len)
                .map(|_| {
                    let (a, b) = g.pair();
                    Complex32::new(a, b) * std::f32::consts::FRAC_1_SQRT_2
                })
                .collect()
        })
        .collect()
}

/// A unit tone of `f` cycles/sample arriving from `angle` on a ULA (the module's convention).
fn plane_wave(n: usize, spacing: f64, angle: f64, f: f64, len: usize) -> Vec<Vec<Complex32>> {
    let s = angle.to_radians().sin();
    (0..n)
        .map(|k| {
            (0..len)
                .map(|t| {
                    let p = TAU * (f * t as f64 + spacing * k as f64 * s);
                    Complex32::new(p.cos() as f32, p.sin() as f32)
                })
                .collect()
        })
        .collect()
}

fn run(k: &PhaseBeamformer, x: &[Vec<Complex32>], len: usize) -> Vec<Vec<Complex32>> {
    let inputs: Vec<&[Complex32]> = x.iter().map(|v| &v[..len]).collect();
    let mut out = vec![vec![Complex32::default(); len]; k.beams()];
    let mut outs: Vec<&mut [Complex32]> = out.iter_mut().map(|v| &mut v[..]).collect();
    k.process(&inputs, &mut outs, false);
    out
}

fn steering(elements: usize, angles: &[f64], taper: Option<Window>) -> Steering {
    Steering {
        elements,
        spacing: 0.5,
        angles: angles.to_vec(),
        taper,
    }
}

/// Every SIMD level against the f64 matrix product, with lengths that leave remainders.
#[test]
fn every_level_matches_the_f64_product() {
    let (n, len) = (13, 103);
    let s = steering(
        n,
        &[-60.0, -20.0, 0.0, 5.0, 17.0, 33.0, 41.0, 60.0, 75.0, -3.0],
        None,
    );
    let w = s.weights(0, n).unwrap();
    let x = noise(n, len, 1);
    for level in SimdLevel::supported() {
        let k = PhaseBeamformer::with_level(n, 10, &w, level).unwrap();
        let y = run(&k, &x, len);
        for (b, y) in y.iter().enumerate() {
            for (t, y) in y.iter().enumerate() {
                let want: Complex64 = (0..n)
                    .map(|k| {
                        let (w, x) = (w[b * n + k], x[k][t]);
                        Complex64::new(w.re.into(), w.im.into())
                            * Complex64::new(x.re.into(), x.im.into())
                    })
                    .sum();
                let err = (Complex64::new(y.re.into(), y.im.into()) - want).norm();
                assert!(err < 1e-5, "{level:?} beam {b} item {t}: {y} vs {want}");
            }
        }
    }
}

/// Inputs that start anywhere within a cache line (the AVX-512 loop starts at the first
/// line boundary of input 0 and leaves the items before it to the plain loop), and inputs of
/// different alignments, give the plain loop's result, formed and accumulated.
#[test]
fn every_start_within_a_cache_line_matches_the_plain_loop() {
    let (n, beams, len) = (5, 9, 61);
    let s = steering(
        n,
        &[-50.0, -30.0, -10.0, 0.0, 10.0, 20.0, 35.0, 50.0, 70.0],
        None,
    );
    let w = s.weights(0, n).unwrap();
    let x = noise(n, len + 16, 7);
    let plain = PhaseBeamformer::with_level(n, beams, &w, SimdLevel::Portable).unwrap();
    for level in SimdLevel::supported() {
        let k = PhaseBeamformer::with_level(n, beams, &w, level).unwrap();
        for shift in 0..9 {
            // Input k starts `shift + k % 2` items in: input 0 sets the loop's start, the
            // others are off by one item from it half of the time.
            let inputs: Vec<&[Complex32]> = x
                .iter()
                .enumerate()
                .map(|(k, v)| &v[shift + k % 2..shift + k % 2 + len])
                .collect();
            for accumulate in [false, true] {
                let start = |b: usize| vec![Complex32::new(b as f32, 1.0); len];
                let mut got: Vec<Vec<Complex32>> = (0..beams).map(start).collect();
                let mut want = got.clone();
                let mut g: Vec<&mut [Complex32]> = got.iter_mut().map(|v| &mut v[..]).collect();
                k.process(&inputs, &mut g, accumulate);
                let mut r: Vec<&mut [Complex32]> = want.iter_mut().map(|v| &mut v[..]).collect();
                plain.process(&inputs, &mut r, accumulate);
                for (b, (g, r)) in got.iter().zip(&want).enumerate() {
                    for (t, (g, r)) in g.iter().zip(r).enumerate() {
                        assert!(
                            (g - r).norm() < 1e-5,
                            "{level:?} shift {shift} accumulate {accumulate} beam {b} item {t}: {g} vs {r}"
                        );
                    }
                }
            }
        }
    }
}

/// Three instances on elements 0..4, 4..9, 9..12 add up to the one-node result.
#[test]
fn partial_sums_of_three_groups_equal_the_whole_array() {
    let (n, len) = (12, 257);
    let s = steering(n, &[-30.0, 12.0, 50.0], Some(Window::Hamming));
    let x = noise(n, len, 7);
    let whole = PhaseBeamformer::new(n, 3, &s.weights(0, n).unwrap()).unwrap();
    let want = run(&whole, &x, len);
    let mut sum = vec![vec![Complex32::default(); len]; 3];
    for (first, count) in [(0, 4), (4, 5), (9, 3)] {
        let part = PhaseBeamformer::new(count, 3, &s.weights(first, count).unwrap()).unwrap();
        let y = run(&part, &x[first..first + count], len);
        for (acc, y) in sum.iter_mut().zip(&y) {
            for (a, y) in acc.iter_mut().zip(y) {
                *a += y;
            }
        }
    }
    for (b, (got, want)) in sum.iter().zip(&want).enumerate() {
        for (t, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).norm() < 1e-6, "beam {b} item {t}: {g} vs {w}");
        }
    }
}

/// A tone from the steering angle comes out with unit gain; independent noise is reduced by
/// N, so the SNR gain is 10·log10(N) within 0.5 dB.
#[test]
fn snr_gain_on_uncorrelated_noise_is_10_log10_n() {
    let len = 100_000;
    for n in [4, 8, 16] {
        let s = steering(n, &[23.0], None);
        let k = PhaseBeamformer::new(n, 1, &s.weights(0, n).unwrap()).unwrap();
        let signal = plane_wave(n, 0.5, 23.0, 0.01, len);
        let noise = noise(n, len, 100 + n as u64);
        let power = |v: &[Complex32]| v.iter().map(|x| x.norm_sqr() as f64).sum::<f64>();
        let snr_in = power(&signal[0]) / power(&noise[0]);
        let snr_out = power(&run(&k, &signal, len)[0]) / power(&run(&k, &noise, len)[0]);
        let gain = 10.0 * (snr_out / snr_in).log10();
        let ideal = 10.0 * (n as f64).log10();
        assert!(
            (gain - ideal).abs() < 0.5,
            "N = {n}: gain {gain:.2} dB vs {ideal:.2}"
        );
    }
}

#[test]
fn set_weights_changes_the_beam_and_bad_configs_are_refused() {
    let n = 8;
    let x = plane_wave(n, 0.5, -40.0, 0.05, 64);
    let s = steering(n, &[0.0], None);
    let mut k = PhaseBeamformer::new(n, 1, &s.weights(0, n).unwrap()).unwrap();
    let off = run(&k, &x, 64)[0][10].norm();
    k.set_weights(&steering(n, &[-40.0], None).weights(0, n).unwrap())
        .unwrap();
    let on = run(&k, &x, 64)[0][10].norm();
    assert!(off < 0.2 && (on - 1.0).abs() < 1e-5, "off {off}, on {on}");
    assert!(k.set_weights(&[Complex32::default(); 3]).is_err());
    assert!(PhaseBeamformer::new(0, 1, &[]).is_err());
    assert!(PhaseBeamformer::new(65, 1, &vec![Complex32::default(); 65]).is_err());
    assert!(steering(8, &[91.0], None).weights(0, 8).is_err());
    assert!(steering(8, &[0.0], None).weights(6, 3).is_err());
    let e = Steering { spacing: 0.0, ..s }.check().unwrap_err();
    assert!(e.to_string().contains("spacing"), "{e}");
}
