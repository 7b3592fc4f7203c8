//! The SoapySDR receive path against GNU Radio's, on the same device module in the same run:
//!
//!     cargo run --release -p sluice-soapy --example soapy_bench -- [SAMPLES] [RUNS]
//!
//! The test device module (`tests/device/sluice_test.cpp`) runs unpaced, so each side reads
//! as fast as it can; the table gives items/s and CPU seconds per million samples (process CPU
//! time, all threads) for: the module alone (a C `readStream` loop: what the driver costs),
//! sluice's `soapy_source → null_sink`, and GNU Radio 3.10's `soapy.source → null_sink` (with
//! `interleaved_short_to_complex` for CS16, so both sides deliver c32), in CS16 and CF32; and
//! the CS16 → c32 kernel alone on cache-resident buffers. Medians of RUNS runs (default 5).

#[path = "../tests/support/mod.rs"]
mod support;

use num_complex::Complex32;
use sluice_blocks::blocks::basic::NullSink;
use sluice_kernels::{iq_to_c32, IqFormat};
use sluice_os::process_cpu_time;
use sluice_runtime::{Graph, RunOptions};
use sluice_soapy::{RadioSettings, SoapySource, StreamFormat};
use std::process::Command;
use std::time::Instant;

const RATE: f64 = 2.048e6;

/// The module alone: SoapySDR's C API in a loop, nothing else.
const MODULE_ALONE: &str = r#"
#include <SoapySDR/Device.h>
#include <SoapySDR/Formats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// (wall s, CPU s) from a peer's one output line.
fn parse(out: &std::process::Output, who: &str) -> (f64, f64) {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{who} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (v[0], v[1])
}

fn sluice_run(format: StreamFormat, n: u64, id: usize) -> (f64, f64) {
    let mut s = RadioSettings::new(&format!("driver=sluice_test,bench={id}"), RATE);
    s.format = format;
    let mut g = Graph::new();
    let src = g.add("rx", SoapySource::new(s, Some(n)).unwrap()).unwrap();
    let sink = g.add("null", NullSink::<Complex32>::new()).unwrap();
    g.connect(src, "out0", sink, "in").unwrap();
    let (w0, c0) = (Instant::now(), process_cpu_time());
    g.run(&RunOptions::default()).unwrap();
    (
        w0.elapsed().as_secs_f64(),
        (process_cpu_time() - c0).as_secs_f64(),
    )
}

fn conversion_gsps() -> f64 {
    let x: Vec<i16> = (0..8192)
        .map(|i| (i * 7919 % 65536 - 32768) as i16)
        .collect();
    let mut y = vec![Complex32::default(); 4096];
    let rounds = 100_000;
    let t = Instant::now();
    for _ in 0..rounds {
        iq_to_c32(IqFormat::Ci16, std::hint::black_box(&x), &mut y);
        std::hint::black_box(&mut y);
    }
    (rounds * 4096) as f64 / t.elapsed().as_secs_f64() / 1e9
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let n: u64 = argv
        .next()
        .map_or(20_000_000, |a| a.replace('_', "").parse().expect("SAMPLES"));
    let runs: usize = argv.next().map_or(5, |a| a.parse().expect("RUNS"));
    let module = support::module();
    let dir = module.parent().unwrap();
    let alone = dir.join("module_alone");
    let c_file = dir.join("module_alone.c");
    std::fs::write(&c_file, MODULE_ALONE).unwrap();
    let ok = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&alone)
        .arg(&c_file)
        .arg("-lSoapySDR")
        .status()
        .unwrap()
        .success();
    assert!(ok, "building the module-alone loop (gcc, libsoapysdr-dev)");
    println!(
        "{n} samples per run, {runs} runs, medians; device module: {}",
        module.display()
    );
    println!("| path | format | M samples/s | CPU s per M samples | sluice ÷ GNU Radio CPU |");
    println!("|---|---|---:|---:|---:|");
    let mut id = 0;
    for (format, gr_name, c_name) in [
        (StreamFormat::Cs16, "sc16", "CS16"),
        (StreamFormat::Cf32, "fc32", "CF32"),
    ] {
        let mut rows: Vec<(&str, Vec<(f64, f64)>)> = vec![
            ("module alone (C readStream loop)", vec![]),
            ("sluice soapy_source → null_sink", vec![]),
            ("GNU Radio soapy.source → null_sink", vec![]),
        ];
        for _ in 0..runs {
            id += 1;
            let args = format!("driver=sluice_test,bench={id}");
            let out = Command::new(&alone)
                .args([c_name, &n.to_string(), &args])
                .output()
                .unwrap();
            rows[0].1.push(parse(&out, "the module-alone loop"));
            rows[1].1.push(sluice_run(format, n, id));
            let out = Command::new("/usr/bin/python3")
                .args(["-c", GNU_RADIO, gr_name, &n.to_string(), &args])
                .output()
                .unwrap();
            rows[2].1.push(parse(&out, "GNU Radio"));
        }
        let cpu = |r: &Vec<(f64, f64)>| median(r.iter().map(|x| x.1 / (n as f64 / 1e6)).collect());
        let gr_cpu = cpu(&rows[2].1);
        for (name, r) in &rows {
            let rate = median(r.iter().map(|x| n as f64 / x.0 / 1e6).collect());
            let ratio = if name.starts_with("sluice") {
                format!("{:.2}", cpu(r) / gr_cpu)
            } else {
                String::new()
            };
            println!(
                "| {name} | {} | {rate:.1} | {:.4} | {ratio} |",
                format.name(),
                cpu(r)
            );
        }
    }
    let g = median((0..runs).map(|_| conversion_gsps()).collect());
    println!(
        "| CS16 → c32 kernel alone, one core, 4096-sample buffers | | {:.0} | | |",
        g * 1e3
    );
}
