//! `sluice run --control SOCKET` and `sluice ctl`: changing a parameter of a running graph
//! from the command line, and stopping it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A fresh directory for one test, removed when dropped (also when the test fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("sluice-ctl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills the child if the test fails before it was waited for.
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("run sluice")
}

/// A constant 1.0 (a 0 Hz tone), paced to 48 kHz, through a gain of 1, into a raw f32 file.
fn graph(dir: &Path) -> PathBuf {
    let path = dir.join("g.toml");
    std::fs::write(
        &path,
        format!(
            "[[node]]\nname = \"src\"\ntype = \"signal_source\"\nparams = {{ item = \"f32\", frequency = 0.0 }}\n\n\
             [[node]]\nname = \"pace\"\ntype = \"throttle\"\nparams = {{ item = \"f32\", rate = 48000.0 }}\n\n\
             [[node]]\nname = \"gain\"\ntype = \"multiply_const\"\nparams = {{ item = \"f32\", gain = 1.0 }}\n\n\
             [[node]]\nname = \"save\"\ntype = \"file_sink\"\nparams = {{ item = \"f32\", path = \"{}\" }}\n\n\
             [[edge]]\nfrom = \"src.out\"\nto = \"pace.in\"\n\n\
             [[edge]]\nfrom = \"pace.out\"\nto = \"gain.in\"\n\n\
             [[edge]]\nfrom = \"gain.out\"\nto = \"save.in\"\n",
            dir.join("out.f32").display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn ctl_changes_a_gain_at_the_reported_item_and_stops_the_graph() {
    let dir = TempDir::new("gain");
    let g = graph(&dir.0);
    let socket = dir.0.join("ctl.sock");
    let sock = socket.to_str().unwrap();
    let mut run = Running(Some(
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["run", g.to_str().unwrap(), "--control", sock])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    // The socket appears once the graph is loaded (bounded wait, not a timing claim).
    for _ in 0..1000 {
        if socket.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(socket.exists(), "no control socket appeared");

    let list = sluice(&["ctl", sock, "list"]);
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).trim(),
        "ok src.frequency src.amplitude gain.gain"
    );
    let bad = sluice(&["ctl", sock, "set", "gain.gian=3"]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).trim(),
        "sluice: error: node 'gain' has no run-time parameter 'gian' (it has: gain)"
    );
    let bad = sluice(&["ctl", sock, "set", "gain.gain=loud"]);
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).trim(),
        "sluice: error: node 'gain': parameter 'gain' must be a finite number, not 'loud'"
    );

    let set = sluice(&["ctl", sock, "set", "gain.gain=3"]);
    let reply = String::from_utf8_lossy(&set.stdout).trim().to_string();
    assert!(
        set.status.success(),
        "{reply} {}",
        String::from_utf8_lossy(&set.stderr)
    );
    let at: usize = reply
        .strip_prefix("ok gain.gain=3 at item ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply: {reply}"));

    let stop = sluice(&["ctl", sock, "stop"]);
    assert_eq!(String::from_utf8_lossy(&stop.stdout).trim(), "ok stopping");
    let out = run.0.take().unwrap().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("stopped by `stop` on the control socket"),
        "{stderr}"
    );
    assert!(!socket.exists(), "the socket file is removed at the end");

    // The file holds 1.0 up to the reported item and 3.0 from it on.
    let bytes = std::fs::read(dir.0.join("out.f32")).unwrap();
    let samples: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    // The throttle's queue was full of items from before the stop, so items follow the change.
    assert!(
        samples.len() > at,
        "{} samples, change at {at}",
        samples.len()
    );
    assert_eq!(samples.iter().position(|&x| x != 1.0), Some(at));
    assert!(samples[at..].iter().all(|&x| x == 3.0));
}

#[test]
fn a_control_path_that_is_not_a_socket_is_refused_and_left_alone() {
    let dir = TempDir::new("notsock");
    let g = graph(&dir.0);
    let precious = dir.0.join("notes.txt");
    std::fs::write(&precious, "keep me").unwrap();
    let out = sluice(&[
        "run",
        g.to_str().unwrap(),
        "--control",
        precious.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!(
            "sluice: error: control socket {}: the path exists and is not a socket; choose another path (nothing was changed)",
            precious.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    assert!(!dir.0.join("out.f32").exists(), "nothing ran");

    let out = sluice(&["ctl", dir.0.join("none.sock").to_str().unwrap(), "stop"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot connect to control socket"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits (bounded) for the control socket of a starting run.
fn wait_for(socket: &Path) {
    for _ in 0..1000 {
        if socket.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no control socket appeared");
}

/// The reply of a `sluice ctl` command that must succeed.
fn ok(args: &[&str]) -> String {
    let out = sluice(args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    );
    assert!(out.status.success(), "{args:?}: {stdout} {stderr}");
    stdout
}

/// The error of a `sluice ctl` command that must fail.
fn refused(args: &[&str]) -> String {
    let out = sluice(args);
    assert_eq!(out.status.code(), Some(1), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

fn floats(path: &Path) -> Vec<f32> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[test]
fn ctl_attaches_and_detaches_a_branch_and_replaces_a_node_at_an_item() {
    let dir = TempDir::new("live");
    let g = graph(&dir.0);
    let socket = dir.0.join("ctl.sock");
    let sock = socket.to_str().unwrap();
    let branch_out = dir.0.join("branch.f32");
    let branch = dir.0.join("branch.toml");
    std::fs::write(
        &branch,
        format!(
            "[[node]]\nname = \"keep\"\ntype = \"file_sink\"\nparams = {{ item = \"f32\", path = \"{}\" }}\n\n\
             [[feed]]\nfrom = \"pace.out\"\nto = \"keep.in\"\n",
            branch_out.display()
        ),
    )
    .unwrap();
    let bad_branch = dir.0.join("bad.toml");
    std::fs::write(
        &bad_branch,
        "[[node]]\nname = \"keep\"\ntype = \"null_sink\"\nparams = { item = \"c32\" }\n\n\
         [[feed]]\nfrom = \"pace.out\"\nto = \"keep.in\"\n",
    )
    .unwrap();
    let mut run = Running(Some(
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["run", g.to_str().unwrap(), "--control", sock])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    wait_for(&socket);

    // A branch that writes what the throttle passes on, attached and drained.
    let reply = ok(&["ctl", sock, "attach", "copy", branch.to_str().unwrap()]);
    assert!(
        reply.starts_with("ok attached copy: pace.out -> keep.in from item "),
        "{reply}"
    );
    assert_eq!(ok(&["ctl", sock, "branches"]), "ok copy");
    std::thread::sleep(Duration::from_millis(100));
    let reply = ok(&["ctl", sock, "detach", "copy"]);
    let items: usize = reply
        .strip_prefix("ok detached copy (drain): ")
        .and_then(|r| r.strip_suffix(" items in"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply: {reply}"));
    let copied = floats(&branch_out);
    assert_eq!(copied.len(), items);
    assert!(items > 0 && copied.iter().all(|&x| x == 1.0));
    assert_eq!(ok(&["ctl", sock, "branches"]), "ok none");

    // Mistakes are named.
    let e = refused(&["ctl", sock, "attach", "odd", bad_branch.to_str().unwrap()]);
    assert!(
        e.contains("pace.out carries f32 but the branch's keep.in takes c32"),
        "{e}"
    );
    let e = refused(&["ctl", sock, "detach", "ghost"]);
    assert_eq!(
        e,
        "sluice: error: no branch 'ghost' is attached (attached: none)"
    );
    let e = refused(&["ctl", sock, "replace", "gain", "--at", "0", "fir_filter"]);
    assert!(e.contains("sluice: error:"), "{e}");

    // The gain replaced by a gain of 2 from a little ahead of where it is now.
    let now: u64 = ok(&["ctl", sock, "set", "gain.gain=1"])
        .strip_prefix("ok gain.gain=1 at item ")
        .and_then(|n| n.parse().ok())
        .unwrap();
    let at = (now + 4800).to_string();
    let reply = ok(&[
        "ctl",
        sock,
        "replace",
        "gain",
        "--at",
        &at,
        "multiply_const",
        "item=f32",
        "gain=2",
    ]);
    assert_eq!(
        reply,
        format!("ok replaced gain from input item {at} (output item {at})")
    );
    std::thread::sleep(Duration::from_millis(50));
    ok(&["ctl", sock, "stop"]);
    let out = run.0.take().unwrap().wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples = floats(&dir.0.join("out.f32"));
    let at: usize = at.parse().unwrap();
    assert!(samples.len() > at);
    assert!(samples[..at].iter().all(|&x| x == 1.0));
    assert!(samples[at..].iter().all(|&x| x == 2.0));
}
