//! Live views of an edge: what a tap stream sends, frame by frame, computed on the stream's
//! own thread (never a graph thread) from the newest items of a tap.

use crate::http::HttpError;
use num_complex::Complex32;
use serde_json::{json, Value};
use sluice_kernels::{PowerSpectrum, SpectrumWindow};
use sluice_runtime::{ItemType, Tap};

/// What a view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    /// A power spectrum in dB (the page averages, holds peaks and draws the waterfall).
    Spectrum,
    /// The newest samples (real and imaginary parts).
    Scope,
    /// The newest complex samples as points (c32 edges).
    Constellation,
    /// RMS and peak level in dBFS.
    Level,
}

/// A view of one edge, as a stream request asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The node writing the edge.
    pub node: String,
    /// Its output port.
    pub port: String,
    /// What to show.
    pub kind: ViewKind,
    /// FFT bins or samples per frame (16 ..= 8192; a power of two for spectra is fastest).
    pub size: usize,
    /// Frames per second (1 ..= 50).
    pub rate: u32,
}

fn bad(reason: impl Into<String>) -> HttpError {
    HttpError::new(400, reason)
}

impl View {
    /// Reads a view from the `tap` object of a stream request.
    pub fn from_json(v: &Value) -> Result<View, HttpError> {
        let text = |key: &str| {
            v.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(format!("tap.{key} must be a string")))
        };
        let kind = match text("view")?.as_str() {
            "spectrum" | "waterfall" => ViewKind::Spectrum,
            "scope" => ViewKind::Scope,
            "constellation" => ViewKind::Constellation,
            "level" => ViewKind::Level,
            other => {
                return Err(bad(format!(
                    "tap.view '{}' is not one of spectrum, waterfall, scope, constellation, level",
                    other.escape_default()
                )))
            }
        };
        let size = v.get("size").map_or(Some(1024), Value::as_u64);
        let size = match size {
            Some(s) if (16..=8192).contains(&s) => s as usize,
            _ => return Err(bad("tap.size must be a whole number from 16 to 8192")),
        };
        let rate = match v.get("rate").map_or(Some(25), Value::as_u64) {
            Some(r) if (1..=50).contains(&r) => r as u32,
            _ => {
                return Err(bad(
                    "tap.rate must be a whole number of frames per second, 1 to 50",
                ))
            }
        };
        Ok(View {
            node: text("node")?,
            port: text("port")?,
            kind,
            size,
            rate,
        })
    }
}

/// Turns the newest items of a tap into frames of one view.
pub(crate) struct Framer {
    view: View,
    complex: bool,
    c: Vec<Complex32>,
    f: Vec<f32>,
    spectrum: Option<PowerSpectrum>,
    bins: Vec<f32>,
}

impl Framer {
    /// A framer for `view` of an edge of `item`s, or why that view cannot show them.
    pub(crate) fn new(view: View, item: ItemType) -> Result<Framer, HttpError> {
        let complex = item == ItemType::of::<Complex32>();
        if !complex && item != ItemType::of::<f32>() {
            return Err(bad(format!(
                "views read f32 or c32 edges; {}.{} carries {}",
                view.node,
                view.port,
                item.name()
            )));
        }
        if view.kind == ViewKind::Constellation && !complex {
            return Err(bad("a constellation needs a c32 edge"));
        }
        let spectrum = match view.kind {
            ViewKind::Spectrum => Some(
                PowerSpectrum::new(view.size, SpectrumWindow::Hann, 1)
                    .map_err(|e| bad(e.to_string()))?,
            ),
            _ => None,
        };
        Ok(Framer {
            complex,
            c: vec![Complex32::default(); if complex { view.size } else { 0 }],
            f: vec![0.0; if complex { 0 } else { view.size }],
            bins: vec![0.0; view.size],
            spectrum,
            view,
        })
    }

    /// The next frame from the newest items, or `None` while the edge has too few yet.
    pub(crate) fn frame(&mut self, tap: &mut Tap) -> Option<Value> {
        let read = if self.complex {
            tap.read_latest(&mut self.c).ok()?
        } else {
            tap.read_latest(&mut self.f).ok()?
        };
        let n = read.items;
        let need = match self.view.kind {
            ViewKind::Spectrum => self.view.size,
            _ => 1,
        };
        if n < need {
            return None;
        }
        let mut frame = json!({
            "kind": match self.view.kind {
                ViewKind::Spectrum => "spectrum",
                ViewKind::Scope => "scope",
                ViewKind::Constellation => "constellation",
                ViewKind::Level => "level",
            },
            "first": read.first,
            "skipped": tap.skipped(),
            "complex": self.complex,
        });
        let round = |x: f32| (x * 1000.0).round() / 1000.0;
        match self.view.kind {
            ViewKind::Spectrum => {
                let spectrum = self.spectrum.as_mut()?;
                if self.complex {
                    spectrum.process(&self.c[..n], &mut self.bins);
                } else {
                    spectrum.process(&self.f[..n], &mut self.bins);
                }
                frame["bins"] = self.bins.iter().map(|&b| round(b)).collect();
            }
            ViewKind::Scope | ViewKind::Constellation => {
                if self.complex {
                    frame["re"] = self.c[..n].iter().map(|c| round(c.re)).collect();
                    frame["im"] = self.c[..n].iter().map(|c| round(c.im)).collect();
                } else {
                    frame["re"] = self.f[..n].iter().map(|&x| round(x)).collect();
                }
            }
            ViewKind::Level => {
                let (sum, peak) = if self.complex {
                    self.c[..n].iter().fold((0f64, 0f32), |(s, p), c| {
                        (s + c.norm_sqr() as f64, p.max(c.norm()))
                    })
                } else {
                    self.f[..n].iter().fold((0f64, 0f32), |(s, p), x| {
                        (s + (x * x) as f64, p.max(x.abs()))
                    })
                };
                let db = |x: f64| (20.0 * x.max(1e-10).log10() * 100.0).round() / 100.0;
                frame["rms_dbfs"] = json!(db((sum / n as f64).sqrt()));
                frame["peak_dbfs"] = json!(db(peak as f64));
            }
        }
        Some(frame)
    }
}
