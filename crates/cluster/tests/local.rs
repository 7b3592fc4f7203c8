//! Local clusters of network-namespace hosts, for real: needs root, iproute2 (`ip`, `tc`, `ss`),
//! Debian's `etcd-server` and python3 (the programs run inside the namespaces). A missing one
//! fails the test naming it. Every cluster has a generated unique name and its own base
//! directory, and is removed by a guard, also when the test fails.

use sluice_cluster::etcd::{Etcd, EtcdError};
use sluice_cluster::local::{self, LocalCluster, LocalError, LocalOptions, WorkerSpec};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Fails (never skips) when what these tests need is missing.
fn require_peers() {
    assert!(
        rustix::process::geteuid().is_root(),
        "local cluster tests need root (network namespaces, veth pairs, bridges)"
    );
    for (tool, package) in [
        ("ip", "iproute2"),
        ("tc", "iproute2"),
        ("ss", "iproute2"),
        ("python3", "python3"),
    ] {
        let ok = Command::new(tool)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "`{tool}` is missing: install Debian's {package} (scripts/setup.sh)"
        );
    }
}

/// A base directory of its own for one test, with the clusters made in it; everything is
/// taken down on drop.
struct Base {
    dir: PathBuf,
}

impl Base {
    fn new(test: &str) -> Base {
        require_peers();
        let dir = std::env::temp_dir().join(format!("sluice-local-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Base { dir }
    }

    fn options(&self, hosts: usize) -> LocalOptions {
        LocalOptions {
            hosts,
            base_dir: self.dir.clone(),
            ..LocalOptions::default()
        }
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        if let Ok(dir) = std::fs::read_dir(&self.dir) {
            for e in dir.flatten() {
                if let Err(err) = local::down(&e.path()) {
                    eprintln!("cleanup of {}: {err}", e.path().display());
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `python3 -c CODE` inside `netns` and returns its stdout (panics with its stderr).
fn python_in(netns: &str, code: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", netns, "python3", "-c", code])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python3 in {netns} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn output(argv: &[&str]) -> String {
    let out = Command::new(argv[0]).args(&argv[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{argv:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether a process is running (exists and is not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(false)
}

/// Asserts that nothing of cluster `name` is left: namespaces, links, processes, directory.
fn assert_gone(name: &str, run_dir: &Path, pids: &[u32]) {
    let prefix = format!("sl-{name}");
    let netns = output(&["ip", "netns", "list"]);
    assert!(
        !netns.lines().any(|l| l.starts_with(&format!("{prefix}-"))),
        "namespaces left: {netns}"
    );
    let links = output(&["ip", "-o", "link", "show"]);
    assert!(
        !links
            .lines()
            .any(|l| l.contains(&format!(": {prefix}:")) || l.contains(&format!(": {prefix}-"))),
        "links left: {links}"
    );
    for &pid in pids {
        assert!(!running(pid), "process {pid} still runs");
    }
    assert!(!run_dir.exists(), "{} left", run_dir.display());
}

#[test]
fn hosts_reach_each_other_and_etcd_only_on_the_bridge() {
    let base = Base::new("reach");
    let mut options = base.options(2);
    options.rate = Some("100mbit".into());
    let cluster = LocalCluster::up(options).unwrap_or_else(|e| panic!("{e}"));
    let hosts = cluster.hosts();
    assert_eq!(hosts.len(), 2);
    let (h1, h2) = (&hosts[0], &hosts[1]);
    assert_eq!((h1.name.as_str(), h2.name.as_str()), ("h1", "h2"));
    let bridge = cluster.bridge_address();
    assert_eq!(bridge.octets()[3], 1);
    assert_eq!(h1.address.octets()[..3], bridge.octets()[..3]);
    assert_eq!((h1.address.octets()[3], h2.address.octets()[3]), (2, 3));

    // The namespace holds only its own interfaces.
    let links = output(&["ip", "-n", &h1.netns, "-o", "link", "show"]);
    let names: Vec<&str> = links
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap())
        .collect();
    assert_eq!(names, ["lo", "eth0"], "{links}");

    // A TCP connection from h1's namespace to a listener in h2's.
    let listener = format!(
        "import socket\n\
         s = socket.socket(); s.bind(('{}', 5000)); s.listen(1)\n\
         print('ready', flush=True)\n\
         c, peer = s.accept(); c.sendall(c.recv(100)[::-1] + b' from ' + peer[0].encode())",
        h2.address
    );
    let mut server = Command::new("ip")
        .args(["netns", "exec", &h2.netns, "python3", "-c", &listener])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let reply = python_in(
        &h1.netns,
        &format!(
            "import socket\n\
             c = socket.create_connection(('{}', 5000), timeout=5); c.sendall(b'hello')\n\
             print(c.recv(100).decode())",
            h2.address
        ),
    );
    assert_eq!(reply, format!("olleh from {}", h1.address));
    assert!(server.wait().unwrap().success());

    // etcd: a key put from the root namespace is read from inside h1 through the bridge, by
    // another TLS client (Python's) with the cluster's client certificate and login.
    let etcd = cluster.etcd().unwrap();
    let test_key = format!("{}test", cluster.etcd_prefix());
    etcd.put(&test_key, b"from root", None).unwrap();
    let access = cluster.etcd_access_dir();
    let file = |name: &str| access.join(name).display().to_string();
    let python_etcd = |with_cert: bool, login: bool| {
        format!(
            "import urllib.request, json, base64, ssl\n\
             ctx = ssl.create_default_context(cafile='{ca}')\n\
             if {with_cert}: ctx.load_cert_chain('{cert}', '{key}')\n\
             def call(path, body, token=None):\n\
             \x20   h = {{'Content-Type': 'application/json'}}\n\
             \x20   if token: h['Authorization'] = token\n\
             \x20   req = urllib.request.Request('{url}' + path, data=json.dumps(body).encode(), headers=h)\n\
             \x20   try:\n\
             \x20       return json.load(urllib.request.urlopen(req, context=ctx, timeout=5))\n\
             \x20   except urllib.error.HTTPError as e:\n\
             \x20       return json.load(e)\n\
             token = None\n\
             if {login}:\n\
             \x20   user, password = open('{login_file}').read().split()\n\
             \x20   token = call('/v3/auth/authenticate', {{'name': user, 'password': password}})['token']\n\
             try:\n\
             \x20   r = call('/v3/kv/range', {{'key': base64.b64encode(b'{test_key}').decode()}}, token)\n\
             \x20   print(base64.b64decode(r['kvs'][0]['value']).decode() if 'kvs' in r else r.get('error', r))\n\
             except Exception as e:\n\
             \x20   print('refused:', type(e).__name__)",
            ca = file("ca.pem"),
            cert = file("client.pem"),
            key = file("client.key"),
            login_file = file("login"),
            url = cluster.etcd_url(),
            with_cert = if with_cert { "True" } else { "False" },
            login = if login { "True" } else { "False" },
        )
    };
    assert_eq!(python_in(&h1.netns, &python_etcd(true, true)), "from root");
    // Without the client certificate the TLS handshake fails; with it but without a login,
    // etcd refuses the read.
    let no_cert = python_in(&h1.netns, &python_etcd(false, false));
    assert!(no_cert.starts_with("refused"), "{no_cert}");
    let no_login = python_in(&h1.netns, &python_etcd(true, false));
    assert!(
        no_login.contains("permission denied") || no_login.contains("user name is empty"),
        "{no_login}"
    );
    // The private keys and logins are the owner's alone.
    let pki = cluster.run_dir().join("etcd-pki");
    for f in [
        pki.join("ca.key"),
        pki.join("server.key"),
        pki.join("root.login"),
        access.join("client.key"),
        access.join("login"),
    ] {
        let mode = std::fs::metadata(&f).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", f.display());
    }
    // ... and listens on the bridge address only.
    let etcd_pid = cluster.etcd_pid().unwrap();
    let sockets = output(&["ss", "-Hltnp"]);
    let ours: Vec<&str> = sockets
        .lines()
        .filter(|l| l.contains(&format!("pid={etcd_pid},")))
        .collect();
    assert_eq!(
        ours.len(),
        2,
        "etcd should listen on 2379 and 2380: {sockets}"
    );
    for l in &ours {
        let local = l.split_whitespace().nth(3).unwrap();
        assert!(
            local.starts_with(&format!("{bridge}:")),
            "etcd listens on {local}"
        );
    }
    let loopback = Etcd::new("http://127.0.0.1:2379")
        .unwrap()
        .with_timeouts(Duration::from_secs(1), Duration::from_secs(1));
    assert!(
        loopback.get("sluice/test").is_err(),
        "etcd answers on 127.0.0.1"
    );

    // The rate limit, both directions.
    let veth = format!("sl-{}-1", cluster.name());
    for argv in [
        vec!["tc", "qdisc", "show", "dev", &veth],
        vec!["tc", "-n", &h1.netns, "qdisc", "show", "dev", "eth0"],
    ] {
        let qdisc = output(&argv);
        assert!(
            qdisc.contains("tbf") && qdisc.contains("rate 100Mbit"),
            "{argv:?}: {qdisc}"
        );
    }

    // The key and hosts files.
    let key = std::fs::read_to_string(cluster.key_file()).unwrap();
    assert_eq!(key.len(), 65);
    assert!(key.ends_with('\n') && key[..64].bytes().all(|b| b.is_ascii_hexdigit()));
    let mode = std::fs::metadata(cluster.key_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let hosts_toml: toml::Table = std::fs::read_to_string(cluster.hosts_file())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        hosts_toml["hosts"]["h2"]["address"].as_str(),
        Some(h2.address.to_string().as_str())
    );

    // open and list see it.
    let opened = LocalCluster::open(&base.dir, cluster.name()).unwrap();
    assert_eq!(opened.hosts(), hosts);
    let listed = local::list(&base.dir).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].etcd_url(), cluster.etcd_url());

    // down removes everything, and again finds nothing to remove.
    let removed = local::down(cluster.run_dir()).unwrap();
    let summary = removed.join("; ");
    for what in [
        "etcd (pid",
        "network namespace",
        "interface sl-",
        "directory",
    ] {
        assert!(summary.contains(what), "{summary}");
    }
    assert_gone(cluster.name(), cluster.run_dir(), &[etcd_pid]);
    assert!(local::down(cluster.run_dir()).unwrap().is_empty());
}

#[test]
fn two_clusters_side_by_side() {
    let base = Base::new("side");
    let options = base.options(1);
    let other = LocalOptions {
        rate: Some("1gbit".into()),
        ..options.clone()
    };
    let a = std::thread::spawn(move || LocalCluster::up(options));
    let b = std::thread::spawn(move || LocalCluster::up(other));
    let a = a.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    let b = b.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(a.name(), b.name());
    assert_ne!(a.bridge_address(), b.bridge_address());
    assert_ne!(a.hosts()[0].netns, b.hosts()[0].netns);
    let (ea, eb) = (a.etcd().unwrap(), b.etcd().unwrap());
    let (who_a, who_b) = (
        format!("{}who", a.etcd_prefix()),
        format!("{}who", b.etcd_prefix()),
    );
    ea.put(&who_a, b"a", None).unwrap();
    assert_eq!(ea.get(&who_a).unwrap(), Some(b"a".to_vec()));
    // Each cluster has its own CA: a's credentials do not open b's etcd.
    let crossed = Etcd::secure(&b.etcd_url(), ea.access().unwrap().clone()).unwrap();
    let e = crossed.get(&who_b).unwrap_err();
    assert!(matches!(e, EtcdError::Tls { .. }), "{e}");
    assert_ne!(
        std::fs::read(a.key_file()).unwrap(),
        std::fs::read(b.key_file()).unwrap()
    );
    let mut names: Vec<String> = local::list(&base.dir)
        .unwrap()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let mut expected = vec![a.name().to_string(), b.name().to_string()];
    names.sort();
    expected.sort();
    assert_eq!(names, expected);
    // Taking one down leaves the other working.
    local::down(a.run_dir()).unwrap();
    assert_gone(a.name(), a.run_dir(), &[a.etcd_pid().unwrap()]);
    assert_eq!(eb.get(&who_b).unwrap(), None);
    eb.put(&who_b, b"b", None).unwrap();
    assert_eq!(eb.get(&who_b).unwrap(), Some(b"b".to_vec()));
    local::down(b.run_dir()).unwrap();
    assert_gone(b.name(), b.run_dir(), &[b.etcd_pid().unwrap()]);
}

/// A stand-in worker executable: prints its arguments and sleeps (the `sluice worker` command
/// is not part of this crate).
fn fake_worker(base: &Base) -> PathBuf {
    let path = base.dir.join("worker.sh");
    std::fs::write(&path, "#!/bin/sh\necho \"$@\"\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A process's real user id, from the `Uid:` line of `/proc/PID/status`.
fn uid_of(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        .and_then(|uid| uid.parse().ok())
        .unwrap_or_else(|| panic!("no Uid line in /proc/{pid}/status"))
}

/// The network namespace of a process, as the inode of its `ns/net`.
fn netns_inode_of(pid: u32) -> u64 {
    std::fs::metadata(format!("/proc/{pid}/ns/net"))
        .unwrap()
        .ino()
}

/// Runs `up` in a child process (this test binary's `crash_helper`) and kills it with SIGKILL
/// as soon as `ready` says so, leaving its cluster behind as a crash would. Returns the
/// cluster's run directory.
fn crashed_up(base: &Base, hosts: usize, ready: impl Fn(&str) -> bool) -> PathBuf {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_helper",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SLUICE_CRASH_BASE", &base.dir)
        .env("SLUICE_CRASH_HOSTS", hosts.to_string())
        .env("SLUICE_CRASH_WORKER", fake_worker(base))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        let state = std::fs::read_dir(&base.dir)
            .unwrap()
            .flatten()
            .map(|e| e.path().join("state.json"))
            .find(|p| p.exists());
        if let Some(state) = state {
            let text = std::fs::read_to_string(&state).unwrap_or_default();
            if ready(&text) {
                child.kill().unwrap();
                child.wait().unwrap();
                return state.parent().unwrap().to_path_buf();
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the helper exited ({status}) before it was killed");
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the helper's up is stuck"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
#[ignore = "the child process of the crash tests, not a test"]
fn crash_helper() {
    let Some(base) = std::env::var_os("SLUICE_CRASH_BASE") else {
        return;
    };
    let hosts = std::env::var("SLUICE_CRASH_HOSTS")
        .unwrap()
        .parse()
        .unwrap();
    let exe = PathBuf::from(std::env::var_os("SLUICE_CRASH_WORKER").unwrap());
    LocalCluster::up(LocalOptions {
        hosts,
        base_dir: base.into(),
        worker: Some(WorkerSpec::new(exe)),
        ..LocalOptions::default()
    })
    .unwrap();
    std::thread::sleep(Duration::from_secs(600));
}

#[test]
fn down_cleans_up_after_a_crash_with_workers_running() {
    let base = Base::new("crash");
    // Killed once both workers are recorded: up is complete, its process gone.
    let run_dir = crashed_up(&base, 2, |s| s.matches("\"pid\"").count() >= 3);
    let name = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    let cluster = LocalCluster::open(&base.dir, &name).unwrap();
    let mut pids = vec![cluster.etcd_pid().unwrap()];
    let started = Instant::now();
    for h in cluster.hosts() {
        let pid = h.worker_pid.unwrap();
        pids.push(pid);
        assert!(running(pid), "worker {} is not running", h.name);
        // It gets exactly the arguments of a worker (once its log shows them, it has
        // entered its namespace: checked below).
        let log = run_dir.join(format!("{}.log", h.name));
        let own = cluster.worker_dir();
        let expected = format!(
            "worker --cluster {name} --name {} --listen {}:7000 --etcd {} --etcd-access {} \
             --key-file {} --data-dir {} --identity {} --allow-paths-outside",
            h.name,
            h.address,
            cluster.etcd_url(),
            cluster.worker_etcd_dir(&h.name).display(),
            own.join("cluster.key").display(),
            own.join("data").display(),
            cluster.worker_identity(&h.name).display(),
        );
        while std::fs::read_to_string(&log).unwrap_or_default().trim() != expected {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{}: {:?}, expected {expected:?}",
                log.display(),
                std::fs::read_to_string(&log)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let ns = std::fs::metadata(format!("/run/netns/{}", h.netns))
            .unwrap()
            .ino();
        assert_eq!(
            netns_inode_of(pid),
            ns,
            "worker {} is not in {}",
            h.name,
            h.netns
        );
        assert!(running(pid), "worker {} stopped", h.name);
        // Started by root, it runs as the unprivileged system user, which owns its files.
        let uid = uid_of(pid);
        assert_ne!(uid, 0, "worker {} runs as root", h.name);
        assert_eq!(Some(uid), cluster.worker_ids().map(|i| i.uid));
        assert_eq!(std::fs::metadata(&own).unwrap().uid(), uid);
        assert_eq!(
            std::fs::metadata(cluster.worker_etcd_dir(&h.name).join("client.key"))
                .unwrap()
                .uid(),
            uid
        );
    }
    let x = format!("{}x", cluster.etcd_prefix());
    assert!(cluster.etcd().unwrap().get(&x).is_ok());
    // Each worker has an etcd user of its own (these workers are stand-ins that do not
    // register, so h1's login is used here): it writes its own record, not h2's.
    // (Its files belong to the workers' user: read here as root, not through `load`, which
    // insists on the caller's own files.)
    let dir = cluster.worker_etcd_dir("h1");
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let text = String::from_utf8(read("login")).unwrap();
    let mut lines = text.lines();
    let login =
        sluice_cluster::etcd::Login::new(lines.next().unwrap_or(""), lines.next().unwrap_or(""))
            .unwrap();
    assert_eq!(login.user, "sluice-h1");
    let access = sluice_cluster::etcd::EtcdAccess::from_pem(
        &read("ca.pem"),
        Some((&read("client.pem"), &read("client.key"))),
        Some(login),
    )
    .unwrap();
    let h1 = sluice_cluster::etcd::Etcd::secure(&cluster.etcd_url(), access).unwrap();
    let record = |host: &str| sluice_cluster::membership::worker_key(&name, host);
    h1.put(&record("h1"), b"{}", None).unwrap();
    let e = h1.put(&record("h2"), b"{}", None).unwrap_err().to_string();
    assert!(e.contains("permission denied"), "{e}");
    let removed = local::down(&run_dir).unwrap().join("; ");
    assert!(
        removed.contains("worker h1") && removed.contains("worker h2"),
        "{removed}"
    );
    assert_gone(&name, &run_dir, &pids);
}

#[test]
fn down_cleans_up_after_a_crash_in_the_middle_of_up() {
    let base = Base::new("midup");
    // Killed while it creates the 32 hosts' namespaces and links.
    let run_dir = crashed_up(&base, 32, |s| s.matches("Netns").count() >= 3);
    let name = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    let netns = output(&["ip", "netns", "list"]);
    assert!(netns.contains(&format!("sl-{name}-h1")), "{netns}");
    let removed = local::down(&run_dir).unwrap().join("; ");
    assert!(
        removed.contains(&format!("network namespace sl-{name}-h1")),
        "{removed}"
    );
    assert_gone(&name, &run_dir, &[]);
}

#[test]
fn a_failing_up_removes_what_it_created() {
    let base = Base::new("fail");
    // The worker is started last: the bridge, namespaces, links and etcd exist by then.
    let name = format!("f{:x}", std::process::id() & 0xffffff);
    let mut options = base.options(2);
    options.name = Some(name.clone());
    options.worker = Some(WorkerSpec::new(base.dir.join("no-such-sluice")));
    let e = LocalCluster::up(options).unwrap_err().to_string();
    assert!(
        e.contains("no-such-sluice") && e.contains("ip netns exec"),
        "{e}"
    );
    assert!(local::list(&base.dir).unwrap().is_empty());
    let etcds = output(&["ps", "-eo", "args"]);
    assert!(
        !etcds.contains(&base.dir.join(&name).join("etcd").display().to_string()),
        "etcd left: {etcds}"
    );
    assert_gone(&name, &base.dir.join(&name), &[]);

    for (options, expected) in [
        (base.options(0), "0 hosts"),
        (base.options(33), "33 hosts"),
        (
            LocalOptions {
                name: Some("Bad-Name".into()),
                ..base.options(1)
            },
            "bad cluster name",
        ),
        (
            LocalOptions {
                rate: Some("fast".into()),
                ..base.options(1)
            },
            "bad rate",
        ),
    ] {
        let e = LocalCluster::up(options).unwrap_err();
        assert!(matches!(e, LocalError::Invalid(_)), "{e}");
        assert!(e.to_string().contains(expected), "{e}");
    }
}

#[test]
fn a_named_cluster_is_unique() {
    let base = Base::new("named");
    let name = format!("t{:x}", std::process::id() & 0xffffff);
    let options = LocalOptions {
        name: Some(name.clone()),
        ..base.options(1)
    };
    let cluster = LocalCluster::up(options.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cluster.name(), name);
    assert_eq!(cluster.bridge(), format!("sl-{name}"));
    let e = LocalCluster::up(options).unwrap_err();
    assert!(matches!(e, LocalError::Exists { .. }), "{e}");
    // The failed second up did not touch the first cluster.
    let x = format!("{}x", cluster.etcd_prefix());
    assert!(cluster.etcd().unwrap().get(&x).is_ok());
    local::down(cluster.run_dir()).unwrap();
    assert_gone(&name, cluster.run_dir(), &[cluster.etcd_pid().unwrap()]);
}

#[test]
fn down_never_removes_a_directory_it_cannot_tell_is_a_cluster() {
    let base = Base::new("notours");
    let precious = base.dir.join("precious");
    std::fs::create_dir_all(&precious).unwrap();
    std::fs::write(precious.join("data.txt"), "keep me").unwrap();
    let e = local::down(&precious).unwrap_err().to_string();
    assert!(e.contains("state.json"), "{e}");
    assert_eq!(
        std::fs::read_to_string(precious.join("data.txt")).unwrap(),
        "keep me"
    );
    // An empty directory is what an `up` that died at once leaves: removed.
    let empty = base.dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(local::down(&empty).unwrap().len(), 1);
    assert!(!empty.exists());
}
