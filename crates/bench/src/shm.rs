//! `sluice bench shm`: a stream between two processes through a shared-memory ring against the
//! same stream over TCP loopback, doing the same work, in the same run.
//!
//! The work is the issue's: a producer process writes every byte of each 1 MiB window (u64
//! words counting up) and a consumer process reads every byte (a wrapping sum of the words,
//! checked against the expected total at the end, so a lost, repeated or torn window fails the
//! run). Shared memory: the producer fills the ring's reservation in place and the consumer sums
//! the window in place (`ShmWriter`/`ShmReader`, the memfd handed over a Unix socket), so no
//! byte is copied. TCP: the producer fills a buffer and `write`s it, the consumer `read`s into a
//! buffer and sums it; the kernel copies every byte twice. Both consumers are this binary
//! started again with `--consumer`. CPU seconds per GB: the producer's thread clock and the
//! consumer's process clock. Medians over `--runs` interleaved runs.

use super::report::{machine_description, median, results_dir, Table};
use clap::Args;
use sluice_queue::{RingReader, RingWriter, ShmWriter};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Arguments of `sluice bench shm`.
#[derive(Args, Debug)]
pub struct BenchShmArgs {
    /// Bytes moved per run (a multiple of the window).
    #[arg(long, default_value_t = 4 << 30)]
    pub bytes: u64,
    /// Bytes per window (written, then read, as one piece).
    #[arg(long, default_value_t = 1 << 20)]
    pub window: usize,
    /// Bytes of shared ring.
    #[arg(long, default_value_t = 4 << 20)]
    pub ring: usize,
    /// Runs per variant (interleaved); the table shows medians.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Directory for the CSV and JSON results.
    #[arg(long, default_value = "target/bench/shm")]
    pub out: PathBuf,
    /// Internal: run as the consuming process of one measurement (`shm:@name` or
    /// `tcp:ADDR`).
    #[arg(long, hide = true)]
    pub consumer: Option<String>,
}

/// One measurement: GB/s, producer CPU s/GB, consumer CPU s/GB.
type Sample = (f64, f64, f64);

const WORD: usize = 8;

fn fill(words: &mut [u64], first: u64) {
    for (i, w) in words.iter_mut().enumerate() {
        *w = first + i as u64;
    }
}

fn sum(words: &[u64]) -> u64 {
    words.iter().fold(0u64, |a, &w| a.wrapping_add(w))
}

/// The sum of the words 0..n, wrapping, as the consumer must find it.
fn expected_sum(n: u64) -> u64 {
    let (a, b) = if n.is_multiple_of(2) {
        (n / 2, n.wrapping_sub(1))
    } else {
        (n, (n - 1) / 2)
    };
    a.wrapping_mul(b)
}

/// Runs `sluice bench shm`.
pub fn run(args: BenchShmArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.window >= WORD && args.window.is_multiple_of(WORD),
        "--window must be a positive multiple of {WORD} bytes, not {}",
        args.window
    );
    anyhow::ensure!(
        args.bytes >= args.window as u64 && args.bytes.is_multiple_of(args.window as u64),
        "--bytes must be a positive multiple of --window ({}), not {}",
        args.window,
        args.bytes
    );
    anyhow::ensure!(
        args.ring >= args.window,
        "--ring ({}) must hold at least one --window ({})",
        args.ring,
        args.window
    );
    if let Some(spec) = &args.consumer {
        return consume(spec, &args);
    }
    let out = results_dir(&args.out)?;
    println!("# {}", machine_description());
    println!(
        "# {} bytes per run in {}-byte windows, {} runs; producer writes every byte, consumer sums every byte; two processes",
        args.bytes, args.window, args.runs
    );
    let (mut shm, mut tcp) = (Vec::new(), Vec::new());
    for run in 0..args.runs.max(1) {
        tcp.push(tcp_run(&args)?);
        shm.push(shm_run(&args, run)?);
        eprint!("\rrun {} of {} done", run + 1, args.runs.max(1));
    }
    eprintln!();
    let med = |v: &[Sample], f: fn(&Sample) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
    let mut table = Table::new(&[
        "variant",
        "copies per byte",
        "GB/s",
        "producer CPU s/GB",
        "consumer CPU s/GB",
        "shm/TCP",
    ]);
    let (sg, tg) = (med(&shm, |x| x.0), med(&tcp, |x| x.0));
    for (name, copies, v, ratio) in [
        (
            "TCP loopback (write/read)",
            "2 (kernel)",
            &tcp,
            String::new(),
        ),
        ("shared-memory ring", "0", &shm, format!("{:.2}", sg / tg)),
    ] {
        table.push(vec![
            name.to_string(),
            copies.to_string(),
            format!("{:.2}", med(v, |x| x.0)),
            format!("{:.3}", med(v, |x| x.1)),
            format!("{:.3}", med(v, |x| x.2)),
            ratio,
        ]);
    }
    print!("{}", table.render());
    table.write_csv(&out.join("shm.csv"))?;
    table.write_json(&out.join("shm.json"), "shm")?;
    println!("wrote shm.csv and shm.json in {}", out.display());
    Ok(())
}

/// Starts this binary as the consumer of one run.
fn spawn_consumer(spec: &str, args: &BenchShmArgs) -> anyhow::Result<std::process::Child> {
    Ok(Command::new(std::env::current_exe()?)
        .args(["bench", "shm", "--consumer", spec])
        .args(["--bytes", &args.bytes.to_string()])
        .args(["--window", &args.window.to_string()])
        .args(["--ring", &args.ring.to_string()])
        .stdout(Stdio::piped())
        .spawn()?)
}

/// Waits for the consumer's report: `{"sum": …, "secs": …, "cpu_s": …}`.
fn report(child: std::process::Child, n_words: u64) -> anyhow::Result<(f64, f64)> {
    let output = child.wait_with_output()?;
    anyhow::ensure!(output.status.success(), "the consumer process failed");
    let line = BufReader::new(&output.stdout[..])
        .lines()
        .last()
        .ok_or_else(|| anyhow::anyhow!("the consumer printed nothing"))??;
    let v: serde_json::Value = serde_json::from_str(&line)?;
    let get = |k: &str| {
        v[k].as_f64()
            .ok_or_else(|| anyhow::anyhow!("the consumer's report lacks {k}: {line}"))
    };
    let got = v["sum"]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("the consumer's report lacks sum: {line}"))?;
    anyhow::ensure!(
        got == expected_sum(n_words),
        "the consumer's checksum {got} is not the expected {}: bytes were lost or changed",
        expected_sum(n_words)
    );
    Ok((get("secs")?, get("cpu_s")?))
}

fn shm_run(args: &BenchShmArgs, run: usize) -> anyhow::Result<Sample> {
    let name = format!("sluice-bench-shm-{}-{run}", std::process::id());
    let listener = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
    let child = spawn_consumer(&format!("shm:@{name}"), args)?;
    let (mut stream, _) = listener.accept()?;
    let ring = ShmWriter::<u64>::create(args.ring / WORD)?;
    let mut ring =
        sluice_net::hand_over(&mut stream, ring, "the consumer", Duration::from_secs(30))?;
    let window = args.window / WORD;
    let n_words = args.bytes / WORD as u64;
    let cpu0 = sluice_os::thread_cpu_time();
    let mut next = 0u64;
    while next < n_words {
        let space = ring.reserve(window)?;
        fill(&mut space[..window], next);
        ring.commit(window);
        next += window as u64;
    }
    ring.finish();
    let cpu = (sluice_os::thread_cpu_time() - cpu0).as_secs_f64();
    let (secs, consumer_cpu) = report(child, n_words)?;
    let gb = args.bytes as f64 / 1e9;
    Ok((gb / secs, cpu / gb, consumer_cpu / gb))
}

fn tcp_run(args: &BenchShmArgs) -> anyhow::Result<Sample> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let child = spawn_consumer(&format!("tcp:{}", listener.local_addr()?), args)?;
    let (mut s, _) = listener.accept()?;
    s.set_nodelay(true)?;
    let window = args.window / WORD;
    let n_words = args.bytes / WORD as u64;
    let mut buf = vec![0u64; window];
    let cpu0 = sluice_os::thread_cpu_time();
    let mut next = 0u64;
    while next < n_words {
        fill(&mut buf, next);
        s.write_all(bytemuck::cast_slice(&buf))?;
        next += window as u64;
    }
    drop(s);
    let cpu = (sluice_os::thread_cpu_time() - cpu0).as_secs_f64();
    let (secs, consumer_cpu) = report(child, n_words)?;
    let gb = args.bytes as f64 / 1e9;
    Ok((gb / secs, cpu / gb, consumer_cpu / gb))
}

/// The consumer process: sums every word it receives and prints its report.
fn consume(spec: &str, args: &BenchShmArgs) -> anyhow::Result<()> {
    let window = args.window / WORD;
    let mut total = 0u64;
    let start;
    if let Some(name) = spec.strip_prefix("shm:@") {
        let mut stream =
            UnixStream::connect_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
        let mut ring =
            sluice_net::take_over::<u64>(&mut stream, "the producer", Duration::from_secs(30))?;
        start = Instant::now();
        loop {
            let w = ring.window(window)?;
            if w.is_empty() {
                break;
            }
            let k = w.len().min(window);
            total = total.wrapping_add(sum(&w[..k]));
            ring.consume(k);
        }
    } else if let Some(addr) = spec.strip_prefix("tcp:") {
        let mut s = std::net::TcpStream::connect(addr)?;
        let mut buf = vec![0u64; window];
        start = Instant::now();
        loop {
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut buf);
            match s.read_exact(bytes) {
                Ok(()) => total = total.wrapping_add(sum(&buf)),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e.into()),
            }
        }
    } else {
        anyhow::bail!("--consumer takes shm:@NAME or tcp:ADDR, not '{spec}'");
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = sluice_os::process_cpu_time().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({ "sum": total, "secs": secs, "cpu_s": cpu })
    );
    std::io::stdout().flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_sum_is_the_sum() {
        for n in [0u64, 1, 2, 3, 10, 1001] {
            assert_eq!(expected_sum(n), (0..n).fold(0u64, |a, w| a.wrapping_add(w)));
        }
    }
}
