//! The console's HTTP API against a real running graph on loopback: every endpoint, the
//! refusals (token, Origin, Host, bad requests) with their reasons, `/metrics` through a
//! Prometheus text-format parser, a parameter change found in the graph's output at the item
//! the API reported, a spectrum view of a tone with its peak at the tone's frequency, and the
//! example Grafana dashboard asking only for metrics that are served.

mod common;

use common::{Breaks, Lossy, Steps, Tone, TONE};
use serde_json::{json, Value};
use sluice_runtime::{Graph, Monitor, Progress, RunOptions, StopHandle};
use sluice_web::{Console, ConsoleOptions, RunHandles};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// One request on a fresh connection; returns (status, body).
fn request(addr: &str, raw: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(addr: &str, path: &str) -> (u16, String) {
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
    )
}

fn post_raw(addr: &str, path: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn good_headers(addr: &str) -> String {
    format!("Authorization: Bearer {TOKEN}\r\nOrigin: http://{addr}\r\n")
}

fn post(addr: &str, path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = request(
        addr,
        &post_raw(addr, path, &good_headers(addr), &body.to_string()),
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn reason(body: &str) -> String {
    serde_json::from_str::<Value>(body).unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A server-sent event stream, read with a plain TCP client and parsed here.
struct Events {
    reader: BufReader<TcpStream>,
    /// The response head's lines.
    head: Vec<String>,
    /// The last `retry:` field, in ms.
    retry: Option<u64>,
}

impl Events {
    /// Opens a stream with `body` (and the token and `Origin`).
    fn open(addr: &str, body: &Value) -> Events {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(
            post_raw(addr, "/api/stream", &good_headers(addr), &body.to_string()).as_bytes(),
        )
        .unwrap();
        let mut reader = BufReader::new(s);
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            assert!(
                reader.read_line(&mut line).unwrap() > 0,
                "the head ended early"
            );
            let line = line.trim_end().to_string();
            if line.is_empty() {
                break;
            }
            head.push(line);
        }
        Events {
            reader,
            head,
            retry: None,
        }
    }

    /// The next event: its name and its data, parsed as JSON; `None` when the stream ends.
    fn next(&mut self) -> Option<(String, Value)> {
        let (mut name, mut data) = (String::from("message"), Vec::new());
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            assert!(line.ends_with('\n'), "a line without its end: {line:?}");
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if data.is_empty() {
                    continue;
                }
                let data = data.join("\n");
                let value = serde_json::from_str(&data).expect("an event's data is JSON");
                return Some((name, value));
            }
            if line.starts_with(':') {
                continue; // a comment: the keep-alive
            }
            let (field, value) = line.split_once(": ").unwrap_or((line, ""));
            match field {
                "event" => name = value.to_string(),
                "data" => data.push(value.to_string()),
                "retry" => self.retry = Some(value.parse().expect("retry is a number")),
                other => panic!("an unknown field {other:?}"),
            }
        }
    }

    /// The next event called `name` (others are skipped), within a bound.
    fn next_named(&mut self, name: &str) -> Value {
        for _ in 0..1000 {
            match self.next() {
                Some((n, v)) if n == name => return v,
                Some(_) => {}
                None => panic!("the stream ended before a '{name}' event"),
            }
        }
        panic!("no '{name}' event in 1000")
    }
}

#[test]
fn the_console_serves_steers_and_refuses_as_documented() {
    let steps = Arc::new(Mutex::new(Vec::new()));
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
    let sink = g.add("steps", Steps(Arc::clone(&steps), 0, 0.001)).unwrap();
    g.connect(tone, "out", sink, "in").unwrap();
    let (progress, monitor, stop) = (Progress::new(), Monitor::new(), StopHandle::new());
    let handles = RunHandles {
        control: g.control_handle(),
        stop: stop.clone(),
        progress: progress.clone(),
        monitor: monitor.clone(),
        title: "test <graph>".into(),
    };
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: Some(TOKEN.into()),
        },
        handles,
    )
    .unwrap();
    assert!(console.url().ends_with(&format!("#token={TOKEN}")));
    let addr = console.addr().to_string();
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
    loop {
        let (_, body) = get(&addr, "/api/graph");
        if serde_json::from_str::<Value>(&body).unwrap()["edges"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
        {
            break;
        }
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }

    // The page and its script.
    let (status, page) = get(&addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains("<script src=\"/console.js\"></script>"));
    assert_eq!(get(&addr, "/console.js").0, 200);
    assert_eq!(get(&addr, "/console.css").0, 200);

    // The graph and its statistics.
    let graph: Value = serde_json::from_str(&get(&addr, "/api/graph").1).unwrap();
    assert_eq!(graph["title"], "test <graph>");
    let names: Vec<&str> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tone", "steps"]);
    assert_eq!(graph["nodes"][0]["controls"][0]["name"], "gain");
    assert_eq!(graph["edges"][0]["type"], "c32");
    assert_eq!(
        graph["edges"][0]["readers"][0],
        json!({"node": "steps", "port": "in"})
    );
    let stats: Value = serde_json::from_str(&get(&addr, "/api/stats").1).unwrap();
    assert_eq!(stats["nodes"][0]["name"], "tone");
    assert!(stats["edges"][0]["capacity"].as_u64().unwrap() > 0);

    // Prometheus metrics, parsed by a Prometheus text-format parser.
    let (status, text) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("the exposition format parses");
    let out = scrape
        .samples
        .iter()
        .find(|s| s.metric == "sluice_node_items_out_total" && s.labels.get("node") == Some("tone"))
        .expect("items out of the tone");
    assert!(matches!(out.value, prometheus_parse::Value::Counter(v) if v > 0.0));
    for name in [
        "sluice_node_busy_seconds_total",
        "sluice_queue_fill_items",
        "sluice_queue_capacity_items",
        "sluice_taps",
        "sluice_port_items_out_total",
        "sluice_node_late_total",
        "sluice_node_dropped_items_total",
        "sluice_node_underflow_items_total",
    ] {
        assert!(
            scrape.samples.iter().any(|s| s.metric == name),
            "{name} missing"
        );
    }

    // Refusals, each with its reason.
    let body = json!({"node": "tone", "param": "gain", "value": 2}).to_string();
    let (s, b) = request(
        &addr,
        &post_raw(
            &addr,
            "/api/set",
            &format!("Origin: http://{addr}\r\n"),
            &body,
        ),
    );
    assert_eq!(s, 401);
    assert!(reason(&b).contains("token is missing"));
    let (s, b) = request(
        &addr,
        &post_raw(
            &addr,
            "/api/set",
            &format!("Authorization: Bearer {TOKEN}\r\nOrigin: http://evil.example\r\n"),
            &body,
        ),
    );
    assert_eq!(s, 403);
    assert!(reason(&b).contains("not this console's"));
    let (s, _) = request(
        &addr,
        &post_raw(
            &addr,
            "/api/set",
            &format!("Authorization: Bearer {TOKEN}\r\n"),
            &body,
        ),
    );
    assert_eq!(s, 403);
    let (s, b) = request(
        &addr,
        &format!(
            "GET /api/graph HTTP/1.1\r\nHost: rebind.example:{}\r\n\r\n",
            console.addr().port()
        ),
    );
    assert_eq!(s, 421);
    assert!(reason(&b).contains("rebind.example"));
    let (s, b) = request(
        &addr,
        &post_raw(&addr, "/api/set", &good_headers(&addr), "{not json"),
    );
    assert_eq!(s, 400);
    assert!(reason(&b).contains("JSON"));
    let (s, v) = post(
        &addr,
        "/api/set",
        &json!({"node": "nope", "param": "gain", "value": 1}),
    );
    assert_eq!(s, 404);
    assert!(v["error"].as_str().unwrap().contains("nope"));
    let (s, v) = post(
        &addr,
        "/api/set",
        &json!({"node": "tone", "param": "gain", "value": "loud"}),
    );
    assert_eq!(s, 400, "{v}");
    assert_eq!(request(&addr, "BREW / HTTP/1.1\r\n\r\n").0, 400, "no Host");
    assert_eq!(request(&addr, "garbage\r\n\r\n").0, 400);
    assert_eq!(get(&addr, "/nowhere").0, 404);
    assert_eq!(get(&addr, "/api/set").0, 405);
    assert_eq!(request(&addr, &post_raw(&addr, "/metrics", "", "")).0, 405);
    let (s, v) = post(
        &addr,
        "/api/stream",
        &json!({"tap": {"node": "tone", "port": "out", "view": "radar"}}),
    );
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().contains("radar"));

    // A change, found in the graph's output at the item the API reported.
    let (s, v) = post(
        &addr,
        "/api/set",
        &json!({"node": "tone", "param": "gain", "value": 2.5}),
    );
    assert_eq!(s, 200, "{v}");
    let at = v["at"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = steps.lock().unwrap().clone();
        if st.len() >= 2 {
            assert_eq!(
                st,
                vec![(0, 1.0), (at, 2.5)],
                "the gain changed at item {at}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the change never reached the output"
        );
        drop(st);
        std::thread::sleep(Duration::from_millis(20));
    }

    // A spectrum view of the tone, as server-sent events: its peak at the tone's frequency;
    // closing it detaches it.
    let mut events = Events::open(
        &addr,
        &json!({"tap": {"node": "tone", "port": "out", "view": "spectrum", "size": 1024, "rate": 25}}),
    );
    assert_eq!(events.head[0], "HTTP/1.1 200 OK");
    assert!(
        events
            .head
            .iter()
            .any(|h| h == "Content-Type: text/event-stream; charset=utf-8"),
        "{:?}",
        events.head
    );
    let (name, frame) = events.next().expect("a first event");
    assert_eq!(name, "frame");
    assert_eq!(events.retry, Some(2000), "the retry field comes first");
    assert_eq!(frame["kind"], "spectrum");
    assert_eq!(frame["dropped"], 0);
    let bins: Vec<f64> = frame["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_f64().unwrap())
        .collect();
    let peak = (0..bins.len())
        .max_by(|&a, &b| bins[a].total_cmp(&bins[b]))
        .unwrap();
    assert_eq!((peak as f64 - 512.0) / 1024.0, f64::from(TONE));
    let taps = || {
        serde_json::from_str::<Value>(&get(&addr, "/api/stats").1).unwrap()["edges"][0]["taps"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(taps(), 1);
    let s = events.reader.into_inner();
    s.shutdown(std::net::Shutdown::Both).unwrap();
    drop(s);
    let deadline = Instant::now() + Duration::from_secs(10);
    while taps() != 0 {
        assert!(
            Instant::now() < deadline,
            "closing the view did not detach its tap"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // A statistics stream: `stats` events whose items rise from one to the next; then stop.
    let mut events = Events::open(&addr, &json!({"stats": true}));
    let first = events.next_named("stats");
    let second = events.next_named("stats");
    assert_eq!(first["nodes"][0]["name"], "tone");
    assert!(
        second["elapsed_s"].as_f64().unwrap() > first["elapsed_s"].as_f64().unwrap(),
        "{first} then {second}"
    );
    assert!(second["nodes"][0]["items_out"].as_u64() >= first["nodes"][0]["items_out"].as_u64());
    assert_eq!(second["dropped"], 0);
    drop(events);
    let (s, v) = post(&addr, "/api/stop", &json!({}));
    assert_eq!((s, v), (200, json!({"stopping": true})));
    let report = run.join().unwrap().unwrap();
    assert!(report.stopped);
    drop(console);
}

#[test]
fn a_non_loopback_bind_is_refused_with_the_reason() {
    let g = Graph::new();
    let handles = RunHandles {
        control: g.control_handle(),
        stop: StopHandle::new(),
        progress: Progress::new(),
        monitor: Monitor::new(),
        title: "t".into(),
    };
    let e = Console::start(
        ConsoleOptions {
            bind: "0.0.0.0:0".parse().unwrap(),
            token: None,
        },
        handles,
    )
    .unwrap_err();
    assert!(e.to_string().contains("loopback only"), "{e}");
}

/// The value of `metric` for `node` in a `/metrics` page, `node` as escaped on the wire (the
/// parser keeps label values as written and skips samples with escaped quotes, so the line is
/// read here; the parser still checks that the whole page is in the exposition format).
fn node_metric(text: &str, metric: &str, node: &str) -> Option<f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    prometheus_parse::Scrape::parse(lines).expect("the exposition format parses");
    let prefix = format!("{metric}{{node=\"{node}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.parse().expect("a number"))
}

#[test]
fn trouble_counted_by_a_node_shows_in_metrics_and_the_warnings_list_as_it_happens() {
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
    let lossy = g.add("lossy \"dev\"", Lossy { calls: 0 }).unwrap();
    g.connect(tone, "out", lossy, "in").unwrap();
    let (progress, monitor, stop) = (Progress::new(), Monitor::new(), StopHandle::new());
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: Some(TOKEN.into()),
        },
        RunHandles {
            control: g.control_handle(),
            stop: stop.clone(),
            progress: progress.clone(),
            monitor: monitor.clone(),
            title: "trouble".into(),
        },
    )
    .unwrap();
    let addr = console.addr().to_string();
    let run = std::thread::spawn(move || {
        g.run(&RunOptions {
            progress: Some(progress),
            monitor: Some(monitor),
            stop: Some(stop),
            deadlock_timeout: Duration::from_secs(10),
            ..RunOptions::default()
        })
    });
    // While the graph runs: the counters rise, and the warnings list names the node.
    let node = "lossy \"dev\"";
    let wire = r#"lossy \"dev\""#;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, text) = get(&addr, "/metrics");
        assert_eq!(status, 200);
        let dropped = node_metric(&text, "sluice_node_dropped_items_total", wire);
        let late = node_metric(&text, "sluice_node_late_total", wire);
        if dropped.is_some_and(|d| d > 0.0) && late == Some(1.0) {
            assert_eq!(
                node_metric(&text, "sluice_node_underflow_items_total", wire),
                Some(0.0)
            );
            assert_eq!(
                node_metric(&text, "sluice_node_dropped_items_total", "tone"),
                Some(0.0)
            );
            break;
        }
        assert!(Instant::now() < deadline, "no trouble counted: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats: Value = serde_json::from_str(&get(&addr, "/api/stats").1).unwrap();
    let warnings = stats["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w["node"] == node && w["kind"] == "late" && w["total"] == 1),
        "{warnings:?}"
    );
    let dropped = warnings
        .iter()
        .find(|w| w["node"] == node && w["kind"] == "dropped")
        .expect("a dropped entry");
    assert!(dropped["text"].as_str().unwrap().contains("dropped"));
    let lossy = stats["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .unwrap();
    assert!(lossy["dropped"].as_u64().unwrap() > 0);
    assert_eq!(lossy["late"], 1);
    assert_eq!(post(&addr, "/api/stop", &json!({})).0, 200);
    let report = run.join().unwrap().unwrap();
    // The same counts reach the run's report.
    let t = report.node(node).unwrap().troubles;
    assert_eq!(t.late, 1);
    assert!(t.dropped >= lossy["dropped"].as_u64().unwrap());
    drop(console);
}

/// One request over TLS to `addr`, trusting only `cert` (DER) for the name `localhost`;
/// returns (status, body).
fn tls_request(addr: &str, cert: &[u8], raw: &str) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(cert.to_vec()))
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(raw.as_bytes()).unwrap();
    let mut text = Vec::new();
    // The server closes without close_notify: what came before that is the answer.
    let _ = tls.read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text).to_string();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_string());
    (status, body)
}

#[test]
fn https_serves_with_a_certificate_made_at_start_and_the_token_rules_hold() {
    let g = Graph::new();
    let stop = StopHandle::new();
    let console = Console::start_with_tls(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: Some(TOKEN.into()),
        },
        Some(&sluice_web::Tls::SelfSigned),
        RunHandles {
            control: g.control_handle(),
            stop: stop.clone(),
            progress: Progress::new(),
            monitor: Monitor::new(),
            title: "tls".into(),
        },
    )
    .unwrap();
    let port = console.addr().port();
    let addr = console.addr().to_string();
    assert!(console.url().starts_with("https://"), "{}", console.url());
    let fingerprint = console.fingerprint().unwrap();
    assert_eq!(fingerprint.len(), 32 * 3 - 1, "{fingerprint}");
    let cert = console.certificate_der().unwrap().to_vec();
    let host = format!("localhost:{port}");

    // A read needs no token; the page comes over TLS.
    let (status, body) = tls_request(
        &addr,
        &cert,
        &format!("GET /api/graph HTTP/1.1\r\nHost: {host}\r\n\r\n"),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["title"],
        "tls"
    );
    // The token and the Origin rules hold over HTTPS, with an https:// origin.
    let stop_req = |headers: &str| {
        format!("POST /api/stop HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: 2\r\n\r\n{{}}")
    };
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, body) = tls_request(
        &addr,
        &cert,
        &stop_req(&format!("Origin: https://{host}\r\n")),
    );
    assert_eq!(status, 401, "{body}");
    let (status, body) = tls_request(
        &addr,
        &cert,
        &stop_req(&format!("{auth}Origin: http://{host}\r\n")),
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        reason(&body).contains(&format!("expected https://{host}")),
        "{body}"
    );
    let (status, _) = tls_request(
        &addr,
        &cert,
        &format!("GET /api/graph HTTP/1.1\r\nHost: evil.example:{port}\r\n\r\n"),
    );
    assert_eq!(status, 421);
    assert!(!stop.is_stopped());
    let (status, body) = tls_request(
        &addr,
        &cert,
        &stop_req(&format!("{auth}Origin: https://{host}\r\n")),
    );
    assert_eq!(status, 200, "{body}");
    assert!(stop.is_stopped());
    // Plain HTTP to the HTTPS port gets no HTTP answer (the server waits for the rest of what
    // it takes for a TLS record, at most its 5 s I/O timeout, then closes).
    let mut plain = TcpStream::connect(&addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    plain
        .write_all(format!("GET /api/graph HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");
    drop(console);
}

/// A graph running beside a console on loopback: the console, its address and the run.
struct Served {
    console: Console,
    addr: String,
    run: std::thread::JoinHandle<Result<sluice_runtime::RunReport, sluice_runtime::RuntimeError>>,
}

/// Starts `g` with a console, and waits until its edges exist.
fn serve(g: Graph, title: &str) -> Served {
    let (progress, monitor, stop) = (Progress::new(), Monitor::new(), StopHandle::new());
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: Some(TOKEN.into()),
        },
        RunHandles {
            control: g.control_handle(),
            stop: stop.clone(),
            progress: progress.clone(),
            monitor: monitor.clone(),
            title: title.into(),
        },
    )
    .unwrap();
    let addr = console.addr().to_string();
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
    while serde_json::from_str::<Value>(&get(&addr, "/api/graph").1).unwrap()["edges"]
        .as_array()
        .is_none_or(|e| e.is_empty())
    {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    Served { console, addr, run }
}

/// A graph of a clean tone (gain 1) into a sink that keeps nothing.
fn tone_to_steps() -> Graph {
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
    let sink = g
        .add("steps", Steps(Arc::new(Mutex::new(Vec::new())), 0, 0.001))
        .unwrap();
    g.connect(tone, "out", sink, "in").unwrap();
    g
}

/// A metric without labels from a `/metrics` page.
fn plain_metric(text: &str, metric: &str) -> Option<f64> {
    let prefix = format!("{metric} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.parse().expect("a number"))
}

fn items_out(addr: &str, node: &str) -> u64 {
    let stats: Value = serde_json::from_str(&get(addr, "/api/stats").1).unwrap();
    stats["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node)
        .and_then(|n| n["items_out"].as_u64())
        .unwrap()
}

#[test]
fn a_client_that_reads_nothing_loses_events_counted_and_the_graph_runs_on() {
    let g = tone_to_steps();
    let Served { console, addr, run } = serve(g, "slow client");
    // Large frames, as fast as allowed, to a client that never reads: the socket's buffers
    // fill, then the stream's queue, then events are dropped.
    let mut stalled = TcpStream::connect(&addr).unwrap();
    let body =
        json!({"tap": {"node": "tone", "port": "out", "view": "scope", "size": 8192, "rate": 50}});
    stalled
        .write_all(
            post_raw(
                &addr,
                "/api/stream",
                &good_headers(&addr),
                &body.to_string(),
            )
            .as_bytes(),
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = get(&addr, "/metrics").1;
        let dropped = plain_metric(&text, "sluice_console_dropped_events_total")
            .expect("the dropped events counter");
        if dropped > 0.0 {
            break;
        }
        assert!(Instant::now() < deadline, "no event was dropped: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The graph runs on meanwhile, and a reading client is served.
    let before = items_out(&addr, "tone");
    let deadline = Instant::now() + Duration::from_secs(10);
    while items_out(&addr, "tone") == before {
        assert!(
            Instant::now() < deadline,
            "the graph stalled behind a slow client"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut events = Events::open(&addr, &json!({"stats": true}));
    assert_eq!(events.next_named("stats")["nodes"][0]["name"], "tone");
    drop(events);
    drop(stalled);
    assert_eq!(post(&addr, "/api/stop", &json!({})).0, 200);
    assert!(run.join().unwrap().unwrap().stopped);
    drop(console);
}

#[test]
fn a_node_error_reaches_the_statistics_stream_and_metrics_as_it_happens() {
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
    // A name with markup and quotes: the API carries it as JSON, the page as text.
    let node = "<b>\"breaks\"</b>";
    let breaks = g.add(node, Breaks::default()).unwrap();
    g.connect(tone, "out", breaks, "in").unwrap();
    let Served { console, addr, run } = serve(g, "errors");
    let mut events = Events::open(&addr, &json!({"stats": true}));
    let first = events.next_named("stats");
    assert_eq!(first["errors"], json!([]), "{first}");
    assert_eq!(first["nodes"][1]["error"], Value::Null);
    // The node fails on cue; the stream that was open says so.
    let (status, v) = post(
        &addr,
        "/api/set",
        &json!({"node": node, "param": "fail", "value": "the disk <i>caught</i> fire"}),
    );
    assert_eq!(status, 200, "{v}");
    let mut failed = None;
    for _ in 0..200 {
        let stats = events.next_named("stats");
        if stats["errors"].as_array().is_some_and(|e| !e.is_empty()) {
            failed = Some(stats);
            break;
        }
    }
    let stats = failed.expect("no error reached the statistics stream in 200 events");
    let errors = stats["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["node"], node);
    let text = errors[0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "node '<b>\"breaks\"</b>' failed: asked to fail: 'the disk <i>caught</i> fire'"
    );
    assert_eq!(stats["nodes"][1]["error"], text);
    assert_eq!(stats["nodes"][0]["error"], Value::Null);
    // The run ends with that error; the console, still up, keeps it.
    let err = run.join().unwrap().unwrap_err();
    assert_eq!(err.to_string(), text);
    let (_, metrics) = get(&addr, "/metrics");
    let wire = r#"<b>\"breaks\"</b>"#;
    assert_eq!(
        node_metric(&metrics, "sluice_node_errors_total", wire),
        Some(1.0)
    );
    assert_eq!(
        node_metric(&metrics, "sluice_node_errors_total", "tone"),
        Some(0.0)
    );
    // The console closing ends the stream after a last event.
    drop(console);
    let deadline = Instant::now() + Duration::from_secs(10);
    while events.next().is_some() {
        assert!(
            Instant::now() < deadline,
            "the stream did not end with the console"
        );
    }
}

/// The value of `sluice_stream_bytes_total` for `node` and `direction`, if listed.
fn stream_bytes(text: &str, node: &str, direction: &str) -> Option<f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    prometheus_parse::Scrape::parse(lines).expect("the exposition format parses");
    let prefix = format!("sluice_stream_bytes_total{{node=\"{node}\",direction=\"{direction}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.parse().expect("a number"))
}

#[test]
fn a_loopback_tcp_streams_bytes_show_in_metrics_per_node_and_direction() {
    use sluice_net::{TcpOptions, TcpSink, TcpSource};
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
    let source =
        TcpSource::<num_complex::Complex32>::new("tcp-listen://127.0.0.1:0", TcpOptions::default())
            .unwrap();
    let url = format!("tcp://{}", source.local_addr().unwrap());
    let sink = TcpSink::<num_complex::Complex32>::new(&url, TcpOptions::default()).unwrap();
    let tx = g.add("tx", sink).unwrap();
    let rx = g.add("rx", source).unwrap();
    let steps = g
        .add("steps", Steps(Arc::new(Mutex::new(Vec::new())), 0, 0.001))
        .unwrap();
    g.connect(tone, "out", tx, "in").unwrap();
    g.connect(rx, "out", steps, "in").unwrap();
    let Served { console, addr, run } = serve(g, "loopback");
    // Items cross the connection: both ends count bytes, the data one way and the ACKs the
    // other; at least the items' own bytes went each way they flowed.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = get(&addr, "/metrics").1;
        let crossed = items_out(&addr, "rx") * std::mem::size_of::<num_complex::Complex32>() as u64;
        let sent = stream_bytes(&text, "tx", "sent");
        let received = stream_bytes(&text, "rx", "received");
        if crossed > 0
            && sent.is_some_and(|s| s >= crossed as f64)
            && received.is_some_and(|r| r >= crossed as f64)
        {
            assert!(
                stream_bytes(&text, "tx", "received").is_some_and(|r| r > 0.0),
                "ACKs: {text}"
            );
            assert!(
                stream_bytes(&text, "rx", "sent").is_some_and(|s| s > 0.0),
                "ACKs: {text}"
            );
            assert_eq!(stream_bytes(&text, "tone", "sent"), None, "{text}");
            break;
        }
        assert!(Instant::now() < deadline, "no bytes counted: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stats: Value = serde_json::from_str(&get(&addr, "/api/stats").1).unwrap();
    let rx = stats["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "rx")
        .unwrap();
    assert!(rx["bytes_received"].as_u64().unwrap() > 0, "{rx}");
    assert_eq!(post(&addr, "/api/stop", &json!({})).0, 200);
    // A stop ends the receiver (a source) first, so the sender may end with "peer closed the
    // connection": either way the run ends.
    let _ = run.join().unwrap();
    drop(console);
}

/// A cluster run's host, as its controller's caller reports it.
fn cluster_host(name: &str, elapsed_s: f64, cpu_s: f64, items: u64) -> sluice_web::HostReport {
    sluice_web::HostReport {
        host: name.into(),
        elapsed_s,
        cpu_s,
        nodes: vec![sluice_web::NodeReport {
            name: "fir <i>".into(),
            items_in: items,
            items_out: items,
        }],
        ..Default::default()
    }
}

#[test]
fn a_cluster_console_serves_its_hosts_streams_them_and_refuses_as_documented() {
    let view = sluice_web::ClusterView::new();
    let stop = StopHandle::new();
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: Some(TOKEN.into()),
        },
        sluice_web::ClusterHandles {
            view: view.clone(),
            stop: stop.clone(),
            title: "cluster.toml".into(),
        },
    )
    .unwrap();
    let addr = console.addr().to_string();

    // Before any report: no host yet, and the page is told it watches a cluster.
    let (status, body) = get(&addr, "/api/cluster");
    assert_eq!(status, 200, "{body}");
    let c: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(c["hosts"], json!([]));
    assert_eq!(c["title"], "cluster.toml");
    let (_, graph) = get(&addr, "/api/graph");
    let graph: Value = serde_json::from_str(&graph).unwrap();
    assert_eq!(graph["mode"], "cluster");
    assert_eq!(graph["nodes"], json!([]));

    // Two reports half a second apart (by the workers' clocks): CPU and rates per host.
    let mut primary = cluster_host("h2", 1.0, 0.25, 1000);
    primary.partner = Some(sluice_web::PartnerLink::Standby("h3".into()));
    let mut standby = cluster_host("h3", 1.0, 0.25, 1000);
    standby.partner = Some(sluice_web::PartnerLink::StandbyOf("h2".into()));
    view.update(&[
        cluster_host("h1", 1.0, 0.5, 1000),
        primary.clone(),
        standby.clone(),
    ]);
    let mut events = Events::open(&addr, &json!({"stats": true}));
    let first = events.next_named("cluster");
    assert_eq!(first["hosts"].as_array().unwrap().len(), 3, "{first}");
    view.update(&[
        cluster_host("h1", 1.5, 1.0, 3000),
        primary.clone(),
        standby.clone(),
    ]);
    let second = events.next_named("cluster");
    let h1 = &second["hosts"][0];
    assert_eq!(h1["name"], "h1");
    assert_eq!(h1["state"], "running");
    assert!(
        (h1["cpu_percent"].as_f64().unwrap() - 100.0).abs() < 1e-6,
        "{h1}"
    );
    assert!((h1["nodes"][0]["items_per_s"].as_f64().unwrap() - 4000.0).abs() < 1e-6);
    assert_eq!(h1["nodes"][0]["name"], "fir <i>", "names are data, as sent");
    assert_eq!(second["hosts"][1]["partner"]["standby"], "h3");

    // The primary fails over: its takeover record, as h4's receiver saw it, in the list.
    primary.state = sluice_web::HostState::FailedOver;
    primary.message = Some("worker lost".into());
    let mut receiver = cluster_host("h4", 2.0, 0.1, 5000);
    receiver.takeovers = vec![sluice_web::TakeoverReport {
        fence: "h2".into(),
        offset: 4242,
        from_revision: 3,
        to_revision: 5,
        lost_unix_s: Some(100.0),
        lost_cause: Some("reset".into()),
        resumed_unix_s: 101.0,
        first_item_unix_s: Some(101.1),
    }];
    view.update(&[
        cluster_host("h1", 2.0, 1.5, 5000),
        primary,
        standby,
        receiver,
    ]);
    let third = events.next_named("cluster");
    let f = &third["failovers"][0];
    assert_eq!(f["partition"], "h2");
    assert_eq!(f["failed"], "h2");
    assert_eq!(f["took_over"], "h3");
    assert_eq!(f["streams"][0]["offset"], 4242);
    assert_eq!(third["hosts"][1]["state"], "failed_over");
    let (_, body) = get(&addr, "/api/cluster");
    let c: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(c["failovers"], third["failovers"]);

    // Refusals, each with its reason.
    let (status, body) = request(
        &addr,
        &post_raw(&addr, "/api/cluster", &good_headers(&addr), "{}"),
    );
    assert_eq!(status, 405, "{body}");
    assert!(reason(&body).contains("GET"), "{body}");
    let (status, body) = request(
        &addr,
        "GET /api/cluster HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    );
    assert_eq!(status, 421, "{body}");
    assert!(reason(&body).contains("evil.example"), "{body}");
    let (status, body) = request(
        &addr,
        &post_raw(
            &addr,
            "/api/stop",
            &format!("Origin: http://{addr}\r\n"),
            "{}",
        ),
    );
    assert_eq!(status, 401, "{body}");
    assert!(!stop.is_stopped());

    // The stop button stops the cluster run (the controller's handle).
    let (status, _) = post(&addr, "/api/stop", &json!({}));
    assert_eq!(status, 200);
    assert!(stop.is_stopped());
    let (_, body) = get(&addr, "/api/cluster");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["stopping"],
        true
    );
}

#[test]
fn a_single_run_console_has_no_cluster_view_and_says_why() {
    let g = Graph::new();
    let console = Console::start(
        ConsoleOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            token: Some(TOKEN.into()),
        },
        RunHandles {
            control: g.control_handle(),
            stop: StopHandle::new(),
            progress: Progress::new(),
            monitor: Monitor::new(),
            title: "one".into(),
        },
    )
    .unwrap();
    let addr = console.addr().to_string();
    let (_, graph) = get(&addr, "/api/graph");
    assert_eq!(
        serde_json::from_str::<Value>(&graph).unwrap()["mode"],
        "run"
    );
    let (status, body) = get(&addr, "/api/cluster");
    assert_eq!(status, 404, "{body}");
    assert!(
        reason(&body).contains("sluice cluster run --http"),
        "{body}"
    );
}

/// Every `expr` of a Grafana dashboard, wherever its panels nest them.
fn dashboard_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(e)) = m.get("expr") {
                out.push(e.clone());
            }
            m.values().for_each(|v| dashboard_exprs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| dashboard_exprs(v, out)),
        _ => {}
    }
}

#[test]
fn the_example_grafana_dashboard_asks_only_for_metrics_the_console_serves() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut exprs = Vec::new();
    dashboard_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 10, "{} queries only", exprs.len());

    let g = tone_to_steps();
    let Served { console, addr, run } = serve(g, "dashboard");
    let (status, text) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    // Every metric has its `# TYPE` line on every page, whether or not it has samples yet.
    let served: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut asked = 0;
    for expr in &exprs {
        for name in expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("sluice_"))
        {
            asked += 1;
            assert!(
                served.contains(&name),
                "the dashboard's query `{expr}` asks for {name}, which /metrics does not serve (it serves {served:?})"
            );
        }
    }
    assert!(asked >= 12, "only {asked} metric names in the queries");
    assert_eq!(post(&addr, "/api/stop", &json!({})).0, 200);
    run.join().unwrap().unwrap();
    drop(console);
}
