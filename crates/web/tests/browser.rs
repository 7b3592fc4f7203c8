//! The console in a real browser: headless Chromium driven through WebDriver (Debian's
//! `chromium` and `chromium-driver`, which `scripts/setup.sh` installs). The page lists the
//! graph's nodes; moving a slider changes the parameter, found in the graph's output at the
//! item the page shows; a spectrum view of a tone shows its peak at the tone's frequency, read
//! from the page; closing the view detaches its tap; a node's error shows in the Errors list,
//! its name as text. With `SLUICE_CONSOLE_SCREENSHOT=PATH` it
//! also writes a screenshot of the console with a waterfall there (docs/console.png).
//!
//! Fails, saying so, when Chromium or its driver is not installed (`scripts/setup.sh` installs
//! them).

mod common;

use common::{Breaks, Steps, Tone, TONE};
use serde_json::{json, Value};
use sluice_runtime::{Graph, Monitor, Progress, RunOptions, StopHandle};
use sluice_web::{Console, ConsoleOptions, RunHandles};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const DRIVER: &str = "/usr/bin/chromedriver";

/// A minimal WebDriver client: one JSON request per connection.
struct Driver {
    addr: String,
    session: String,
    child: Child,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = call(
            &self.addr,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    // The driver keeps connections open: read the head, then exactly the body it announces.
    let mut r = std::io::BufReader::new(s);
    let (mut len, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut r, &mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse::<usize>().ok();
        }
        chunked |= lower.starts_with("transfer-encoding:") && lower.contains("chunked");
    }
    let body = if chunked {
        let mut out = Vec::new();
        loop {
            let mut size = String::new();
            std::io::BufRead::read_line(&mut r, &mut size).map_err(|e| e.to_string())?;
            let n = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    } else {
        let mut buf = vec![0; len.ok_or("no Content-Length")?];
        r.read_exact(&mut buf).map_err(|e| e.to_string())?;
        String::from_utf8_lossy(&buf).into_owned()
    };
    let v: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    if v["value"]["error"].is_string() {
        return Err(v["value"]["message"].to_string());
    }
    Ok(v["value"].clone())
}

impl Driver {
    fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(DRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let addr = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while call(&addr, "GET", "/status", None).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--window-size=1500,1000"]}}}});
        let mut driver = Driver {
            addr,
            session: String::new(),
            child,
        };
        let v = call(&driver.addr, "POST", "/session", Some(&caps)).expect("a browser session");
        driver.session = v["sessionId"].as_str().unwrap().to_string();
        driver
    }

    fn cmd(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}/{what}", self.session);
        call(&self.addr, method, &path, body.as_ref()).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    fn js(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Evaluates `script` until it returns something other than null (or panics after 20 s).
    fn wait_for(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = self.js(script);
            if !v.is_null() {
                return v;
            }
            assert!(Instant::now() < deadline, "waited in vain for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = s
        .bytes()
        .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
        .map(value)
        .collect();
    digits
        .chunks(4)
        .flat_map(|c| {
            let n = c
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            bytes.into_iter().take(c.len() - 1)
        })
        .collect()
}

/// Fails (never skips) without Chromium and its driver: a browser test that passed without a
/// browser would test nothing.
fn require_chromium() {
    assert!(
        std::path::Path::new(CHROMIUM).exists() && std::path::Path::new(DRIVER).exists(),
        "the browser tests need Debian's chromium and chromium-driver ({CHROMIUM}, {DRIVER}); scripts/setup.sh installs them"
    );
}

#[test]
fn the_console_in_headless_chromium() {
    require_chromium();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let mut g = Graph::new();
    let tone = g
        .add(
            "tone",
            Tone {
                n: 0,
                gain: 1.0,
                noise: 0.02,
            },
        )
        .unwrap();
    let sink = g.add("steps", Steps(Arc::clone(&steps), 0, 0.1)).unwrap();
    g.connect(tone, "out", sink, "in").unwrap();
    let (progress, monitor, stop) = (Progress::new(), Monitor::new(), StopHandle::new());
    let handles = RunHandles {
        control: g.control_handle(),
        stop: stop.clone(),
        progress: progress.clone(),
        monitor: monitor.clone(),
        title: "tone.toml".into(),
    };
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: None,
        },
        handles,
    )
    .unwrap();
    let run = std::thread::spawn(move || {
        g.run(&RunOptions {
            progress: Some(progress),
            monitor: Some(monitor),
            stop: Some(stop),
            deadlock_timeout: Duration::from_secs(10),
            ..RunOptions::default()
        })
    });
    let addr = console.addr().to_string();
    let taps = || {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(s, "GET /api/stats HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let v: Value = serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
        v["edges"][0]["taps"].as_u64().unwrap()
    };
    // Let the run register its edges before the page asks for them.
    let deadline = Instant::now() + Duration::from_secs(20);
    while console.addr().port() != 0 && std::panic::catch_unwind(taps).is_err() {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }

    let d = Driver::start();
    d.cmd("POST", "url", Some(json!({"url": console.url()})));

    // The page lists the graph's nodes.
    let nodes = d.wait_for(
        "the node table",
        "const r = [...document.querySelectorAll('#nodes tbody tr')].map(t => t.cells[0].textContent); return r.length ? r : null;",
    );
    assert_eq!(nodes, json!(["tone", "steps"]));

    // Moving the slider sets the gain; the page shows the item it took effect at.
    d.js("const s = document.querySelector('.control[data-param=\"gain\"] input[type=range]'); s.value = 0.5; s.dispatchEvent(new Event('change'));");
    let at = d.wait_for(
        "the applied offset",
        "const a = document.querySelector('.control[data-param=\"gain\"] .applied'); return a.dataset.at ? Number(a.dataset.at) : null;",
    );
    let at = at.as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = steps.lock().unwrap().clone();
        if st.len() >= 2 {
            assert_eq!(
                st,
                vec![(0, 1.0), (at, 0.5)],
                "the gain changed at item {at}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slider's change never reached the output"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // A spectrum view: the peak the page reads out is the tone's (rate 1 MHz: 125 kHz).
    d.js("document.getElementById('kind').value = 'spectrum'; document.getElementById('rate').value = '1000000'; document.getElementById('open').click();");
    let freq = d.wait_for(
        "the spectrum's peak",
        "const p = document.querySelector('.view[data-kind=\"spectrum\"] .peak'); return p && p.dataset.frequency ? [Number(p.dataset.frequency), p.textContent] : null;",
    );
    assert_eq!(freq[0].as_f64().unwrap(), f64::from(TONE) * 1e6, "{freq}");
    assert!(
        freq[1].as_str().unwrap().starts_with("peak 125.000 kHz"),
        "{freq}"
    );
    assert_eq!(taps(), 1);
    d.js("document.querySelector('.view[data-kind=\"spectrum\"] .close').click();");
    let deadline = Instant::now() + Duration::from_secs(10);
    while taps() != 0 {
        assert!(
            Instant::now() < deadline,
            "closing the view did not detach its tap"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The screenshot for the docs: a waterfall and a spectrum of the tone.
    if let Ok(path) = std::env::var("SLUICE_CONSOLE_SCREENSHOT") {
        d.js("document.getElementById('kind').value = 'waterfall'; document.getElementById('open').click();");
        d.js("document.getElementById('kind').value = 'spectrum'; document.getElementById('open').click();");
        std::thread::sleep(Duration::from_secs(6));
        let png = d.cmd("GET", "screenshot", None);
        std::fs::write(&path, base64_decode(png.as_str().unwrap())).unwrap();
    }

    d.js("document.getElementById('stop').click();");
    let report = run.join().unwrap().unwrap();
    assert!(report.stopped, "the stop button stopped the run");
    drop(d);
    drop(console);
}

#[test]
fn a_node_error_shows_in_the_errors_list_as_text() {
    require_chromium();
    let mut g = Graph::new();
    let tone = g
        .add(
            "tone",
            Tone {
                n: 0,
                gain: 1.0,
                noise: 0.0,
            },
        )
        .unwrap();
    let node = "<b>\"breaks\"</b>";
    let breaks = g.add(node, Breaks::default()).unwrap();
    g.connect(tone, "out", breaks, "in").unwrap();
    let (progress, monitor, stop) = (Progress::new(), Monitor::new(), StopHandle::new());
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: None,
        },
        RunHandles {
            control: g.control_handle(),
            stop: stop.clone(),
            progress: progress.clone(),
            monitor: monitor.clone(),
            title: "breaks.toml".into(),
        },
    )
    .unwrap();
    let edges = monitor.clone();
    let run = std::thread::spawn(move || {
        g.run(&RunOptions {
            progress: Some(progress),
            monitor: Some(monitor),
            stop: Some(stop),
            deadlock_timeout: Duration::from_secs(10),
            ..RunOptions::default()
        })
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while edges.edge("tone", "out").is_none() {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let d = Driver::start();
    d.cmd("POST", "url", Some(json!({"url": console.url()})));
    d.wait_for(
        "the empty errors list",
        "return document.querySelector('#errors li.muted') && document.querySelector('.control[data-param=\"fail\"]') ? true : null;",
    );
    // The page's own control makes the node fail.
    d.js("const c = document.querySelector('.control[data-param=\"fail\"]'); c.querySelector('input.value').value = 'the disk <i>caught</i> fire'; c.querySelector('button').click();");
    let shown = d.wait_for(
        "the node's error",
        "const li = document.querySelector('#errors li.failure'); return li ? [li.textContent, li.dataset.node, document.querySelectorAll('#errors b, #errors i').length] : null;",
    );
    let text = shown[0].as_str().unwrap();
    assert!(
        text.ends_with(
            "node '<b>\"breaks\"</b>' failed: asked to fail: 'the disk <i>caught</i> fire'"
        ),
        "{shown}"
    );
    assert_eq!(shown[1], node);
    assert_eq!(shown[2], 0, "the name and the error are text, not markup");
    assert!(run.join().unwrap().is_err());
    drop(d);
    drop(console);
}

/// A cluster run's console: the page lists every host with its state, CPU, partner and
/// nodes, and a failover as it comes, every name as text (a host called `<b>h2</b>` shows
/// its brackets, and no `b` element appears).
#[test]
fn the_cluster_view_in_headless_chromium() {
    require_chromium();
    let view = sluice_web::ClusterView::new();
    let stop = StopHandle::new();
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: None,
        },
        sluice_web::ClusterHandles {
            view: view.clone(),
            stop: stop.clone(),
            title: "cluster.toml".into(),
        },
    )
    .unwrap();
    let hostile = "<b>h2</b>";
    let host = |name: &str, elapsed_s: f64, cpu_s: f64, items: u64| sluice_web::HostReport {
        host: name.into(),
        elapsed_s,
        cpu_s,
        nodes: vec![sluice_web::NodeReport {
            name: "fir<img src=x>".into(),
            items_in: items,
            items_out: items,
        }],
        ..Default::default()
    };
    let mut primary = host(hostile, 1.0, 0.5, 100);
    primary.partner = Some(sluice_web::PartnerLink::Standby("h3".into()));
    let mut standby = host("h3", 1.0, 0.5, 100);
    standby.partner = Some(sluice_web::PartnerLink::StandbyOf(hostile.into()));
    view.update(&[host("h1", 1.0, 0.2, 100), primary.clone(), standby.clone()]);
    view.update(&[host("h1", 2.0, 0.7, 1100), primary.clone(), standby.clone()]);

    let d = Driver::start();
    d.cmd("POST", "url", Some(json!({"url": console.url()})));
    let names = d.wait_for(
        "the hosts",
        "const n = [...document.querySelectorAll('#hosts .host .name')].map(e => e.textContent); \
         return n.length === 3 ? n : null;",
    );
    assert_eq!(names, json!(["h1", hostile, "h3"]));
    assert_eq!(
        d.js("return document.querySelectorAll('#hosts b, #hosts img').length;"),
        json!(0),
        "names from a worker never become markup"
    );
    assert_eq!(
        d.js("return document.getElementById('run-view').hidden;"),
        json!(true)
    );
    let cpu =
        d.js("return document.querySelector('#hosts .host[data-host=\"h1\"] .cpu').textContent;");
    assert_eq!(cpu, json!("CPU 50 %"), "h1 used 0.5 CPU s in 1 s");
    let partner = d.js(
        "return document.querySelector('#hosts .host[data-host=\"h3\"] .partner').textContent;",
    );
    assert_eq!(partner, json!(format!("standby of {hostile}")));
    let node =
        d.js("return document.querySelector('#hosts .host[data-host=\"h1\"] td').textContent;");
    assert_eq!(node, json!("fir<img src=x>"));

    // The primary fails over while the page is open: the stream brings the record.
    primary.state = sluice_web::HostState::FailedOver;
    primary.message = Some("worker lost: <script>x</script>".into());
    let mut receiver = host("h4", 2.0, 0.1, 1000);
    receiver.takeovers = vec![sluice_web::TakeoverReport {
        fence: hostile.into(),
        offset: 777,
        from_revision: 3,
        to_revision: 5,
        lost_unix_s: Some(1_700_000_000.0),
        lost_cause: Some("reset".into()),
        resumed_unix_s: 1_700_000_001.0,
        first_item_unix_s: Some(1_700_000_001.5),
    }];
    view.update(&[host("h1", 3.0, 1.2, 2100), primary, standby, receiver]);
    let failover = d.wait_for(
        "the failover",
        "const li = document.querySelector('#failovers .failover'); return li ? li.textContent : null;",
    );
    let text = failover.as_str().unwrap();
    assert!(
        text.contains(&format!(
            "partition of {hostile}: h3 took over from {hostile}"
        )),
        "{text}"
    );
    assert!(
        text.contains("h4 resumed the stream at offset 777"),
        "{text}"
    );
    let state = d.wait_for(
        "the failed-over state",
        "const s = document.querySelector('#hosts .host .state.failed_over'); return s ? s.textContent : null;",
    );
    assert_eq!(state, json!("failed over"));
    assert_eq!(
        d.js("return document.querySelectorAll('#hosts script, #hosts b').length;"),
        json!(0)
    );

    // The stop button stops the cluster run.
    d.js("document.getElementById('stop').click(); return null;");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stop.is_stopped() {
        assert!(
            Instant::now() < deadline,
            "the stop button did not stop the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
