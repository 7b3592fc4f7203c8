//! sluice's ZMTP sockets against libzmq (through pyzmq), both directions for every pattern.
//! Needs `/usr/bin/python3` with `zmq` (Debian's python3-zmq, installed by scripts/setup.sh);
//! without it each test fails and names the package.

mod common;

use common::{pattern, recv_msg, send_msg, Py};
use sluice_zmq::{Socket, SocketOptions, SocketType};
use std::io::Write;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(10);
const SIZES: [usize; 8] = [0, 1, 100, 255, 256, 4096, 70_000, 300_000];

const PRELUDE: &str = r#"
import sys, time, zmq
def pat(i, n):
    return bytes(((k * 31 + i * 7) & 255) for k in range(n))
ctx = zmq.Context()
"#;

fn py(body: &str, args: &[String]) -> Py {
    Py::start(&format!("{PRELUDE}{body}"), args, "zmq", "python3-zmq")
}

fn sizes_arg() -> String {
    SIZES.map(|s| s.to_string()).join(",")
}

fn bound(kind: SocketType, opts: SocketOptions) -> (Socket, String) {
    let s = Socket::new(kind, "tcp://127.0.0.1:0", true, opts).expect("bind");
    let port = s.local_addr().expect("bound").port();
    (s, format!("tcp://127.0.0.1:{port}"))
}

#[test]
fn sluice_push_to_pyzmq_pull() {
    let (mut s, url) = bound(SocketType::Push, SocketOptions::default());
    let p = py(
        r#"
s = ctx.socket(zmq.PULL); s.connect(sys.argv[1])
for i, n in enumerate(map(int, sys.argv[2].split(","))):
    assert s.recv() == pat(i, n), f"message {i}"
assert s.recv_multipart() == [b"head", b"", pat(99, 1000)]
print("ok", flush=True)
"#,
        &[url, sizes_arg()],
    );
    for (i, n) in SIZES.iter().enumerate() {
        send_msg(&mut s, &[&pattern(i, *n)], LIMIT);
    }
    send_msg(&mut s, &[b"head", b"", &pattern(99, 1000)], LIMIT);
    let mut p = p;
    assert_eq!(p.line(), "ok");
    p.finish();
}

#[test]
fn pyzmq_push_to_sluice_pull() {
    let mut p = py(
        r#"
s = ctx.socket(zmq.PUSH); port = s.bind_to_random_port("tcp://127.0.0.1"); print(port, flush=True)
for i, n in enumerate(map(int, sys.argv[1].split(","))):
    s.send(pat(i, n))
s.send_multipart([b"head", b"", pat(99, 1000)])
sys.stdin.readline()
"#,
        &[sizes_arg()],
    );
    let port = p.line();
    let mut s = Socket::new(
        SocketType::Pull,
        &format!("tcp://127.0.0.1:{port}"),
        false,
        SocketOptions::default(),
    )
    .unwrap();
    for (i, n) in SIZES.iter().enumerate() {
        assert_eq!(recv_msg(&mut s, LIMIT), vec![pattern(i, *n)], "message {i}");
    }
    assert_eq!(
        recv_msg(&mut s, LIMIT),
        vec![b"head".to_vec(), vec![], pattern(99, 1000)]
    );
    p.say("done");
    p.finish();
}

#[test]
fn sluice_pub_to_pyzmq_sub() {
    let (mut s, url) = bound(SocketType::Pub, SocketOptions::default());
    let mut p = py(
        r#"
s = ctx.socket(zmq.SUB); s.setsockopt(zmq.SUBSCRIBE, b"a"); s.connect(sys.argv[1])
for i in range(20):
    m = s.recv_multipart()
    assert m == [b"a" + pat(i, 500)], f"message {i}: {m[0][:8]}"
print("ok", flush=True)
"#,
        &[url],
    );
    let start = Instant::now();
    while s.subscribers() == 0 {
        assert!(start.elapsed() < LIMIT, "the pyzmq SUB never subscribed");
        s.poll().unwrap();
        s.wait(Duration::from_millis(10), false);
    }
    for i in 0..20 {
        send_msg(&mut s, &[b"b-not-for-you"], LIMIT);
        send_msg(
            &mut s,
            &[&[b"a".as_slice(), &pattern(i, 500)].concat()],
            LIMIT,
        );
    }
    assert_eq!(p.line(), "ok");
    p.finish();
    assert_eq!(s.dropped(), 0);
}

/// Runs a pyzmq publisher of `kind` ("PUB" or "XPUB") and a sluice SUB subscribed to `a`;
/// returns the first 20 messages the SUB got and what the publisher saw as the subscription.
fn pyzmq_pub_to_sluice_sub(kind: &str, command_form: bool) -> (Vec<Vec<u8>>, Option<String>) {
    let mut p = py(
        r#"
kind = sys.argv[1]
s = ctx.socket(getattr(zmq, kind)); port = s.bind_to_random_port("tcp://127.0.0.1"); print(port, flush=True)
if kind == "XPUB":
    print(s.recv().hex(), flush=True)
end = time.time() + 8
i = 0
while time.time() < end:
    s.send(b"b-other")
    s.send(b"a" + i.to_bytes(4, "big"))
    i += 1
    time.sleep(0.001)
"#,
        &[kind.to_string()],
    );
    let port = p.line();
    let opts = SocketOptions {
        subscribe: b"a".to_vec(),
        subscribe_command: command_form,
        ..SocketOptions::default()
    };
    let mut s = Socket::new(
        SocketType::Sub,
        &format!("tcp://127.0.0.1:{port}"),
        false,
        opts,
    )
    .unwrap();
    let seen = if kind == "XPUB" {
        // Our subscription reaches the XPUB only once we connected; drive the socket meanwhile.
        let mut sub = None;
        std::thread::scope(|scope| {
            let h = scope.spawn(|| p.line());
            let start = Instant::now();
            while !h.is_finished() {
                assert!(start.elapsed() < LIMIT, "the XPUB never saw a subscription");
                if let Some(f) = s.next_frame().unwrap() {
                    while s.remaining() > 0 {
                        s.skip(f.len).unwrap();
                    }
                }
                s.wait(Duration::from_millis(5), false);
            }
            sub = Some(h.join().unwrap());
        });
        sub
    } else {
        None
    };
    let got = (0..20).map(|_| recv_msg(&mut s, LIMIT).remove(0)).collect();
    (got, seen)
}

fn consecutive(got: &[Vec<u8>]) {
    let first = u32::from_be_bytes(got[0][1..5].try_into().unwrap());
    for (k, m) in got.iter().enumerate() {
        assert_eq!(m[0], b'a', "message {k} is not on topic a: {m:?}");
        assert_eq!(
            u32::from_be_bytes(m[1..5].try_into().unwrap()),
            first + k as u32
        );
    }
}

#[test]
fn pyzmq_pub_to_sluice_sub_with_the_zmtp30_subscription_message() {
    let (got, _) = pyzmq_pub_to_sluice_sub("PUB", false);
    consecutive(&got);
}

#[test]
fn pyzmq_xpub_sees_sluice_subscriptions_in_both_forms() {
    for command in [false, true] {
        let (got, seen) = pyzmq_pub_to_sluice_sub("XPUB", command);
        assert_eq!(
            seen.as_deref(),
            Some("0161"),
            "subscription as the XPUB saw it (command form: {command})"
        );
        consecutive(&got);
    }
}

#[test]
fn sluice_req_to_pyzmq_rep() {
    let mut p = py(
        r#"
s = ctx.socket(zmq.REP); port = s.bind_to_random_port("tcp://127.0.0.1"); print(port, flush=True)
for i in range(10):
    m = s.recv_multipart()
    s.send_multipart([b"re:" + m[0]] + m[1:])
"#,
        &[],
    );
    let port = p.line();
    let mut s = Socket::new(
        SocketType::Req,
        &format!("tcp://127.0.0.1:{port}"),
        false,
        SocketOptions::default(),
    )
    .unwrap();
    for i in 0..10u8 {
        let body = pattern(i as usize, 300 * i as usize);
        send_msg(&mut s, &[&[i], &body], LIMIT);
        assert_eq!(
            recv_msg(&mut s, LIMIT),
            vec![vec![b'r', b'e', b':', i], body]
        );
    }
    p.finish();
}

#[test]
fn pyzmq_req_to_sluice_rep() {
    let (mut s, url) = bound(SocketType::Rep, SocketOptions::default());
    let mut p = py(
        r#"
s = ctx.socket(zmq.REQ); s.connect(sys.argv[1])
for i in range(10):
    s.send(pat(i, 100 * i))
    assert s.recv() == b"re:" + pat(i, 100 * i), f"reply {i}"
print("ok", flush=True)
"#,
        &[url],
    );
    for i in 0..10 {
        let m = recv_msg(&mut s, LIMIT);
        assert_eq!(m, vec![pattern(i, 100 * i)]);
        send_msg(&mut s, &[&[b"re:".as_slice(), &m[0]].concat()], LIMIT);
    }
    assert_eq!(p.line(), "ok");
    p.finish();
}

/// The first refusal's log line: the socket lives on and closes only that connection.
fn first_refusal(s: &mut Socket) -> String {
    let start = Instant::now();
    while s.refused() == 0 {
        assert!(
            start.elapsed() < LIMIT,
            "no refusal within {LIMIT:?}: {s:?}"
        );
        s.next_frame()
            .expect("a bad peer costs its connection, not the socket");
        s.wait(Duration::from_millis(10), false);
    }
    s.last_refusal()
        .expect("a refusal is described")
        .to_string()
}

#[test]
fn a_wrong_socket_type_is_named_with_the_peer() {
    let (mut s, url) = bound(SocketType::Pull, SocketOptions::default());
    let _p = py(
        r#"
s = ctx.socket(zmq.PUB); s.connect(sys.argv[1])
time.sleep(10)
"#,
        &[url],
    );
    let e = first_refusal(&mut s);
    // libzmq's READY names its type; if libzmq judged our READY first it hangs up instead,
    // and the error says the peer refused this socket.
    let named = e.contains("peer is a PUB socket") && e.contains("PULL socket (expected PUSH)");
    let refused = e.contains("refused this PULL socket") && e.contains("PUSH");
    assert!(e.contains("127.0.0.1:") && (named || refused), "{e}");
}

#[test]
fn a_peer_that_is_not_zeromq_is_named() {
    let (mut s, url) = bound(SocketType::Pull, SocketOptions::default());
    let mut c = std::net::TcpStream::connect(url.trim_start_matches("tcp://")).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let e = first_refusal(&mut s);
    assert!(
        e.contains("127.0.0.1:") && e.contains("not a ZeroMQ peer"),
        "{e}"
    );
}
