//! The web console's flags (`--http` and its company), shared by `sluice run` and `sluice
//! cluster run`, and the start that prints where to open it.

use clap::Args;
use std::path::PathBuf;

/// The console's flags.
#[derive(Args, Debug, Clone, Default)]
pub struct HttpArgs {
    /// Serve the web console, its HTTP API and Prometheus metrics on this address while the
    /// graph runs (for `sluice cluster run`: every host, its partition's nodes and CPU, the
    /// standbys and the failovers as they happen); the address to open is printed at start.
    /// Plain HTTP on loopback (e.g. 127.0.0.1:8080); any other address (e.g. 0.0.0.0:8443) is
    /// served over HTTPS only, with --http-cert/--http-key or a certificate made at start (its
    /// SHA-256 fingerprint is printed).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// The console's TLS certificate chain (PEM), with --http-key: serves HTTPS.
    #[arg(long, value_name = "FILE", requires_all = ["http", "http_key"])]
    pub http_cert: Option<PathBuf>,
    /// The private key of --http-cert (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["http", "http_cert"])]
    pub http_key: Option<PathBuf>,
    /// Serve HTTPS on a loopback address too (a non-loopback one always is).
    #[arg(long, requires = "http")]
    pub http_tls: bool,
    /// Read the console's token from this file (first line) instead of making a random one.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub http_token_file: Option<PathBuf>,
}

impl HttpArgs {
    /// Starts the console watching `watched` when `--http` was given, and prints where to
    /// open it (and the certificate's fingerprint when it serves HTTPS).
    pub fn start(
        &self,
        watched: impl Into<sluice_web::Watched>,
    ) -> anyhow::Result<Option<sluice_web::Console>> {
        let Some(bind) = self.http else {
            return Ok(None);
        };
        let tls = match (&self.http_cert, &self.http_key) {
            (Some(cert), Some(key)) => Some(sluice_web::Tls::Files {
                cert: cert.clone(),
                key: key.clone(),
            }),
            // Plain HTTP stays on loopback: anything else is HTTPS.
            _ if self.http_tls || !bind.ip().is_loopback() => Some(sluice_web::Tls::SelfSigned),
            _ => None,
        };
        let token = match &self.http_token_file {
            Some(path) => Some(read_token(path)?),
            None => None,
        };
        let console = sluice_web::Console::start_with_tls(
            sluice_web::ConsoleOptions { bind, token },
            tls.as_ref(),
            watched,
        )?;
        eprintln!("sluice: console at {}", console.url());
        if let Some(fingerprint) = console.fingerprint() {
            eprintln!(
                "sluice: console certificate SHA-256 {fingerprint} (check it when the browser asks)"
            );
        }
        Ok(Some(console))
    }
}

/// The token on the first line of `path`: at least 16 printable characters.
fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("console token file {}: {e}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        anyhow::bail!(
            "console token file {}: the token must be at least 16 printable characters on the first line",
            path.display()
        );
    }
    Ok(token)
}
