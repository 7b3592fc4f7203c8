//! Errors of sluice-audio: every one names the server, client, port or file concerned.

use std::path::PathBuf;

/// What went wrong talking to JACK or reading a configuration.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    /// libjack could not be loaded at run time.
    #[error(
        "cannot load the JACK library (libjack.so.0): {0}; install the jackd2 package \
         (`apt-get install jackd2`, or scripts/setup.sh)"
    )]
    Library(String),
    /// No server of that name answers.
    #[error(
        "no JACK server {server} is running (client '{client}' could not connect); start one, \
         e.g. `jackd{flag} -d dummy -r 48000 -p 64`"
    )]
    NoServer {
        /// The server's name (`default` when none was given).
        server: String,
        /// `-n NAME` for a named server, empty for the default one.
        flag: String,
        /// The client that tried to connect.
        client: String,
    },
    /// Any other failure of a JACK call.
    #[error("JACK client '{client}': {what}: {detail}")]
    Jack {
        /// The client concerned.
        client: String,
        /// What was being done.
        what: String,
        /// JACK's own description.
        detail: String,
    },
    /// `jackd` could not be started or did not come up.
    #[error("jackd (server {server}): {detail}")]
    Server {
        /// The server's name.
        server: String,
        /// What happened.
        detail: String,
    },
    /// The convolution engine refused its configuration.
    #[error("convolution engine: {0}")]
    Conv(#[from] sluice_conv::ConvError),
    /// A jconvolver configuration file is wrong.
    #[error("{}:{line}: {message}", file.display())]
    Config {
        /// The configuration file.
        file: PathBuf,
        /// Its line, from 1 (0 when the file itself cannot be read).
        line: usize,
        /// What is wrong and what was expected.
        message: String,
    },
    /// A WAV file (an impulse response) could not be read.
    #[error(transparent)]
    Wav(#[from] sluice_formats::wav::WavError),
    /// Bad settings given by the caller (channel counts, port names, gains).
    #[error("{0}")]
    Invalid(String),
}

impl AudioError {
    /// A [`AudioError::Jack`] for `client` while doing `what`.
    pub(crate) fn jack(client: &str, what: &str, detail: impl std::fmt::Display) -> Self {
        AudioError::Jack {
            client: client.to_string(),
            what: what.to_string(),
            detail: detail.to_string(),
        }
    }
}
