//! `sluice bench soapy`: the SoapySDR receive path against GNU Radio's, on the same device
//! module in the same run, and recording at radio rates against the disk's own bandwidth.
//!
//! The device is the test module of `sluice_soapy::test_device` (built here with g++), run
//! unpaced so that each side reads as fast as it can: the issue's "items/s when the device runs
//! unpaced" (its rate ranges top out at 3.2 MS/s, which every side here sustains paced). Rows:
//! the module alone (a C `readStream` loop: what the driver itself costs), sluice's
//! `soapy_source → null_sink`, GNU Radio 3.10's `soapy.source → null_sink` (with
//! `interleaved_short_to_complex` for CS16, so both sides deliver c32), in CS16 and CF32, with
//! items/s and CPU seconds per million samples (process CPU time, all threads), and what each
//! source adds over the module alone; the CS16 → c32 kernel alone at each instruction-set level
//! on cache-resident buffers; and `soapy_source → sigmf_sink` in ci16_le and cf32_le against
//! `dd oflag=direct` writing as many bytes to the same directory (the sink's time includes an
//! `fsync` of its file, so page-cache speed does not pass for disk speed); and the same
//! recording with the device paced at its highest rate for `--sustain-seconds` (60 by default),
//! holding 0.1 s of samples as a radio's FIFO does, so a sink that falls behind shows up as
//! overflows in the recording's gap annotations.

use crate::report::{machine_description, median, results_dir, Table};
use anyhow::{bail, Context};
use num_complex::Complex32;
use sluice_blocks::blocks::basic::NullSink;
use sluice_blocks::blocks::SigmfSink;
use sluice_formats::sigmf::{Datatype, GAP_LABEL, GAP_LOST};
use sluice_kernels::{iq_to_c32_with, IqFormat, SimdLevel};
use sluice_os::process_cpu_time;
use sluice_runtime::{Graph, RunOptions};
use sluice_soapy::{RadioSettings, SoapySource, StreamFormat};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Arguments of `sluice bench soapy`.
#[derive(clap::Args)]
pub struct BenchSoapyArgs {
    /// Samples per receive run.
    #[arg(long, default_value_t = 20_000_000)]
    pub samples: u64,
    /// Samples per recording run (ci16_le: 4 bytes each, cf32_le: 8).
    #[arg(long, default_value_t = 100_000_000)]
    pub record_samples: u64,
    /// Runs per row; the table shows medians.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Directory for the recordings and dd's file (on the disk to measure); removed after.
    #[arg(long, default_value = "target/bench/soapy/disk")]
    pub disk: PathBuf,
    /// Skip the recording rows.
    #[arg(long)]
    pub no_record: bool,
    /// Seconds of the paced recording: the device at its highest rate (3.2 MS/s) with a
    /// radio's FIFO of 0.1 s, into `sigmf_sink`, counting the overflows (0 skips it).
    #[arg(long, default_value_t = 60)]
    pub sustain_seconds: u64,
    /// Directory for the CSV and JSON results.
    #[arg(long, default_value = "target/bench/soapy")]
    pub out: PathBuf,
}

/// The rate asked of the device (unpaced, it delivers as fast as it is read).
const RATE: f64 = 2.048e6;

/// The device's highest rate (its ranges are an RTL-SDR's), for the paced recording.
const MAX_RATE: f64 = 3.2e6;

/// The module alone: SoapySDR's C API in a loop, nothing else.
const MODULE_ALONE: &str = r#"
#include <SoapySDR/Device.h>
#include <SoapySDR/Formats.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    long long n = atoll(argv[2]);
    SoapySDRDevice *d = SoapySDRDevice_makeStrArgs(argv[3]);
    if (!d) { fprintf(stderr, "%s\n", SoapySDRDevice_lastError()); return 1; }
    SoapySDRDevice_setSampleRate(d, SOAPY_SDR_RX, 0, 2.048e6);
    size_t ch = 0;
    SoapySDRStream *s = SoapySDRDevice_setupStream(d, SOAPY_SDR_RX, argv[1], &ch, 1, NULL);
    size_t mtu = SoapySDRDevice_getStreamMTU(d, s);
    void *buf = malloc(mtu * 8);
    void *bufs[1] = {buf};
    SoapySDRDevice_activateStream(d, s, 0, 0, 0);
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    long long got = 0;
    while (got < n) {
        int flags; long long t;
        int r = SoapySDRDevice_readStream(d, s, bufs, mtu, &flags, &t, 100000);
        if (r > 0) got += r;
    }
    printf("%f %f\n", now(CLOCK_MONOTONIC) - w0, now(CLOCK_PROCESS_CPUTIME_ID) - c0);
    SoapySDRDevice_deactivateStream(d, s, 0, 0);
    SoapySDRDevice_closeStream(d, s);
    SoapySDRDevice_unmake(d);
    return 0;
}
"#;

/// GNU Radio's receive path on the same module.
const GNU_RADIO: &str = r#"
import sys, time, resource
from gnuradio import gr, blocks, soapy
fmt, n, args = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tb = gr.top_block()
src = soapy.source(args, fmt, 1, "", "", [""], [""])
src.set_sample_rate(0, 2.048e6)
if fmt == "sc16":
    head = blocks.head(4, n)
    conv = blocks.interleaved_short_to_complex(True, False, 32768.0)
    tb.connect(src, head, conv, blocks.null_sink(gr.sizeof_gr_complex))
else:
    head = blocks.head(gr.sizeof_gr_complex, n)
    tb.connect(src, head, blocks.null_sink(gr.sizeof_gr_complex))
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
w0, c0 = time.monotonic(), cpu()
tb.run()
print(time.monotonic() - w0, cpu() - c0)
"#;

/// (wall s, CPU s) from a peer's one output line.
fn parse(out: &std::process::Output, who: &str) -> anyhow::Result<(f64, f64)> {
    if !out.status.success() {
        bail!("{who} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    match v[..] {
        [wall, cpu, ..] => Ok((wall, cpu)),
        _ => bail!("{who} printed {text:?}, not two numbers"),
    }
}

/// A graph of the test device's first channel into `sink`: (wall s, CPU s) of its run.
fn run_radio(
    format: StreamFormat,
    n: u64,
    id: usize,
    sink: impl sluice_runtime::Node + 'static,
) -> anyhow::Result<(f64, f64)> {
    run_device(
        &format!("driver=sluice_test,bench={id}"),
        RATE,
        format,
        n,
        sink,
    )
}

/// Receives `n` samples from the device `args` at `rate` into `sink`: (wall s, CPU s).
fn run_device(
    args: &str,
    rate: f64,
    format: StreamFormat,
    n: u64,
    sink: impl sluice_runtime::Node + 'static,
) -> anyhow::Result<(f64, f64)> {
    let mut s = RadioSettings::new(args, rate);
    s.format = format;
    let mut g = Graph::new();
    let src = g.add("rx", SoapySource::new(s, Some(n))?)?;
    let sink = g.add("sink", sink)?;
    g.connect(src, "out0", sink, "in")?;
    let (w0, c0) = (Instant::now(), process_cpu_time());
    g.run(&RunOptions::default())?;
    Ok((
        w0.elapsed().as_secs_f64(),
        (process_cpu_time() - c0).as_secs_f64(),
    ))
}

/// The CS16 → c32 kernel alone at `level`: G samples/s on 4,096-sample buffers.
fn conversion_gsps(level: SimdLevel) -> f64 {
    let x: Vec<i16> = (0..8192)
        .map(|i| (i * 7919 % 65536 - 32768) as i16)
        .collect();
    let mut y = vec![Complex32::default(); 4096];
    let rounds = 50_000;
    let t = Instant::now();
    for _ in 0..rounds {
        iq_to_c32_with(level, IqFormat::Ci16, std::hint::black_box(&x), &mut y);
        std::hint::black_box(&mut y);
    }
    (rounds * 4096) as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// Builds the module-alone loop beside the module.
fn build_module_alone(module: &Path) -> anyhow::Result<PathBuf> {
    let dir = module.parent().context("module directory")?;
    let (exe, c_file) = (dir.join("module_alone"), dir.join("module_alone.c"));
    std::fs::write(&c_file, MODULE_ALONE)?;
    let ok = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&c_file)
        .arg("-lSoapySDR")
        .status()
        .context("running gcc (scripts/setup.sh installs it)")?
        .success();
    if !ok {
        bail!("building the module-alone loop failed (needs gcc and libsoapysdr-dev)");
    }
    Ok(exe)
}

/// Runs `sluice bench soapy`.
pub fn run(args: BenchSoapyArgs) -> anyhow::Result<()> {
    let out_dir = results_dir(&args.out)?;
    let module =
        sluice_soapy::test_device::build(&out_dir.join("module")).map_err(anyhow::Error::msg)?;
    sluice_soapy::test_device::use_only(&module);
    let alone = build_module_alone(&module)?;
    let (n, runs) = (args.samples, args.runs.max(1));
    println!("# {}", machine_description());
    println!("# {n} samples per receive run, {runs} runs, medians; the device module runs unpaced");
    let mut table = Table::new(&[
        "path",
        "format",
        "M samples/s",
        "CPU s per M samples",
        "added over the module, CPU s per M",
        "÷ GNU Radio CPU",
    ]);
    let mut id = 0;
    for (format, gr_name, c_name) in [
        (StreamFormat::Cs16, "sc16", "CS16"),
        (StreamFormat::Cf32, "fc32", "CF32"),
    ] {
        let mut rows: [(&str, Vec<(f64, f64)>); 3] = [
            ("module alone (C readStream loop)", vec![]),
            ("sluice soapy_source → null_sink", vec![]),
            ("GNU Radio 3.10 soapy.source → null_sink", vec![]),
        ];
        for _ in 0..runs {
            id += 1;
            let dev = format!("driver=sluice_test,bench={id}");
            let out = Command::new(&alone)
                .args([c_name, &n.to_string(), &dev])
                .output()?;
            rows[0].1.push(parse(&out, "the module-alone loop")?);
            rows[1]
                .1
                .push(run_radio(format, n, id, NullSink::<Complex32>::new())?);
            let out = Command::new("/usr/bin/python3")
                .args(["-c", GNU_RADIO, gr_name, &n.to_string(), &dev])
                .output()
                .context("running Debian's /usr/bin/python3 with GNU Radio")?;
            rows[2].1.push(parse(&out, "GNU Radio")?);
        }
        let per_m = n as f64 / 1e6;
        let cpu = |r: &[(f64, f64)]| median(&r.iter().map(|x| x.1 / per_m).collect::<Vec<_>>());
        let (module_cpu, gr_cpu) = (cpu(&rows[0].1), cpu(&rows[2].1));
        for (k, (name, r)) in rows.iter().enumerate() {
            let rate = median(&r.iter().map(|x| n as f64 / x.0 / 1e6).collect::<Vec<_>>());
            table.push(vec![
                name.to_string(),
                format.name().to_string(),
                format!("{rate:.1}"),
                format!("{:.4}", cpu(r)),
                if k == 0 {
                    String::new()
                } else {
                    format!("{:.4}", cpu(r) - module_cpu)
                },
                if k == 1 {
                    format!("{:.2}", cpu(r) / gr_cpu)
                } else {
                    String::new()
                },
            ]);
        }
    }
    for level in [SimdLevel::Portable, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
        if !level.is_supported() {
            continue;
        }
        let g = median(
            &(0..runs)
                .map(|_| conversion_gsps(level))
                .collect::<Vec<_>>(),
        );
        table.push(vec![
            format!("CS16 → c32 kernel alone ({level:?}), one core, 4,096-sample buffers"),
            String::new(),
            format!("{:.0}", g * 1e3),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    if !args.no_record {
        record_rows(&args, runs, &mut id, &mut table)?;
        if args.sustain_seconds > 0 {
            sustain_rows(&args, &mut id, &mut table)?;
        }
    }
    print!("{}", table.render());
    table.write_csv(&out_dir.join("soapy.csv"))?;
    table.write_json(&out_dir.join("soapy.json"), "soapy")?;
    Ok(())
}

/// `soapy_source → sigmf_sink` against dd on the same directory.
fn record_rows(
    args: &BenchSoapyArgs,
    runs: usize,
    id: &mut usize,
    table: &mut Table,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.disk)
        .with_context(|| format!("cannot create {}", args.disk.display()))?;
    let n = args.record_samples;
    println!(
        "# recording {n} samples per run into {} (removed after)",
        args.disk.display()
    );
    for datatype in [Datatype::Ci16Le, Datatype::Cf32Le] {
        let bytes = n * datatype.sample_bytes() as u64;
        let (mut sink_mbs, mut dd_mbs) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            *id += 1;
            let path = args.disk.join("capture");
            let sink = SigmfSink::create(&path, datatype, None, None, None)?;
            let t = Instant::now();
            run_radio(StreamFormat::Cs16, n, *id, sink)?;
            let (meta, data) = sluice_formats::sigmf::paths(&path);
            std::fs::File::open(&data)?.sync_all()?;
            sink_mbs.push(bytes as f64 / t.elapsed().as_secs_f64() / 1e6);
            std::fs::remove_file(&data)?;
            std::fs::remove_file(&meta)?;
            dd_mbs.push(dd(&args.disk.join("dd.bin"), bytes)?);
        }
        let (sink, disk) = (median(&sink_mbs), median(&dd_mbs));
        table.push(vec![
            format!("soapy_source → sigmf_sink (MB/s), dd oflag=direct: {disk:.0} MB/s"),
            datatype.name().to_string(),
            format!("{:.1}", sink * 1e6 / datatype.sample_bytes() as f64 / 1e6),
            format!("{sink:.0} MB/s"),
            String::new(),
            format!("{:.2} of dd", sink / disk),
        ]);
    }
    Ok(())
}

/// `soapy_source → sigmf_sink` with the device paced at its highest rate for
/// `--sustain-seconds`, holding 0.1 s as a radio's FIFO does: the overflows are read back from
/// the recording's gap annotations.
fn sustain_rows(args: &BenchSoapyArgs, id: &mut usize, table: &mut Table) -> anyhow::Result<()> {
    let seconds = args.sustain_seconds;
    let n = (seconds as f64 * MAX_RATE) as u64;
    println!(
        "# recording {seconds} s at {:.1} MS/s from the paced device (FIFO of 0.1 s)",
        MAX_RATE / 1e6
    );
    for datatype in [Datatype::Ci16Le, Datatype::Cf32Le] {
        *id += 1;
        let path = args.disk.join("sustain");
        let sink = SigmfSink::create(&path, datatype, None, None, None)?;
        let device = format!(
            "driver=sluice_test,pace=1,rt_buffer={},bench={id}",
            (MAX_RATE / 10.0) as u64
        );
        let (wall, cpu) = run_device(&device, MAX_RATE, StreamFormat::Cs16, n, sink)?;
        let (meta_path, data) = sluice_formats::sigmf::paths(&path);
        let meta = sluice_formats::sigmf::read_meta(&meta_path)?;
        let (mut overflows, mut lost) = (0, 0);
        for a in &meta.annotations {
            let field = |name: &str| a.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
            if field("core:label").and_then(|v| v.as_str()) == Some(GAP_LABEL) {
                overflows += 1;
                lost += field(GAP_LOST).and_then(|v| v.as_u64()).unwrap_or(0);
            }
        }
        std::fs::remove_file(&data)?;
        std::fs::remove_file(&meta_path)?;
        table.push(vec![
            format!(
                "soapy_source → sigmf_sink, device paced at {:.1} MS/s for {seconds} s",
                MAX_RATE / 1e6
            ),
            datatype.name().to_string(),
            format!("{:.2}", n as f64 / wall / 1e6),
            format!("{:.4}", cpu / (n as f64 / 1e6)),
            String::new(),
            format!("{overflows} overflows, {lost} samples lost"),
        ]);
    }
    Ok(())
}

/// dd writing `bytes` (in 4 MiB blocks) to `file` with direct I/O: MB/s.
fn dd(file: &Path, bytes: u64) -> anyhow::Result<f64> {
    let block = 4 << 20;
    let t = Instant::now();
    let out = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", file.display()))
        .arg(format!("bs={block}"))
        .arg(format!("count={}", bytes.div_ceil(block)))
        .args(["oflag=direct", "status=none"])
        .output()
        .context("running dd")?;
    let mbs = (bytes.div_ceil(block) * block) as f64 / t.elapsed().as_secs_f64() / 1e6;
    let _ = std::fs::remove_file(file);
    if !out.status.success() {
        bail!("dd failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(mbs)
}
