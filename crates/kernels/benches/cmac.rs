//! Complex multiply and multiply-accumulate: each SIMD level against the plain loop.
//!
//! `cargo bench -p sluice-kernels --bench cmac`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use num_complex::Complex32;
use sluice_kernels::{cmac_with, cmul_with, SimdLevel};

fn plain_mul(a: &[Complex32], b: &[Complex32], out: &mut [Complex32]) {
    for i in 0..out.len() {
        out[i] = a[i] * b[i];
    }
}

fn plain_mac(a: &[Complex32], b: &[Complex32], acc: &mut [Complex32]) {
    for i in 0..acc.len() {
        acc[i] += a[i] * b[i];
    }
}

fn bench(c: &mut Criterion) {
    for n in [256usize, 4096] {
        let a: Vec<Complex32> = (0..n).map(|i| Complex32::new(i as f32, 1.0)).collect();
        let b: Vec<Complex32> = (0..n)
            .map(|i| Complex32::new(0.5, i as f32 * 1e-3))
            .collect();
        let mut out = vec![Complex32::default(); n];
        let mut g = c.benchmark_group(format!("cmul/{n}"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function("plain-loop", |bn| {
            bn.iter(|| plain_mul(black_box(&a), black_box(&b), black_box(&mut out)))
        });
        for level in SimdLevel::supported() {
            g.bench_with_input(
                BenchmarkId::from_parameter(level.name()),
                &level,
                |bn, &l| {
                    bn.iter(|| cmul_with(l, black_box(&a), black_box(&b), black_box(&mut out)))
                },
            );
        }
        g.finish();
        let mut g = c.benchmark_group(format!("cmac/{n}"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function("plain-loop", |bn| {
            bn.iter(|| plain_mac(black_box(&a), black_box(&b), black_box(&mut out)))
        });
        for level in SimdLevel::supported() {
            g.bench_with_input(
                BenchmarkId::from_parameter(level.name()),
                &level,
                |bn, &l| {
                    bn.iter(|| cmac_with(l, black_box(&a), black_box(&b), black_box(&mut out)))
                },
            );
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(1)).warm_up_time(std::time::Duration::from_millis(300));
    targets = bench
}
criterion_main!(benches);
