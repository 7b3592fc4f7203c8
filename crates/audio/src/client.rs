//! Opening JACK clients on a named server, and a throw-away dummy-backend server for tests and
//! benchmarks.
//!
//! The `jack` crate opens clients on the default server only (its `jack_client_open` wrapper
//! passes no server name); sluice needs named servers (one per test, `--server` on the command
//! line), so [`open_client`] calls libjack's variadic `jack_client_open` itself with
//! `JackServerName` and hands the client to the `jack` crate.

use std::ffi::CString;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::AudioError;

/// `jack_client_open`, variadic: the server name follows the status pointer when the options
/// include `JackServerName`.
type ClientOpen = unsafe extern "C" fn(
    *const libc::c_char,
    jack_sys::jack_options_t,
    *mut jack_sys::jack_status_t,
    ...
) -> *mut jack_sys::jack_client_t;

/// Opens client `name` on the JACK server `server` (`None`: the default server, or
/// `$JACK_DEFAULT_SERVER`), never starting a server. The name is used exactly.
pub fn open_client(name: &str, server: Option<&str>) -> Result<jack::Client, AudioError> {
    let lib = jack_sys::library().map_err(|e| AudioError::Library(e.to_string()))?;
    let c_name = CString::new(name)
        .map_err(|_| AudioError::Invalid(format!("client name {name:?} contains a NUL byte")))?;
    let c_server = server
        .map(|s| {
            CString::new(s)
                .map_err(|_| AudioError::Invalid(format!("server name {s:?} contains a NUL byte")))
        })
        .transpose()?;
    // SAFETY: the symbol is libjack's `jack_client_open`, whose C prototype is exactly
    // `ClientOpen`; the library stays loaded for the life of the process (a static in jack-sys).
    let open = unsafe { lib.get::<ClientOpen>(b"jack_client_open\0") }
        .map_err(|e| AudioError::Library(e.to_string()))?;
    let mut options = jack_sys::JackNoStartServer | jack_sys::JackUseExactName;
    let mut status: jack_sys::jack_status_t = 0;
    let raw = match &c_server {
        Some(s) => {
            options |= jack_sys::JackServerName;
            // SAFETY: both strings are NUL-terminated and outlive the call; with
            // JackServerName, libjack reads exactly one extra `const char *` argument.
            unsafe { open(c_name.as_ptr(), options, &mut status, s.as_ptr()) }
        }
        // SAFETY: as above, without the optional argument.
        None => unsafe { open(c_name.as_ptr(), options, &mut status) },
    };
    if raw.is_null() {
        let server_failed = status & (jack_sys::JackServerFailed | jack_sys::JackServerError) != 0;
        if server_failed {
            return Err(AudioError::NoServer {
                server: server.map_or("default".into(), |s| format!("'{s}'")),
                flag: server.map_or(String::new(), |s| format!(" -n {s}")),
                client: name.to_string(),
            });
        }
        let why = if status & jack_sys::JackNameNotUnique != 0 {
            "a client of that name is already connected".to_string()
        } else {
            format!("jack_client_open failed (status 0x{status:x})")
        };
        return Err(AudioError::jack(name, "opening the client", why));
    }
    // SAFETY: `raw` is a client just opened by libjack and owned by nobody else; the `jack`
    // crate's Client closes it when dropped.
    Ok(unsafe { jack::Client::from_raw(raw) })
}

/// A JACK 2 server with the dummy backend (no sound card), started for a test or a benchmark
/// and stopped (SIGTERM, then SIGKILL) when dropped, also when the test fails.
#[derive(Debug)]
pub struct DummyServer {
    name: String,
    child: Option<Child>,
    log: std::path::PathBuf,
    rate: u32,
    period: u32,
}

impl DummyServer {
    /// Starts `jackd -n NAME -d dummy -r RATE -p PERIOD` (plus `extra` backend arguments, e.g.
    /// `["-w", "1333"]`) and waits until a client can connect (at most 10 s). `name` must be
    /// unique on the machine (tests use their own name plus the process id).
    ///
    /// libjack (JACK 2) attaches a process to one server at a time: clients opened in one
    /// process must all use the same server while they live. Two jackd starting at the same
    /// instant can collide in JACK's shared registry, so a server that exits at start is
    /// started again (three tries).
    pub fn start(name: &str, rate: u32, period: u32, extra: &[&str]) -> Result<Self, AudioError> {
        Self::start_with(name, &[], rate, period, extra)
    }

    /// [`DummyServer::start`] with server options before `-d dummy` (e.g. `["-p", "4096"]`
    /// for more ports than jackd's default).
    pub fn start_with(
        name: &str,
        server_args: &[&str],
        rate: u32,
        period: u32,
        extra: &[&str],
    ) -> Result<Self, AudioError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match Self::start_once(name, server_args, rate, period, extra) {
                Err(AudioError::Server { detail, .. })
                    if detail.starts_with("exited at start") && tries < 3 =>
                {
                    std::thread::sleep(Duration::from_millis(100 * tries));
                }
                other => return other,
            }
        }
    }

    fn start_once(
        name: &str,
        server_args: &[&str],
        rate: u32,
        period: u32,
        extra: &[&str],
    ) -> Result<Self, AudioError> {
        let err = |detail: String| AudioError::Server {
            server: name.to_string(),
            detail,
        };
        // Its output goes to a file, not a pipe nobody reads (a full pipe would block jackd).
        let log = std::env::temp_dir().join(format!("sluice-jackd-{name}.log"));
        let file = std::fs::File::create(&log)
            .map_err(|e| err(format!("cannot create its log {}: {e}", log.display())))?;
        let file2 = file
            .try_clone()
            .map_err(|e| err(format!("cannot share its log {}: {e}", log.display())))?;
        let mut cmd = Command::new("jackd");
        cmd.args(["-n", name])
            .args(server_args)
            .args(["-d", "dummy", "-r", &rate.to_string()])
            .args(["-p", &period.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(file2));
        let child = cmd.spawn().map_err(|e| {
            err(if e.kind() == std::io::ErrorKind::NotFound {
                "the jackd command is not installed: install the jackd2 package \
                 (`apt-get install jackd2`, or scripts/setup.sh)"
                    .into()
            } else {
                format!("cannot start jackd: {e}")
            })
        })?;
        let mut server = DummyServer {
            name: name.to_string(),
            child: Some(child),
            log,
            rate,
            period,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match open_client(&format!("probe-{}", std::process::id()), Some(name)) {
                Ok(_) => return Ok(server),
                Err(AudioError::NoServer { .. }) if Instant::now() < deadline => {}
                Err(e) => {
                    let log = server.stop_and_log();
                    return Err(err(format!("did not come up: {e}; its output: {log}")));
                }
            }
            if let Some(child) = server.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    let log = server.stop_and_log();
                    return Err(err(format!("exited at start ({status}): {log}")));
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's name, for [`open_client`] and `--server`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sample rate it runs at.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// Period (frames per cycle).
    pub fn period(&self) -> u32 {
        self.period
    }

    fn stop_and_log(&mut self) -> String {
        let Some(mut child) = self.child.take() else {
            return String::new();
        };
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped yet.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        let tail: Vec<&str> = log.lines().rev().take(5).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

impl Drop for DummyServer {
    fn drop(&mut self) {
        self.stop_and_log();
    }
}

/// Turns the server's freewheel mode on or off (through `client`): in freewheel JACK runs
/// cycles back to back, as fast as the clients compute, without the clock, so a test's result
/// does not depend on the machine's load (and the engine's late periods are waits, never gaps).
pub fn set_freewheel(client: &jack::Client, on: bool) -> Result<(), AudioError> {
    // SAFETY: `client` is open; the call sends a request to the server and does not touch
    // memory of ours.
    let rc = unsafe { jack_sys::jack_set_freewheel(client.raw(), i32::from(on)) };
    if rc == 0 {
        Ok(())
    } else {
        Err(AudioError::jack(
            client.name(),
            if on {
                "starting freewheel"
            } else {
                "stopping freewheel"
            },
            format!("jack_set_freewheel returned {rc}"),
        ))
    }
}

/// Connects port `from` to port `to` (full names), waiting up to `timeout` for both to exist:
/// ports of other clients in the same graph appear while it starts.
pub fn connect_when_ready(
    client: &jack::Client,
    from: &str,
    to: &str,
    timeout: Duration,
) -> Result<(), AudioError> {
    let deadline = Instant::now() + timeout;
    while client.port_by_name(from).is_none() || client.port_by_name(to).is_none() {
        if Instant::now() >= deadline {
            let missing = if client.port_by_name(from).is_none() {
                from
            } else {
                to
            };
            return Err(AudioError::jack(
                client.name(),
                &format!("connecting {from} to {to}"),
                format!(
                    "no port {missing} appeared in {:.1} s",
                    timeout.as_secs_f64()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    client
        .connect_ports_by_name(from, to)
        .map_err(|e| AudioError::jack(client.name(), &format!("connecting {from} to {to}"), e))
}
