//! `sluice live convolve` against a real JACK 2 server (dummy backend, freewheel mode): a
//! generator client plays a WAV file into it, a recorder client records its outputs, and the
//! recording equals `sluice convolve`'s offline output of the same file within -100 dB of the
//! peak, shifted by the latency the client reports to JACK.
//!
//! The server runs at a period of 72 frames: not a multiple of a power of two >= 16, so the
//! engine buffers and has a latency of 56 frames, which the test finds in JACK's port latency
//! ranges and in the recording. The first test starts the server at 64 frames and switches it
//! to 72 while sluice runs, so the engine is rebuilt in JACK's buffer-size callback. Needs the jackd2 package (scripts/setup.sh); without it the
//! tests fail and say so.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_audio::jack::{self, AudioIn, AudioOut, Client, Control, Port, ProcessScope};
use sluice_audio::{open_client, set_freewheel, DummyServer};
use sluice_formats::wav::{Encoding, WavReader, WavWriter};

const NOT_STARTED: u64 = u64::MAX;

/// libjack (JACK 2) attaches a process to one server at a time: the tests of this binary,
/// whose generator and recorder clients live in the test process, take turns.
static ONE_SERVER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn noise(len: usize, seed: u32, decay: f32) -> Vec<f32> {
    let mut s = seed.max(1);
    (0..len)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / 4_294_967_296.0 - 0.5) * (-(i as f32) / decay).exp()
        })
        .collect()
}

fn write_wav(path: &Path, channels: &[Vec<f32>]) {
    let mut w = WavWriter::create(path, channels.len(), Some(48000), Encoding::Float(32)).unwrap();
    let mut inter = Vec::new();
    for n in 0..channels[0].len() {
        inter.extend(channels.iter().map(|c| c[n]));
    }
    w.write(&inter).unwrap();
    w.finish().unwrap();
}

/// Plays `signal` from the first cycle after `go`, noting that cycle's index in `start`.
/// Cycles are counted by the generator itself (`cycle`): in freewheel mode JACK's frame time
/// does not advance. The recorder runs after it in every cycle (it is downstream), so it reads
/// the index of the cycle both are in.
struct Generator {
    ports: Vec<Port<AudioOut>>,
    signal: Vec<Vec<f32>>,
    pos: usize,
    go: Arc<AtomicBool>,
    start: Arc<AtomicU64>,
    cycle: Arc<AtomicU64>,
}

impl jack::ProcessHandler for Generator {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let cycle = self.cycle.fetch_add(1, Ordering::AcqRel) + 1;
        if self.start.load(Ordering::Relaxed) == NOT_STARTED && self.go.load(Ordering::Acquire) {
            self.start.store(cycle, Ordering::Release);
        }
        let started = self.start.load(Ordering::Relaxed) != NOT_STARTED;
        for (port, x) in self.ports.iter_mut().zip(&self.signal) {
            let out = port.as_mut_slice(ps);
            out.fill(0.0);
            if started && self.pos < x.len() {
                let k = out.len().min(x.len() - self.pos);
                out[..k].copy_from_slice(&x[self.pos..self.pos + k]);
            }
        }
        if started {
            self.pos += ps.n_frames() as usize;
        }
        Control::Continue
    }
}

/// Records its inputs from the generator's first cycle on, into preallocated buffers.
struct Recorder {
    ports: Vec<Port<AudioIn>>,
    bufs: Vec<Vec<f32>>,
    start: Arc<AtomicU64>,
    cycle: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
}

impl jack::ProcessHandler for Recorder {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let s = self.start.load(Ordering::Acquire);
        let t = self.cycle.load(Ordering::Acquire);
        if s == NOT_STARTED || t < s {
            return Control::Continue;
        }
        let at = (t - s) as usize * ps.n_frames() as usize;
        if at >= self.bufs[0].len() {
            return Control::Continue;
        }
        for (port, buf) in self.ports.iter().zip(self.bufs.iter_mut()) {
            let x = port.as_slice(ps);
            let k = x.len().min(buf.len().saturating_sub(at));
            buf[at..at + k].copy_from_slice(&x[..k]);
        }
        self.done
            .store((at + ps.n_frames() as usize) as u64, Ordering::Release);
        Control::Continue
    }
}

/// The `sluice live convolve` child, SIGKILLed if the test ends early.
struct Live {
    child: Option<Child>,
    log: PathBuf,
}

impl Live {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_for(&mut self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.log().contains(what) {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("sluice live convolve exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "no '{what}' in 30 s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn interrupt(mut self) -> (std::process::ExitStatus, String) {
        let mut child = self.child.take().unwrap();
        // SAFETY: kill(2) on the pid of our own, not yet reaped child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return (status, self.log());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "sluice live convolve ignored SIGINT for 10 s: {}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn read(path: &Path) -> Vec<Vec<f32>> {
    WavReader::open(path).unwrap().read_channels().unwrap()
}

/// Runs the round trip with `live_args` (after `live convolve`) on a fresh server; returns the
/// recording (one vector per output, frame 0 = the generator's first frame), the latency
/// found in JACK's port ranges, and sluice's log.
fn round_trip(
    tag: &str,
    dir: &Path,
    input: &[Vec<f32>],
    outputs: usize,
    live_args: &[&str],
    frames: usize,
    start_period: u32,
) -> (Vec<Vec<f32>>, u32, String) {
    let _turn = ONE_SERVER_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let server_name = format!("sluice-{tag}-{}", std::process::id());
    let server = DummyServer::start(&server_name, 48000, start_period, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let log = dir.join(format!("{tag}.log"));
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["live", "convolve"])
        .args(live_args)
        .args(["--server", server.name(), "--name", "sl", "--stats", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let mut live = Live {
        child: Some(child),
        log,
    };
    live.wait_for("client ready");

    let go = Arc::new(AtomicBool::new(false));
    let start = Arc::new(AtomicU64::new(NOT_STARTED));
    let done = Arc::new(AtomicU64::new(0));
    let cycle = Arc::new(AtomicU64::new(0));
    let gen_client = open_client("gen", Some(server.name())).unwrap();
    let gen_ports: Vec<_> = (1..=input.len())
        .map(|i| {
            gen_client
                .register_port(&format!("out_{i}"), AudioOut::default())
                .unwrap()
        })
        .collect();
    let generator = Generator {
        ports: gen_ports,
        signal: input.to_vec(),
        pos: 0,
        go: Arc::clone(&go),
        start: Arc::clone(&start),
        cycle: Arc::clone(&cycle),
    };
    let rec_client = open_client("rec", Some(server.name())).unwrap();
    let rec_ports: Vec<_> = (1..=outputs)
        .map(|o| {
            rec_client
                .register_port(&format!("in_{o}"), AudioIn::default())
                .unwrap()
        })
        .collect();
    let recorder = Recorder {
        ports: rec_ports,
        bufs: vec![vec![0.0; frames]; outputs],
        start: Arc::clone(&start),
        cycle: Arc::clone(&cycle),
        done: Arc::clone(&done),
    };
    if start_period != 72 {
        // A buffer-size change while sluice runs: it rebuilds its engine for the new period
        // (and its latency) in JACK's buffer-size callback.
        gen_client.set_buffer_size(72).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while gen_client.buffer_size() != 72 {
            assert!(
                Instant::now() < deadline,
                "the server did not change its period"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let gen_active = gen_client.activate_async((), generator).unwrap();
    let rec_active = rec_client.activate_async((), recorder).unwrap();
    let c = gen_active.as_client();
    // "client ready, inputs A B, outputs C D; period …"
    let first = live.log().lines().next().unwrap_or_default().to_string();
    let list = |from: &str, to: char| -> Vec<String> {
        let rest = &first[first.find(from).map_or(first.len(), |i| i + from.len())..];
        rest[..rest.find(to).unwrap_or(rest.len())]
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let (sl_in, sl_out) = (list("inputs ", ','), list("outputs ", ';'));
    assert_eq!(
        (sl_in.len(), sl_out.len()),
        (input.len(), outputs),
        "{}",
        live.log()
    );
    for (i, p) in sl_in.iter().enumerate() {
        c.connect_ports_by_name(&format!("gen:out_{}", i + 1), p)
            .unwrap();
    }
    for (o, p) in sl_out.iter().enumerate() {
        c.connect_ports_by_name(p, &format!("rec:in_{}", o + 1))
            .unwrap();
    }
    // JACK recomputes latencies after connections: the recorder's inputs see sluice's latency
    // (the generator's own capture latency is 0).
    let rec_in = c.port_by_name("rec:in_1").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut range = rec_in.get_latency_range(jack::LatencyType::Capture);
    while range.0 == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        range = rec_in.get_latency_range(jack::LatencyType::Capture);
    }
    assert_eq!(range.0, range.1, "a fixed latency");

    set_freewheel(c, true).unwrap();
    // sluice waits for late levels in freewheel (exact output); it says so once it knows.
    live.wait_for("freewheel on");
    go.store(true, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(20);
    while (done.load(Ordering::Acquire) as usize) < frames {
        assert!(
            Instant::now() < deadline,
            "the recording did not fill in 20 s (freewheel; cycle {}, start {}, done {}): {}",
            cycle.load(Ordering::Relaxed),
            start.load(Ordering::Relaxed),
            done.load(Ordering::Relaxed),
            live.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    set_freewheel(c, false).unwrap();
    let (_, _, recorder) = rec_active.deactivate().unwrap();
    drop(gen_active);
    let (status, log) = live.interrupt();
    assert!(
        status.success(),
        "sluice live convolve exit status {status} after SIGINT: {log}"
    );
    assert!(log.contains("stopped by SIGINT"), "{log}");
    drop(server);
    (recorder.bufs, range.0, log)
}

/// The offline `sluice convolve` output for the same input.
fn offline(dir: &Path, ir: &str, extra: &[&str]) -> Vec<Vec<f32>> {
    let out = dir.join(format!("offline-{ir}"));
    let status = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("convolve")
        .arg(dir.join("in.wav"))
        .arg(dir.join(ir))
        .arg(&out)
        .args(["--format", "f32", "--quiet"])
        .args(extra)
        .status()
        .unwrap();
    assert!(status.success());
    read(&out)
}

/// Compares `rec` shifted by `latency` with `want * gain`, within -100 dB of the peak.
fn assert_matches(rec: &[Vec<f32>], want: &[Vec<f32>], latency: usize, gain: f64) {
    assert_eq!(rec.len(), want.len());
    let peak = want
        .iter()
        .flatten()
        .fold(0.0f64, |m, &v| m.max(f64::from(v).abs()))
        * gain;
    assert!(peak > 0.01, "a signal to compare");
    for (o, (r, w)) in rec.iter().zip(want).enumerate() {
        // Silence (FFT round-off at most) during the latency, then the offline output.
        let mut worst = r[..latency]
            .iter()
            .fold(0.0f64, |m, &v| m.max(f64::from(v).abs()));
        for (n, &w) in w.iter().enumerate() {
            worst = worst.max((f64::from(r[n + latency]) - f64::from(w) * gain).abs());
        }
        let db = 20.0 * (worst / peak).log10();
        assert!(
            db < -100.0,
            "output {o}: error {db:.1} dB of the peak (latency {latency})"
        );
    }
}

#[test]
fn live_convolve_equals_offline_convolve_through_jack() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = vec![noise(20_000, 1, 1e9), noise(20_000, 2, 1e9)];
    let ir: Vec<Vec<f32>> = (0..4).map(|c| noise(5_000, 10 + c, 1500.0)).collect();
    write_wav(&d.join("in.wav"), &input);
    write_wav(&d.join("ir.wav"), &ir); // true stereo: LL, LR, RL, RR
    let want = offline(d, "ir.wav", &["--mix", "0.7"]);
    let frames = want[0].len() + 200;
    let ir_path = d.join("ir.wav");
    let (rec, latency, log) = round_trip(
        "flags",
        d,
        &input,
        2,
        &[
            "--ir",
            ir_path.to_str().unwrap(),
            "--mix",
            "0.7",
            "--gain",
            "-6",
        ],
        frames,
        64,
    );
    assert_eq!(
        latency, 56,
        "period 72 runs the engine at 64 frames: 64 - gcd(72, 64) = 56"
    );
    assert!(log.contains("period 64 frames"), "started at 64: {log}");
    let last = log
        .lines()
        .rfind(|l| l.contains("stopped by"))
        .unwrap_or_default();
    assert!(
        last.contains("frames at 48000 Hz")
            && last.contains(" of 72 frames")
            && last.contains("latency 56 frames"),
        "rebuilt for 72: {log}"
    );
    assert_matches(&rec, &want, latency as usize, 10f64.powf(-6.0 / 20.0));
}

#[test]
fn a_jconvolver_config_runs_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("irs")).unwrap();
    let input = vec![noise(15_000, 3, 1e9), noise(15_000, 4, 1e9)];
    let ir: Vec<Vec<f32>> = (0..4).map(|c| noise(4_000, 20 + c, 1000.0)).collect();
    write_wav(&d.join("in.wav"), &input);
    write_wav(&d.join("irs/ts.wav"), &ir);
    // The offline reference reads the same file from the top directory.
    std::fs::copy(d.join("irs/ts.wav"), d.join("ts.wav")).unwrap();
    let config = "# true stereo, as in jconvolver's examples\n\
        /convolver/new 2 2 256 8192\n\
        /cd irs\n\
        /input/name 1 In-L\n\
        /input/name 2 In-R\n\
        /output/name 1 Out-L\n\
        /output/name 2 Out-R\n\
        /impulse/read 1 1 1 0 0 0 1 ts.wav\n\
        /impulse/read 1 2 1 0 0 0 2 ts.wav\n\
        /impulse/read 2 1 1 0 0 0 3 ts.wav\n\
        /impulse/read 2 2 1 0 0 0 4 ts.wav\n";
    std::fs::write(d.join("ts.conf"), config).unwrap();
    let want = offline(d, "ts.wav", &[]);
    let frames = want[0].len() + 200;
    let conf = d.join("ts.conf");
    let (rec, latency, log) = round_trip(
        "config",
        d,
        &input,
        2,
        &[conf.to_str().unwrap()],
        frames,
        72,
    );
    assert!(log.contains("sl:In-L") && log.contains("sl:Out-R"), "{log}");
    assert_eq!(latency, 56);
    assert_matches(&rec, &want, latency as usize, 1.0);
}

/// SIGHUP reloads the IR files and the callback takes the new set (`change_irs` waits for it);
/// a file that has become unreadable keeps the old set running and says why.
#[test]
fn sighup_reloads_the_impulse_responses() {
    let _turn = ONE_SERVER_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_wav(&d.join("ir.wav"), &[noise(3_000, 5, 500.0)]);
    let server = DummyServer::start(
        &format!("sluice-hup-{}", std::process::id()),
        48000,
        64,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let log = d.join("hup.log");
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["live", "convolve", "--ir"])
        .arg(d.join("ir.wav"))
        .args(["--server", server.name(), "--name", "hup", "--stats", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let mut live = Live {
        child: Some(child),
        log,
    };
    live.wait_for("client ready");
    let hup = |live: &Live| {
        // SAFETY: kill(2) on the pid of our own, not yet reaped child.
        unsafe {
            libc::kill(
                live.child.as_ref().unwrap().id() as libc::pid_t,
                libc::SIGHUP,
            )
        };
    };
    write_wav(&d.join("ir.wav"), &[noise(6_000, 6, 900.0)]);
    hup(&live);
    live.wait_for("impulse responses reloaded");
    std::fs::write(d.join("ir.wav"), "not a wav file").unwrap();
    hup(&live);
    live.wait_for("reload failed, keeping the old IRs");
    assert!(live.log().contains("ir.wav"), "{}", live.log());
    let (status, log) = live.interrupt();
    assert!(status.success(), "{log}");
}
