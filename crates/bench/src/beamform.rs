//! `sluice bench beamform`: the beamformer kernels against numpy/scipy on the same data and
//! against this machine's memory bandwidth, measured in the same run (issue 16).
//!
//! Phase steering: 16 antennas × 8 beams of complex f32, the input (one array per antenna,
//! far larger than the caches) read once per pass in chunks of 4096 items as the block reads
//! its queue windows, the beams written to a chunk-sized buffer (a queue's reservation).
//! Its rate is reported as input bytes per second beside the memory read bandwidth (a
//! vectorised sum over 512 MiB) and numpy's `W @ X` (BLAS cgemm) on the same arrays. numpy's
//! BLAS runs a thread per core, so the kernel runs on one thread and on a thread per core
//! (each on its own contiguous part of the stream, as beamformer nodes over parts of a stream
//! would), the latter against the bandwidth as many threads read. True-time
//! delay: the same antennas, 8 beams, a 16-tap fractional-delay FIR per (beam, antenna),
//! against scipy's `lfilter` per (beam, antenna) summed. Both sides' first 4096 items of every
//! beam are compared, so the peer computes the same thing.
//!
//! The peer must not be handicapped: some machines set `OPENBLAS_CORETYPE` (and
//! `OPENBLAS_L2_SIZE`) to steer OpenBLAS away from old kernel bugs, which slows numpy's BLAS. The
//! peer process is started with both removed from its environment (or with the kernel named by
//! `--peer-coretype`), and reports the BLAS library, version, kernel and threads that ran, as
//! threadpoolctl gives them; the report carries that kernel beside the ratio. The two sides run
//! alternately, `--rounds` times, so that load from elsewhere on the machine falls on both.

use super::report::{machine_description, median, Table};
use anyhow::{bail, Context};
use num_complex::Complex32;
use sluice_kernels::{DelayBeamformer, PhaseBeamformer, SimdLevel, Steering, Window};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// Arguments of `sluice bench beamform`.
#[derive(clap::Args, Debug)]
pub struct BenchBeamformArgs {
    /// Samples per antenna for phase steering.
    #[arg(long, default_value_t = 1 << 22)]
    pub samples: usize,
    /// Samples per antenna for true-time delay.
    #[arg(long, default_value_t = 1 << 19)]
    pub ttd_samples: usize,
    /// Runs per side in each round; the table shows medians over all rounds.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Rounds: each runs sluice, then the peer, so both meet the same load.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// OpenBLAS kernel for the peer (`OPENBLAS_CORETYPE`, e.g. SkylakeX), for where OpenBLAS's
    /// own detection does not know the processor and falls back to a generic kernel. Unset by
    /// default: the peer runs with `OPENBLAS_CORETYPE` and `OPENBLAS_L2_SIZE` removed.
    #[arg(long)]
    pub peer_coretype: Option<String>,
    /// Python interpreter with numpy and scipy (Debian's, by default).
    #[arg(long, default_value = "/usr/bin/python3")]
    pub python: PathBuf,
    /// The numpy/scipy peer script (run from the repository root, or give its path).
    #[arg(long, default_value = "scripts/beamform_numpy.py")]
    pub script: PathBuf,
    /// Directory for beamform.csv and beamform.json (and the peer's data files).
    #[arg(long, default_value = "target/bench/beamform")]
    pub out: PathBuf,
}

const ANTENNAS: usize = 16;
const BEAMS: usize = 8;
const CHUNK: usize = 4096;
/// OpenBLAS settings that machines set to avoid old kernel bugs and that slow numpy's BLAS:
/// removed from the peer's environment (its only), so the ratio is against an unhandicapped peer.
const OPENBLAS_HANDICAPS: [&str; 2] = ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"];

/// Memory read bandwidth, bytes/s, of `threads` threads each summing its share of 512 MiB
/// (vectorised): the best of 3.
fn read_bandwidth(threads: usize) -> f64 {
    let words: usize = 64 << 20;
    let data: Vec<u64> = (0..words as u64).collect();
    let sum = |part: &[u64]| {
        let mut acc = [0u64; 8];
        for c in part.chunks_exact(8) {
            for (a, v) in acc.iter_mut().zip(c) {
                *a = a.wrapping_add(*v);
            }
        }
        std::hint::black_box(acc);
    };
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for part in data.chunks(words.div_ceil(threads)) {
                s.spawn(move || sum(part));
            }
        });
        best = best.min(t0.elapsed().as_secs_f64());
    }
    (words * 8) as f64 / best
}

/// Seconds for one pass of `run(chunk_start, chunk_len)` over `len` items in chunks.
fn timed(len: usize, mut run: impl FnMut(usize, usize)) -> f64 {
    let t0 = Instant::now();
    let mut i = 0;
    while i < len {
        let m = CHUNK.min(len - i);
        run(i, m);
        i += m;
    }
    t0.elapsed().as_secs_f64()
}

/// Seconds for one pass over `len` items split into `threads` contiguous parts, each thread
/// running `run(chunk_start, chunk_len, outputs)` over its part in chunks, into outputs of its
/// own (as beamformer nodes over parts of a stream would).
fn timed_threads(
    len: usize,
    threads: usize,
    run: impl Fn(usize, usize, &mut [Vec<Complex32>]) + Sync,
) -> f64 {
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for part in 0..threads {
            let run = &run;
            s.spawn(move || {
                let mut out = vec![vec![Complex32::default(); CHUNK]; BEAMS];
                let (mut i, end) = (len * part / threads, len * (part + 1) / threads);
                while i < end {
                    let m = CHUNK.min(end - i);
                    run(i, m, &mut out);
                    i += m;
                }
            });
        }
    });
    t0.elapsed().as_secs_f64()
}

fn c64_bytes(v: &[Complex32]) -> Vec<u8> {
    v.iter()
        .flat_map(|c| [c.re.to_le_bytes(), c.im.to_le_bytes()])
        .flatten()
        .collect()
}

fn read_c64(path: &std::path::Path) -> anyhow::Result<Vec<Complex32>> {
    let b =
        std::fs::read(path).with_context(|| format!("reading the peer's {}", path.display()))?;
    Ok(b.chunks_exact(8)
        .map(|c| {
            let f = |i: usize| f32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
            Complex32::new(f(0), f(4))
        })
        .collect())
}

/// Largest |ours − theirs| relative to the largest |theirs| over the first 4096 of each beam.
fn agreement(ours: &[Vec<Complex32>], theirs: &[Complex32]) -> f64 {
    let (mut err, mut top) = (0f32, 0f32);
    for (b, y) in ours.iter().enumerate() {
        for (j, v) in y.iter().take(CHUNK).enumerate() {
            let t = theirs[b * CHUNK + j];
            err = err.max((v - t).norm());
            top = top.max(t.norm());
        }
    }
    f64::from(err / top.max(1e-30))
}

/// The BLAS numpy ran, from the peer's threadpoolctl report: "openblas 0.3.21 SkylakeX
/// pthreads, 2 threads", one entry per library loaded, or the peer's note why it cannot say.
fn blas_description(doc: &serde_json::Value) -> String {
    let field = |i: &serde_json::Value, k: &str| match &i[k] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "?".into(),
        v => v.to_string(),
    };
    match doc["blas"].as_array() {
        Some(libs) if !libs.is_empty() => libs
            .iter()
            .map(|i| {
                format!(
                    "{} {} {} {}, {} threads",
                    field(i, "internal_api"),
                    field(i, "version"),
                    field(i, "architecture"),
                    field(i, "threading_layer"),
                    field(i, "num_threads")
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        _ => doc["blas_note"]
            .as_str()
            .unwrap_or("the peer did not report its BLAS (threadpoolctl missing?)")
            .to_string(),
    }
}

/// Runs the benchmark.
pub fn run(args: BenchBeamformArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    anyhow::ensure!(
        args.samples >= CHUNK && args.ttd_samples >= CHUNK,
        "--samples and --ttd-samples must be at least {CHUNK}"
    );
    if !args.script.exists() {
        bail!(
            "{} not found: run from the repository root or pass --script",
            args.script.display()
        );
    }
    let dir = crate::report::results_dir(&args.out)?;
    println!("machine: {}", machine_description());
    let steering = Steering {
        elements: ANTENNAS,
        spacing: 0.5,
        angles: (0..BEAMS).map(|b| -60.0 + 17.0 * b as f64).collect(),
        taper: Some(Window::Hamming),
    };
    let w = steering.weights(0, ANTENNAS)?;
    let spc = 4.0; // sample rate / carrier: delays up to 30 samples
    let delays = steering.delays(0, ANTENNAS, spc)?;
    let ttd = DelayBeamformer::new(ANTENNAS, BEAMS, steering.max_delay(spc), &w, &delays)?;
    let phase = PhaseBeamformer::new(ANTENNAS, BEAMS, &w)?;
    let n = args.samples;
    let mut rng = sluice_blocks::blocks::sample::Gaussian::new(16);
    let x: Vec<Vec<Complex32>> = (0..ANTENNAS)
        .map(|_| {
            (0..n)
                .map(|_| {
                    let (a, b) = rng.pair();
                    Complex32::new(a, b)
                })
                .collect()
        })
        .collect();
    eprintln!("beamform: writing the peer's data to {}", dir.display());
    let mut xb = Vec::with_capacity(ANTENNAS * n * 8);
    for v in &x {
        xb.extend(c64_bytes(v));
    }
    std::fs::write(dir.join("x.c64"), xb)?;
    std::fs::write(dir.join("w.c64"), c64_bytes(&w))?;
    std::fs::write(dir.join("g.c64"), c64_bytes(ttd.taps()))?;
    let s: Vec<u8> = ttd
        .offsets()
        .iter()
        .flat_map(|&o| (o as i64).to_le_bytes())
        .collect();
    std::fs::write(dir.join("s.i64"), s)?;

    // numpy's BLAS runs a thread per core: the kernel is timed on as many threads too, each
    // on its own part of the stream, against the bandwidth as many threads read.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bandwidth = read_bandwidth(1);
    let bandwidth_all = read_bandwidth(threads);
    let mut out = vec![vec![Complex32::default(); CHUNK]; BEAMS];
    let mut first = vec![vec![Complex32::default(); CHUNK]; BEAMS];
    let t = args.ttd_samples.min(n - ttd.history());
    let mut ttd_first = vec![vec![Complex32::default(); CHUNK]; BEAMS];
    let (mut phase_s, mut avx2_s, mut ttd_s) = (Vec::new(), Vec::new(), Vec::new());
    let mut threads_s = Vec::new();
    let (mut np_gemm_s, mut np_ttd_s) = (Vec::new(), Vec::new());
    let mut peer_doc = serde_json::Value::Null;
    let mut peer_env = String::new();
    for (name, value) in OPENBLAS_HANDICAPS
        .iter()
        .filter_map(|name| std::env::var(name).ok().map(|v| (name, v)))
    {
        peer_env.push_str(&format!("{name}={value} removed; "));
    }
    peer_env.push_str(&match &args.peer_coretype {
        Some(core) => format!("OPENBLAS_CORETYPE={core} (--peer-coretype), OPENBLAS_L2_SIZE unset"),
        None => "OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset".into(),
    });
    for round in 0..args.rounds {
        eprintln!("beamform: round {} of {}: sluice", round + 1, args.rounds);
        for _ in 0..args.runs {
            phase_s.push(timed(n, |i, m| {
                let inputs: [&[Complex32]; ANTENNAS] = std::array::from_fn(|k| &x[k][i..i + m]);
                let mut outs: Vec<&mut [Complex32]> = out.iter_mut().map(|v| &mut v[..m]).collect();
                phase.process(&inputs, &mut outs, false);
            }));
        }
        if threads > 1 {
            for _ in 0..args.runs {
                threads_s.push(timed_threads(n, threads, |i, m, out| {
                    let inputs: [&[Complex32]; ANTENNAS] = std::array::from_fn(|k| &x[k][i..i + m]);
                    let mut outs: Vec<&mut [Complex32]> =
                        out.iter_mut().map(|v| &mut v[..m]).collect();
                    phase.process(&inputs, &mut outs, false);
                }));
            }
        }
        {
            let inputs: [&[Complex32]; ANTENNAS] = std::array::from_fn(|k| &x[k][..CHUNK]);
            let mut outs: Vec<&mut [Complex32]> = first.iter_mut().map(|v| &mut v[..]).collect();
            phase.process(&inputs, &mut outs, false);
        }
        // The AVX2 loop too, where the best level is another (AVX-512): what the wider one buys.
        if SimdLevel::detect() == SimdLevel::Avx512 {
            let k = PhaseBeamformer::with_level(ANTENNAS, BEAMS, &w, SimdLevel::Avx2Fma)?;
            for _ in 0..args.runs {
                avx2_s.push(timed(n, |i, m| {
                    let inputs: [&[Complex32]; ANTENNAS] = std::array::from_fn(|k| &x[k][i..i + m]);
                    let mut outs: Vec<&mut [Complex32]> =
                        out.iter_mut().map(|v| &mut v[..m]).collect();
                    k.process(&inputs, &mut outs, false);
                }));
            }
        }
        for run in 0..args.runs {
            ttd_s.push(timed(t, |i, m| {
                let inputs: [&[Complex32]; ANTENNAS] =
                    std::array::from_fn(|k| &x[k][i..i + m + ttd.history()]);
                let mut outs: Vec<&mut [Complex32]> = out.iter_mut().map(|v| &mut v[..m]).collect();
                ttd.process(&inputs, &mut outs, false);
                if round == 0 && run == 0 && i == 0 {
                    for (f, o) in ttd_first.iter_mut().zip(&outs) {
                        f[..m].copy_from_slice(o);
                    }
                }
            }));
        }

        eprintln!(
            "beamform: round {} of {}: numpy/scipy on the same data",
            round + 1,
            args.rounds
        );
        let mut peer = Command::new(&args.python);
        // The peer's environment only: this process and other peers keep theirs.
        for name in OPENBLAS_HANDICAPS {
            peer.env_remove(name);
        }
        if let Some(core) = &args.peer_coretype {
            peer.env("OPENBLAS_CORETYPE", core);
        }
        let output = peer
            .arg(&args.script)
            .arg("--dir")
            .arg(&dir)
            .args([
                "--antennas",
                &ANTENNAS.to_string(),
                "--beams",
                &BEAMS.to_string(),
            ])
            .args(["--samples", &n.to_string(), "--ttd-samples", &t.to_string()])
            .args(["--runs", &args.runs.to_string()])
            .output()
            .with_context(|| format!("cannot start {}", args.python.display()))?;
        if !output.status.success() {
            bail!(
            "{} failed (needs numpy and scipy: apt-get install python3-numpy python3-scipy, as \
             scripts/setup.sh does): {}",
            args.script.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
        }
        let doc: serde_json::Value =
            serde_json::from_slice(&output.stdout).context("peer output")?;
        for (key, all) in [("gemm_s", &mut np_gemm_s), ("ttd_s", &mut np_ttd_s)] {
            let v = doc[key].as_array().context("peer output")?;
            all.extend(v.iter().filter_map(|v| v.as_f64()));
        }
        peer_doc = doc;
    }
    anyhow::ensure!(
        !np_gemm_s.is_empty() && !np_ttd_s.is_empty(),
        "the peer reported no timings"
    );
    let doc = peer_doc;
    let (np_gemm, np_ttd) = (median(&np_gemm_s), median(&np_ttd_s));
    let blas = blas_description(&doc);
    let gemm_err = agreement(&first, &read_c64(&dir.join("ygemm.c64"))?);
    let ttd_err = agreement(&ttd_first, &read_c64(&dir.join("yttd.c64"))?);
    anyhow::ensure!(
        gemm_err < 1e-4 && ttd_err < 1e-4,
        "sluice and numpy disagree: {gemm_err:e}, {ttd_err:e}"
    );

    let in_bytes = |items: usize| (ANTENNAS * items * 8) as f64;
    let ours = median(&phase_s);
    let ours_ttd = median(&ttd_s);
    println!(
        "memory read bandwidth (sum over 512 MiB, best of 3): {:.1} GB/s on one thread, {:.1} GB/s on {threads}",
        bandwidth / 1e9,
        bandwidth_all / 1e9
    );
    println!(
        "numpy {}, scipy {}; both sides agree to {:.1e} (phase), {:.1e} (delay) of the peak",
        doc["numpy"], doc["scipy"], gemm_err, ttd_err
    );
    println!("numpy's BLAS: {blas} (peer environment: {peer_env})");
    println!(
        "medians of {} runs per side ({} rounds of {}, sides alternating)",
        args.rounds * args.runs,
        args.rounds,
        args.runs
    );
    let mut table = Table::new(&[
        "case",
        "sluice_msps",
        "sluice_input_gbps",
        "pct_of_mem_bw",
        "numpy_msps",
        "x_numpy",
        "numpy_blas",
        "targets",
    ]);
    table.push(vec![
        "phase 16x8, 1 thread".into(),
        format!("{:.1}", n as f64 / ours / 1e6),
        format!("{:.2}", in_bytes(n) / ours / 1e9),
        format!("{:.0}", 100.0 * in_bytes(n) / ours / bandwidth),
        format!("{:.1}", n as f64 / np_gemm / 1e6),
        format!("{:.2}", np_gemm / ours),
        blas.clone(),
        format!(
            "x_numpy >= 2: {}; >= 50% bw: {}",
            ok(np_gemm / ours >= 2.0),
            ok(in_bytes(n) / ours >= 0.5 * bandwidth)
        ),
    ]);
    if !threads_s.is_empty() {
        let a = median(&threads_s);
        table.push(vec![
            format!("phase 16x8, {threads} threads"),
            format!("{:.1}", n as f64 / a / 1e6),
            format!("{:.2}", in_bytes(n) / a / 1e9),
            format!("{:.0}", 100.0 * in_bytes(n) / a / bandwidth_all),
            format!("{:.1}", n as f64 / np_gemm / 1e6),
            format!("{:.2}", np_gemm / a),
            blas.clone(),
            format!(
                "x_numpy >= 2: {}; >= 50% bw: {}",
                ok(np_gemm / a >= 2.0),
                ok(in_bytes(n) / a >= 0.5 * bandwidth_all)
            ),
        ]);
    }
    if !avx2_s.is_empty() {
        let a = median(&avx2_s);
        table.push(vec![
            "phase 16x8, avx2 loop".into(),
            format!("{:.1}", n as f64 / a / 1e6),
            format!("{:.2}", in_bytes(n) / a / 1e9),
            format!("{:.0}", 100.0 * in_bytes(n) / a / bandwidth),
            "-".into(),
            format!("{:.2}", np_gemm / a),
            blas.clone(),
            "-".into(),
        ]);
    }
    table.push(vec![
        "delay 16x8 16-tap".into(),
        format!("{:.2}", t as f64 / ours_ttd / 1e6),
        format!("{:.2}", in_bytes(t) / ours_ttd / 1e9),
        "-".into(),
        format!("{:.3}", t as f64 / np_ttd / 1e6),
        format!("{:.1}", np_ttd / ours_ttd),
        "-".into(),
        format!("x_scipy >= 5: {}", ok(np_ttd / ours_ttd >= 5.0)),
    ]);
    print!("{}", table.render());
    table.write_csv(&dir.join("beamform.csv"))?;
    table.write_json(&dir.join("beamform.json"), "beamform")?;
    for f in ["x.c64", "ygemm.c64", "yttd.c64"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    Ok(())
}

fn ok(pass: bool) -> &'static str {
    if pass {
        "met"
    } else {
        "MISSED"
    }
}
