//! [`EtcdServer`]: one etcd member started from Debian's `etcd` binary, for tests and local
//! clusters.

use super::pki::ServerTls;
use super::{Etcd, EtcdAccess};
use std::fs::{self, File};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long [`EtcdServer::start`] waits for the new member to answer.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How to start one etcd member.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// The member's name (`--name`).
    pub name: String,
    /// Its data directory (created by etcd; must not hold another cluster's data).
    pub data_dir: PathBuf,
    /// The only address it serves clients on (`--listen-client-urls`).
    pub client_addr: SocketAddr,
    /// The only address it listens for peers on (`--listen-peer-urls`).
    pub peer_addr: SocketAddr,
    /// Raft heartbeat interval in milliseconds (etcd's default is 100).
    pub heartbeat_ms: u32,
    /// Raft election timeout in milliseconds (etcd's default is 1000; at least 5 heartbeats).
    pub election_timeout_ms: u32,
    /// Run it inside this network namespace (`ip netns exec NS etcd ...`; needs root).
    pub netns: Option<String>,
    /// Where its output goes; by default `DATA_DIR.log` beside the data directory.
    pub log_path: Option<PathBuf>,
    /// Start it in a session of its own (`setsid`), so that a Ctrl-C in the caller's terminal
    /// does not reach it: for a server that will be [`EtcdServer::detach`]ed.
    pub new_session: bool,
    /// Serve clients and peers over TLS only, with client certificates required
    /// (`--client-cert-auth`, `--peer-client-cert-auth`), and the credentials [`start`]
    /// checks it with. `None`: plain HTTP (tests of the client only).
    ///
    /// [`start`]: EtcdServer::start
    pub tls: Option<(ServerTls, EtcdAccess)>,
    /// Seconds an auth token lives (`--auth-token-ttl`; etcd's default is 300).
    pub auth_token_ttl_s: Option<u32>,
}

impl EtcdOptions {
    /// Options with etcd's default timing, no namespace, the default log path and the caller's
    /// session.
    pub fn new(
        name: &str,
        data_dir: impl Into<PathBuf>,
        client_addr: SocketAddr,
        peer_addr: SocketAddr,
    ) -> EtcdOptions {
        EtcdOptions {
            name: name.to_string(),
            data_dir: data_dir.into(),
            client_addr,
            peer_addr,
            heartbeat_ms: 100,
            election_timeout_ms: 1000,
            netns: None,
            log_path: None,
            new_session: false,
            tls: None,
            auth_token_ttl_s: None,
        }
    }

    /// The log file these options write to.
    pub fn log_file(&self) -> PathBuf {
        self.log_path.clone().unwrap_or_else(|| {
            let mut p = self.data_dir.clone().into_os_string();
            p.push(".log");
            PathBuf::from(p)
        })
    }
}

/// Why etcd could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EtcdServerError {
    /// The `etcd` binary is not installed.
    #[error(
        "the etcd binary was not found (looked in PATH and /usr/bin): install Debian's \
         `etcd-server` package (scripts/setup.sh does)"
    )]
    NotInstalled,
    /// A file or directory could not be created.
    #[error("etcd {name}: {path}: {source}")]
    File {
        /// The member's name.
        name: String,
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The process could not be started.
    #[error("etcd {name}: cannot run `{command}`: {source}")]
    Spawn {
        /// The member's name.
        name: String,
        /// The command line.
        command: String,
        /// The error.
        source: std::io::Error,
    },
    /// etcd exited before it answered.
    #[error("etcd {name} exited ({status}) before it answered on {url}; its log {log} ends with:\n{tail}")]
    Exited {
        /// The member's name.
        name: String,
        /// Its client URL.
        url: String,
        /// How it exited.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// etcd did not answer in time (it has been stopped).
    #[error("etcd {name} did not answer on {url} within {secs} s (stopped it); its log {log} ends with:\n{tail}")]
    Timeout {
        /// The member's name.
        name: String,
        /// Its client URL.
        url: String,
        /// The time waited.
        secs: u64,
        /// Its log file.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
}

/// A running etcd member. Dropping it stops it (SIGTERM, then SIGKILL after 5 s) and waits
/// for it, unless it was [`detach`](EtcdServer::detach)ed.
#[derive(Debug)]
pub struct EtcdServer {
    child: Option<Child>,
    url: String,
    log: PathBuf,
    access: Option<EtcdAccess>,
}

impl EtcdServer {
    /// Starts etcd as `options` say and waits (at most 15 s) until it answers a read.
    pub fn start(options: EtcdOptions) -> Result<EtcdServer, EtcdServerError> {
        let binary = find_etcd().ok_or(EtcdServerError::NotInstalled)?;
        let name = options.name.clone();
        let file_err = |path: &Path| {
            let name = name.clone();
            let path = path.to_path_buf();
            move |source| EtcdServerError::File { name, path, source }
        };
        let log = options.log_file();
        if let Some(parent) = log.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(file_err(parent))?;
        }
        let out = File::create(&log).map_err(file_err(&log))?;
        let err = out.try_clone().map_err(file_err(&log))?;
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let url = format!("{scheme}://{}", options.client_addr);
        let peer = format!("{scheme}://{}", options.peer_addr);
        let mut argv: Vec<String> = Vec::new();
        if options.new_session {
            argv.push("setsid".into());
        }
        if let Some(ns) = &options.netns {
            argv.extend(["ip", "netns", "exec", ns].map(String::from));
        }
        argv.push(binary.display().to_string());
        let flags = [
            ("--name", options.name.clone()),
            ("--data-dir", options.data_dir.display().to_string()),
            ("--listen-client-urls", url.clone()),
            ("--advertise-client-urls", url.clone()),
            ("--listen-peer-urls", peer.clone()),
            ("--initial-advertise-peer-urls", peer.clone()),
            ("--initial-cluster", format!("{}={peer}", options.name)),
            ("--initial-cluster-state", "new".into()),
            ("--heartbeat-interval", options.heartbeat_ms.to_string()),
            (
                "--election-timeout",
                options.election_timeout_ms.to_string(),
            ),
            ("--logger", "zap".into()),
            ("--log-outputs", "stderr".into()),
        ];
        for (flag, value) in flags {
            argv.push(flag.into());
            argv.push(value);
        }
        if let Some((tls, _)) = &options.tls {
            let (ca, cert, key) = (
                tls.ca_file.display().to_string(),
                tls.cert_file.display().to_string(),
                tls.key_file.display().to_string(),
            );
            for (flag, value) in [
                ("--cert-file", &cert),
                ("--key-file", &key),
                ("--trusted-ca-file", &ca),
                ("--peer-cert-file", &cert),
                ("--peer-key-file", &key),
                ("--peer-trusted-ca-file", &ca),
            ] {
                argv.push(flag.into());
                argv.push(value.clone());
            }
            argv.push("--client-cert-auth".into());
            argv.push("--peer-client-cert-auth".into());
        }
        if let Some(ttl) = options.auth_token_ttl_s {
            argv.push("--auth-token-ttl".into());
            argv.push(ttl.to_string());
        }
        let command = argv.join(" ");
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|source| EtcdServerError::Spawn {
                name: name.clone(),
                command: command.clone(),
                source,
            })?;
        let access = options.tls.as_ref().map(|(_, access)| access.clone());
        let mut server = EtcdServer {
            child: Some(child),
            url: url.clone(),
            log: log.clone(),
            access,
        };
        let client = server
            .client()
            .with_timeouts(Duration::from_millis(500), Duration::from_secs(1));
        let started = Instant::now();
        loop {
            if let Some(child) = server.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    server.child = None;
                    return Err(EtcdServerError::Exited {
                        name,
                        url,
                        status: status.to_string(),
                        tail: tail(&log),
                        log,
                    });
                }
            }
            // Whoever answers must be this member: another etcd already on the port answers
            // too, while this one fails to bind and exits (reported above).
            let ours = client
                .member_names()
                .is_ok_and(|names| names.contains(&options.name));
            if ours && client.get("sluice/.probe").is_ok() {
                return Ok(server);
            }
            if started.elapsed() >= START_TIMEOUT {
                server.stop();
                return Err(EtcdServerError::Timeout {
                    name,
                    url,
                    secs: START_TIMEOUT.as_secs(),
                    tail: tail(&log),
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its client URL, `https://CLIENT_ADDR` (`http://` without TLS).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A client for it, with the credentials it was started with (for a server with TLS).
    pub fn client(&self) -> Etcd {
        Etcd::connect(&self.url, self.access.clone()).expect("a socket address makes a valid URL")
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Leaves it running after this value is dropped and returns its process id (whoever
    /// stops it later signals that pid).
    pub fn detach(mut self) -> u32 {
        self.child.take().map(|c| c.id()).unwrap_or(0)
    }

    /// Stops it: SIGTERM, then SIGKILL after 5 s; waits for it.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The etcd binary: `etcd` in PATH, else /usr/bin/etcd.
fn find_etcd() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("etcd"))
        .find(|p| p.is_file())
}

/// The last lines of a log file, for an error message.
fn tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}
