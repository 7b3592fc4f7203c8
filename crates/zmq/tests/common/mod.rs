//! Shared by the integration tests: a Python peer (libzmq through pyzmq, or GNU Radio) and
//! blocking helpers over the non-blocking [`Socket`].
#![allow(dead_code)]

use sluice_zmq::{Sent, Socket};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's Python, where scripts/setup.sh installs python3-zmq and gnuradio.
pub const PYTHON: &str = "/usr/bin/python3";

/// A Python peer running `script`; killed when dropped.
pub struct Py {
    pub child: Child,
    pub out: BufReader<ChildStdout>,
    pub input: Option<ChildStdin>,
}

impl Py {
    /// Starts `script` with `args`; `module` is what it imports, named when it is missing.
    pub fn start(script: &str, args: &[String], module: &str, package: &str) -> Py {
        let check = Command::new(PYTHON)
            .args(["-c", &format!("import {module}")])
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {PYTHON} ({e}): install python3 (scripts/setup.sh)")
            });
        assert!(
            check.status.success(),
            "{PYTHON} cannot import {module}: install the Debian package {package} (scripts/setup.sh): {}",
            String::from_utf8_lossy(&check.stderr)
        );
        let mut child = Command::new(PYTHON)
            .arg("-c")
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start python");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let input = child.stdin.take();
        Py { child, out, input }
    }

    /// The next line the script prints (panics at its end).
    pub fn line(&mut self) -> String {
        let mut s = String::new();
        let n = self.out.read_line(&mut s).expect("read python output");
        assert!(
            n > 0,
            "the python peer ended without printing what was expected"
        );
        s.trim_end().to_string()
    }

    /// Sends a line to the script's stdin.
    pub fn say(&mut self, s: &str) {
        let i = self.input.as_mut().expect("stdin");
        writeln!(i, "{s}").expect("write to python");
        i.flush().expect("flush");
    }

    /// Waits for the script to exit successfully.
    pub fn finish(mut self) {
        drop(self.input.take());
        let status = self.child.wait().expect("wait for python");
        assert!(status.success(), "the python peer failed: {status}");
    }
}

impl Drop for Py {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Receives one whole message (all its frames) within `limit`.
pub fn recv_msg(s: &mut Socket, limit: Duration) -> Vec<Vec<u8>> {
    let start = Instant::now();
    let mut frames = Vec::new();
    loop {
        assert!(start.elapsed() < limit, "no message within {limit:?}");
        match s.next_frame().expect("receive") {
            None => s.wait(Duration::from_millis(10), false),
            Some(f) => {
                let mut body = vec![0u8; f.len as usize];
                let mut at = 0;
                while at < body.len() {
                    assert!(
                        start.elapsed() < limit,
                        "frame body not complete within {limit:?}"
                    );
                    let k = s.read_into(&mut body[at..]).expect("read body");
                    if k == 0 {
                        s.wait(Duration::from_millis(10), false);
                    }
                    at += k;
                }
                frames.push(body);
                if !f.more {
                    return frames;
                }
            }
        }
    }
}

/// Sends one message within `limit`.
pub fn send_msg(s: &mut Socket, frames: &[&[u8]], limit: Duration) {
    let start = Instant::now();
    let parts: Vec<[&[u8]; 1]> = frames.iter().map(|f| [*f]).collect();
    let refs: Vec<&[&[u8]]> = parts.iter().map(|p| &p[..]).collect();
    loop {
        assert!(start.elapsed() < limit, "message not sent within {limit:?}");
        match s.send(&refs).expect("send") {
            Sent::Done => {
                // Small messages are batched: polling writes the batch out.
                s.poll().expect("poll");
                return;
            }
            Sent::Pending | Sent::NoPeer => s.wait(Duration::from_millis(10), true),
        }
    }
}

/// Message `i` of the test streams: `len` bytes of a pattern depending on `i`.
pub fn pattern(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 31 + i * 7) as u8).collect()
}
