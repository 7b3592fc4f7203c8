//! The break-even table: per kind of operation, the size in bytes from which handing it to
//! the engine beats doing it on the caller's thread. Smaller operations run inline at
//! `submit`.
//!
//! `sluice bench copy --calibrate` measures the table for a machine and stores it in
//! [`BreakEven::machine_path`]:
//! `$SLUICE_COPY_BREAKEVEN` if set, else `$XDG_CACHE_HOME/sluice/copy-breakeven-<host>.txt`,
//! else `$HOME/.cache/sluice/copy-breakeven-<host>.txt`. The file is plain text, one
//! `<kind> <bytes>` line per kind (`copy`, `fill`, `copy_2d`, `rotate`, `keyed_copy`, `sg`);
//! `#` starts a comment; kinds it does not name keep the built-in value.

use std::path::{Path, PathBuf};

use crate::op::OpKind;

/// Break-even sizes, in bytes, per kind of operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakEven {
    thresholds: [usize; 6],
}

fn index(kind: OpKind) -> usize {
    match kind {
        OpKind::Copy => 0,
        OpKind::Fill => 1,
        OpKind::Copy2d => 2,
        OpKind::Rotate => 3,
        OpKind::KeyedCopy => 4,
        OpKind::Sg => 5,
    }
}

/// Why a break-even file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BreakEvenError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A line is not `<kind> <bytes>`.
    #[error("{path}:{line}: expected `<kind> <bytes>` with a known kind, got {text:?}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
}

impl Default for BreakEven {
    /// The built-in table, measured by `sluice bench copy --calibrate` on a 2-vCPU AMD EPYC
    /// (Zen 4) VM: handing off costs the caller about 5-15 µs of CPU (enqueue, a wake-up, a
    /// parked wait), which a plain copy only takes from about 1 MiB on.
    fn default() -> Self {
        BreakEven {
            thresholds: [1 << 20, 1 << 20, 1 << 20, 256 << 10, 64 << 10, 256 << 10],
        }
    }
}

impl BreakEven {
    /// A table where every operation goes to the engine (nothing inline).
    pub fn never_inline() -> Self {
        BreakEven { thresholds: [0; 6] }
    }

    /// A table where every operation runs on the caller.
    pub fn always_inline() -> Self {
        BreakEven {
            thresholds: [usize::MAX; 6],
        }
    }

    /// The break-even size of `kind`.
    pub fn threshold(&self, kind: OpKind) -> usize {
        self.thresholds[index(kind)]
    }

    /// Sets the break-even size of `kind`.
    pub fn set(&mut self, kind: OpKind, bytes: usize) {
        self.thresholds[index(kind)] = bytes;
    }

    /// Where this machine's calibration lives (see the module docs); `None` without any of
    /// the environment variables.
    pub fn machine_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("SLUICE_COPY_BREAKEVEN") {
            return Some(PathBuf::from(p));
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(
            cache
                .join("sluice")
                .join(format!("copy-breakeven-{}.txt", hostname())),
        )
    }

    /// This machine's calibrated table if there is a readable one, else the built-in default.
    pub fn for_this_machine() -> Self {
        Self::machine_path()
            .and_then(|p| Self::load(&p).ok())
            .unwrap_or_default()
    }

    /// Parses a table (kinds not named keep their built-in value).
    pub fn parse(text: &str, path: &Path) -> Result<Self, BreakEvenError> {
        let mut t = BreakEven::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = || BreakEvenError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                text: raw.to_string(),
            };
            let mut words = line.split_whitespace();
            let (Some(name), Some(bytes), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad());
            };
            let kind = OpKind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .ok_or_else(bad)?;
            let bytes = match bytes {
                "never" => usize::MAX,
                b => b.parse::<usize>().map_err(|_| bad())?,
            };
            t.set(kind, bytes);
        }
        Ok(t)
    }

    /// Reads a table from `path`.
    pub fn load(path: &Path) -> Result<Self, BreakEvenError> {
        let text = std::fs::read_to_string(path).map_err(|source| BreakEvenError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// The table as file text.
    pub fn to_text(&self) -> String {
        let mut s = String::from(
            "# sluice-copy break-even sizes in bytes (sluice bench copy --calibrate)\n",
        );
        for k in OpKind::ALL {
            let v = self.threshold(k);
            if v == usize::MAX {
                s.push_str(&format!("{} never\n", k.name()));
            } else {
                s.push_str(&format!("{} {v}\n", k.name()));
            }
        }
        s
    }

    /// Writes the table to `path`, creating its directory.
    pub fn store(&self, path: &Path) -> Result<(), BreakEvenError> {
        let io = |source| BreakEvenError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        std::fs::write(path, self.to_text()).map_err(io)
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_bad_lines_name_their_line() {
        let mut t = BreakEven::default();
        t.set(OpKind::Copy, 12345);
        t.set(OpKind::Rotate, usize::MAX);
        let p = Path::new("x.txt");
        assert_eq!(BreakEven::parse(&t.to_text(), p).unwrap(), t);
        match BreakEven::parse("copy 1\nfrobnicate 3\n", p) {
            Err(BreakEvenError::Parse { line, .. }) => assert_eq!(line, 2),
            other => panic!("expected a parse error, got {other:?}"),
        }
        assert!(BreakEven::parse("copy lots", p).is_err());
    }

    #[test]
    fn store_then_load() {
        let dir = std::env::temp_dir().join(format!("sluice-copy-be-{}", std::process::id()));
        let path = dir.join("t.txt");
        let mut t = BreakEven::never_inline();
        t.set(OpKind::Fill, 777);
        t.store(&path).unwrap();
        assert_eq!(BreakEven::load(&path).unwrap(), t);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
