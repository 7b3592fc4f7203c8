//! Loading filter taps from files.
//!
//! Text: one tap per line, either a real value or a complex one written `re im` or `re,im`;
//! blank lines and lines starting with `#` are skipped. If any line is complex the whole file
//! is complex (real lines get a zero imaginary part). Raw: little-endian `f32`, either one real
//! tap per value or interleaved `re, im` pairs. Every error names the file and, for text, the
//! line.

use std::path::{Path, PathBuf};

use num_complex::Complex32;

use sluice_kernels::DspError;

/// How a taps file is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapsFormat {
    /// One value (real) or two (complex) per text line.
    Text,
    /// Raw little-endian `f32`, one real tap each.
    RawReal,
    /// Raw little-endian `f32` pairs `re, im`.
    RawComplex,
}

impl TapsFormat {
    /// Guesses from the extension: `.f32`/`.raw`/`.bin` are raw real, `.cf32` raw complex,
    /// anything else text.
    pub fn from_path(path: &Path) -> TapsFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("f32" | "raw" | "bin") => TapsFormat::RawReal,
            Some("cf32") => TapsFormat::RawComplex,
            _ => TapsFormat::Text,
        }
    }
}

/// Taps as loaded: real or complex.
#[derive(Debug, Clone, PartialEq)]
pub enum Taps {
    /// Real taps.
    Real(Vec<f32>),
    /// Complex taps.
    Complex(Vec<Complex32>),
}

impl Taps {
    /// Number of taps.
    pub fn len(&self) -> usize {
        match self {
            Taps::Real(t) => t.len(),
            Taps::Complex(t) => t.len(),
        }
    }

    /// Whether there are none (a loaded file never gives this: it is an error).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The taps as complex values.
    pub fn to_complex(&self) -> Vec<Complex32> {
        match self {
            Taps::Real(t) => t.iter().map(|&v| Complex32::new(v, 0.0)).collect(),
            Taps::Complex(t) => t.clone(),
        }
    }
}

/// Loads taps from `path`, in the format its extension suggests ([`TapsFormat::from_path`]).
pub fn load_taps(path: &Path) -> Result<Taps, DspError> {
    load_taps_as(path, TapsFormat::from_path(path))
}

/// Loads taps from `path` in `format`.
pub fn load_taps_as(path: &Path, format: TapsFormat) -> Result<Taps, DspError> {
    let bytes = std::fs::read(path).map_err(|source| DspError::TapsIo {
        path: path.to_path_buf(),
        source,
    })?;
    match format {
        TapsFormat::Text => {
            let text = String::from_utf8(bytes)
                .map_err(|_| parse_err(path, 0, "not UTF-8 text".to_string()))?;
            parse_taps_text(&text, path)
        }
        TapsFormat::RawReal | TapsFormat::RawComplex => {
            let width = if format == TapsFormat::RawReal { 4 } else { 8 };
            if bytes.is_empty() || !bytes.len().is_multiple_of(width) {
                let msg = format!(
                    "{} bytes is not a positive multiple of {width}",
                    bytes.len()
                );
                return Err(parse_err(path, 0, msg));
            }
            let v: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                return Err(parse_err(path, 0, format!("value {i} is not finite")));
            }
            Ok(match format {
                TapsFormat::RawReal => Taps::Real(v),
                _ => Taps::Complex(
                    v.chunks_exact(2)
                        .map(|p| Complex32::new(p[0], p[1]))
                        .collect(),
                ),
            })
        }
    }
}

/// Parses the text format; `source` names the file in errors.
pub fn parse_taps_text(text: &str, source: &Path) -> Result<Taps, DspError> {
    let mut values: Vec<Complex32> = Vec::new();
    let mut complex = false;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .collect();
        let parse = |f: &str| -> Result<f32, DspError> {
            match f.parse::<f32>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(parse_err(
                    source,
                    i + 1,
                    format!("{f:?} is not a finite number"),
                )),
            }
        };
        match fields.as_slice() {
            [re] => values.push(Complex32::new(parse(re)?, 0.0)),
            [re, im] => {
                complex = true;
                values.push(Complex32::new(parse(re)?, parse(im)?));
            }
            _ => {
                let msg = format!("expected 1 value or 2 (re im), found {}", fields.len());
                return Err(parse_err(source, i + 1, msg));
            }
        }
    }
    if values.is_empty() {
        return Err(parse_err(source, 0, "no taps in file".to_string()));
    }
    Ok(if complex {
        Taps::Complex(values)
    } else {
        Taps::Real(values.iter().map(|v| v.re).collect())
    })
}

fn parse_err(path: &Path, line: usize, message: String) -> DspError {
    DspError::TapsParse {
        path: PathBuf::from(path),
        line,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sluice-blocks-taps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn text_real_and_complex() {
        let p = Path::new("t.txt");
        assert_eq!(
            parse_taps_text("# c\n1\n\n-2.5\n", p).unwrap(),
            Taps::Real(vec![1.0, -2.5])
        );
        let t = parse_taps_text("1 2\n3,4\n5\n", p).unwrap();
        let want = vec![
            Complex32::new(1.0, 2.0),
            Complex32::new(3.0, 4.0),
            Complex32::new(5.0, 0.0),
        ];
        assert_eq!(t, Taps::Complex(want));
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn text_errors_name_file_and_line() {
        let e = parse_taps_text("1\n2\nx\n", Path::new("/a/b.taps")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "taps file /a/b.taps, line 3: \"x\" is not a finite number"
        );
        let e = parse_taps_text("1 2 3\n", Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("line 1: expected 1 value or 2"));
        let e = parse_taps_text("# nothing\n", Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("no taps"));
        let e = parse_taps_text("inf\n", Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("not a finite"));
    }

    #[test]
    fn files_load_in_every_format() {
        let raw: Vec<u8> = [1.0f32, -2.0, 0.5, 4.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let p = tmp("a.f32", &raw);
        assert_eq!(
            load_taps(&p).unwrap(),
            Taps::Real(vec![1.0, -2.0, 0.5, 4.0])
        );
        let p = tmp("a.cf32", &raw);
        let t = load_taps(&p).unwrap();
        assert_eq!(
            t.to_complex(),
            vec![Complex32::new(1.0, -2.0), Complex32::new(0.5, 4.0)]
        );
        let p = tmp("a.txt", b"0.25\n0.75\n");
        assert_eq!(load_taps(&p).unwrap(), Taps::Real(vec![0.25, 0.75]));
        let p = tmp("bad.f32", &raw[..6]);
        let e = load_taps(&p).unwrap_err();
        assert!(e.to_string().contains("bad.f32") && e.to_string().contains("6 bytes"));
        let missing = Path::new("/nonexistent/taps.txt");
        let e = load_taps(missing).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("cannot read taps file /nonexistent/taps.txt"));
    }
}
