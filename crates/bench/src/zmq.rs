//! `sluice bench zmq`: sluice-zmq's native ZMTP sockets against libzmq's C API on loopback, in
//! one run: PUSH → PULL throughput for each message size (sluice's PULL reads every body
//! straight into a 64 MiB ring, as a source reads into its queue's reservation), against
//! libzmq with zero-copy `zmq_msg_t` receives and against "libzmq + copy into a ring" (what a
//! gr-zeromq source does); and the REQ/REP round trip. CPU seconds per GB count every thread
//! of both ends (the process CPU clock over the run for sluice, both processes' own for libzmq).

use crate::net_zmq::{num, Zmq};
use crate::report::{machine_description, median, results_dir, Table};
use sluice_zmq::{Sent, Socket, SocketOptions, SocketType};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Arguments of `sluice bench zmq`.
#[derive(clap::Args)]
pub struct BenchZmqArgs {
    /// Message sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1048576,65536,100")]
    pub sizes: Vec<usize>,
    /// Bytes moved per throughput run (at least 1000 messages, at most 2 million).
    #[arg(long, default_value_t = 1 << 30)]
    pub bytes: u64,
    /// Round trips (100-byte messages) per run.
    #[arg(long, default_value_t = 20_000)]
    pub round_trips: u64,
    /// Runs per variant; the table shows medians.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Directory for the CSV and JSON results.
    #[arg(long, default_value = "target/bench/zmq")]
    pub out: PathBuf,
}

/// CPU time (user and system) of this whole process, in seconds.
fn cpu_s() -> f64 {
    sluice_os::process_cpu_time().as_secs_f64()
}

/// sluice PUSH → sluice PULL of `count` messages of `size` bytes: (seconds from the first
/// message to the last, CPU seconds of both ends).
fn sluice_throughput(size: usize, count: u64) -> anyhow::Result<(f64, f64)> {
    let mut pull = Socket::new(
        SocketType::Pull,
        "tcp://127.0.0.1:0",
        true,
        SocketOptions::default(),
    )?;
    let url = format!("tcp://{}", pull.local_addr().expect("bound"));
    let cpu0 = cpu_s();
    let sender = std::thread::spawn(move || -> anyhow::Result<()> {
        let mut push = Socket::new(SocketType::Push, &url, false, SocketOptions::default())?;
        let buf = vec![0u8; size];
        let frame: [&[u8]; 1] = [&buf];
        for _ in 0..count {
            loop {
                match push.send(&[&frame])? {
                    Sent::Done => break,
                    Sent::Pending | Sent::NoPeer => push.wait(Duration::from_millis(10), true),
                }
            }
        }
        push.linger(Duration::from_secs(5));
        Ok(())
    });
    let mut ring = vec![0u8; 64 << 20];
    let mut at = 0usize;
    let mut t0 = None;
    for i in 0..count {
        let frame = loop {
            if let Some(f) = pull.next_frame()? {
                break f;
            }
            pull.wait(Duration::from_millis(10), false);
        };
        if i == 0 {
            t0 = Some(Instant::now());
        }
        let len = frame.len as usize;
        anyhow::ensure!(len == size, "message {i} has {len} bytes, expected {size}");
        if at + len > ring.len() {
            at = 0;
        }
        let mut got = 0;
        while got < len {
            let k = pull.read_into(&mut ring[at + got..at + len])?;
            if k == 0 {
                pull.wait(Duration::from_millis(10), false);
            }
            got += k;
        }
        at += len;
    }
    let secs = t0.map_or(0.0, |t| t.elapsed().as_secs_f64());
    sender.join().expect("sender thread")?;
    Ok((secs, cpu_s() - cpu0))
}

/// sluice REQ ↔ sluice REP, `count` round trips of `size` bytes: round trip times in µs,
/// sorted, the first 1 % left out (as the C harness does).
fn sluice_round_trips(size: usize, count: u64) -> anyhow::Result<Vec<f64>> {
    let mut rep = Socket::new(
        SocketType::Rep,
        "tcp://127.0.0.1:0",
        true,
        SocketOptions::default(),
    )?;
    let url = format!("tcp://{}", rep.local_addr().expect("bound"));
    let server = std::thread::spawn(move || -> anyhow::Result<()> {
        let mut body = vec![0u8; size];
        for _ in 0..count {
            recv_into(&mut rep, &mut body)?;
            send(&mut rep, &body)?;
        }
        rep.linger(Duration::from_secs(1));
        Ok(())
    });
    let mut req = Socket::new(SocketType::Req, &url, false, SocketOptions::default())?;
    let out = vec![0u8; size];
    let mut back = vec![0u8; size];
    let mut rtt = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let t = Instant::now();
        send(&mut req, &out)?;
        recv_into(&mut req, &mut back)?;
        rtt.push(t.elapsed().as_secs_f64() * 1e6);
    }
    server.join().expect("server thread")?;
    let skip = (count as usize / 100).max(1).min(rtt.len());
    let mut v = rtt.split_off(skip);
    v.sort_by(f64::total_cmp);
    Ok(v)
}

fn send(s: &mut Socket, body: &[u8]) -> anyhow::Result<()> {
    let frame: [&[u8]; 1] = [body];
    loop {
        match s.send(&[&frame])? {
            Sent::Done => return Ok(()),
            _ => s.wait(Duration::from_millis(10), true),
        }
    }
}

fn recv_into(s: &mut Socket, body: &mut [u8]) -> anyhow::Result<()> {
    let f = loop {
        if let Some(f) = s.next_frame()? {
            break f;
        }
        s.wait(Duration::from_millis(10), false);
    };
    anyhow::ensure!(
        f.len as usize == body.len() && !f.more,
        "unexpected frame {f:?}"
    );
    let mut got = 0;
    while got < body.len() {
        let k = s.read_into(&mut body[got..])?;
        if k == 0 {
            s.wait(Duration::from_millis(10), false);
        }
        got += k;
    }
    Ok(())
}

fn gbps(bytes: f64, secs: f64) -> f64 {
    bytes / secs / 1e9
}

/// Runs the benchmark.
pub fn run(args: BenchZmqArgs) -> anyhow::Result<()> {
    let out = results_dir(&args.out)?;
    let zmq = Zmq::build(&out.join("peers"))
        .map_err(|e| anyhow::anyhow!("the libzmq peer is missing: {e}"))?;
    println!("# {}", machine_description());
    println!(
        "# libzmq: C harness {} (zmq_msg_t receives; pullcopy adds a memcpy into a ring)",
        out.join("peers/zmq_bench").display()
    );
    let mut table = Table::new(&[
        "case",
        "sluice GB/s",
        "libzmq GB/s",
        "libzmq+copy GB/s",
        "vs libzmq",
        "vs libzmq+copy",
        "sluice CPU s/GB",
        "libzmq CPU s/GB",
        "messages/s sluice",
    ]);
    for &size in &args.sizes {
        let count = (args.bytes / size.max(1) as u64).clamp(1000, 2_000_000);
        let bytes = (count - 1) as f64 * size as f64;
        let total = count as f64 * size as f64;
        let (mut s, mut z, mut zc, mut s_cpu, mut z_cpu) = (vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..args.runs {
            let (secs, cpu) = sluice_throughput(size, count)?;
            s.push(gbps(bytes, secs));
            s_cpu.push(cpu / (total / 1e9));
            let (b, c) = zmq.pair("pull", "push", size, count, &[])?;
            z.push(gbps(bytes, num(&b, "secs")?));
            z_cpu.push((num(&b, "cpu_s")? + num(&c, "cpu_s")?) / (total / 1e9));
            let (b, _) = zmq.pair("pullcopy", "push", size, count, &[])?;
            zc.push(gbps(bytes, num(&b, "secs")?));
            // Each run, not only the medians: the spread between runs is part of the result.
            let k = s.len() - 1;
            eprintln!(
                "zmq: {size} B run {}: sluice {:.3} GB/s, libzmq {:.3}, libzmq+copy {:.3}, sluice/libzmq {:.2}",
                k + 1,
                s[k],
                z[k],
                zc[k],
                s[k] / z[k]
            );
        }
        let (s, z, zc) = (median(&s), median(&z), median(&zc));
        table.push(vec![
            format!("PUSH→PULL {size} B × {count}"),
            format!("{s:.3}"),
            format!("{z:.3}"),
            format!("{zc:.3}"),
            format!("{:.2}×", s / z),
            format!("{:.2}×", s / zc),
            format!("{:.3}", median(&s_cpu)),
            format!("{:.3}", median(&z_cpu)),
            format!("{:.0}", s * 1e9 / size as f64),
        ]);
        println!("{}", table.render().lines().last().unwrap_or_default());
    }
    let mut rt = Table::new(&[
        "round trip 100 B",
        "sluice µs",
        "libzmq µs",
        "libzmq / sluice",
    ]);
    let (mut s50, mut s99, mut z50, mut z99) = (vec![], vec![], vec![], vec![]);
    for _ in 0..args.runs {
        let v = sluice_round_trips(100, args.round_trips)?;
        s50.push(v[v.len() / 2]);
        s99.push(v[v.len() * 99 / 100]);
        let (_, c) = zmq.pair("rep", "req", 100, args.round_trips, &[])?;
        z50.push(num(&c, "p50_us")?);
        z99.push(num(&c, "p99_us")?);
    }
    for (name, s, z) in [
        ("p50", median(&s50), median(&z50)),
        ("p99", median(&s99), median(&z99)),
    ] {
        rt.push(vec![
            name.into(),
            format!("{s:.1}"),
            format!("{z:.1}"),
            format!("{:.2}×", z / s),
        ]);
    }
    println!("\n{}\n{}", table.render(), rt.render());
    table.write_csv(&out.join("throughput.csv"))?;
    table.write_json(&out.join("throughput.json"), "zmq")?;
    rt.write_csv(&out.join("round_trip.csv"))?;
    rt.write_json(&out.join("round_trip.json"), "zmq")?;
    println!("# results in {}", out.display());
    Ok(())
}
