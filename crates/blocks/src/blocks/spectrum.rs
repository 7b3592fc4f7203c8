//! [`Spectrum`]: averaged power spectra of a stream, as vectors of `fft_size` dB values; and
//! [`SpectrumPng`]: a sink that draws them as a PNG picture (the mean spectrum, or a
//! waterfall) when the stream ends.
//!
//! Tags: a spectrum carries the tags of the samples it was made from, on its first value.
//! `rx_rate` and `rx_freq` pass unchanged, so on the spectrum stream they are the analysed
//! stream's sample rate (the span of each spectrum) and centre frequency; the PNG sink labels
//! its frequency axis from them.

use super::tag_map::move_tags;
use sluice_formats::output_file::PartialFile;
use sluice_kernels::{PowerSpectrum, SpectrumSample, SpectrumWindow, Waterfall};
use sluice_plot::{spectrum_png, waterfall_png, FrequencyAxis};
use sluice_runtime::metadata::{CENTER_FREQUENCY, SAMPLE_RATE};
use sluice_runtime::{Item, Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// Averaged power spectra (see [`PowerSpectrum`]): `S` in, `f32[fft_size]` (dB) out.
#[derive(Debug)]
pub struct Spectrum<S> {
    spectrum: PowerSpectrum,
    tags: Vec<Tag>,
    _samples: PhantomData<S>,
}

impl<S: SpectrumSample + Item> Spectrum<S> {
    /// Spectra of `size` bins, each the mean of `averages` frames windowed by `window`.
    pub fn new(size: usize, window: SpectrumWindow, averages: usize) -> Result<Self, NodeError> {
        Ok(Spectrum {
            spectrum: PowerSpectrum::new(size, window, averages).map_err(NodeError::from_error)?,
            tags: Vec::new(),
            _samples: PhantomData,
        })
    }
}

impl<S: SpectrumSample + Item> Node for Spectrum<S> {
    fn ports(&self) -> Ports {
        let per = self.spectrum.input_per_output();
        let mut ports = Ports::new().input_window::<S>("in", per);
        ports.add_output_vectors::<f32>("out", self.spectrum.size(), 0);
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let (per, size) = (self.spectrum.input_per_output(), self.spectrum.size());
        let input = io.inputs.get::<S>(0)?;
        let output = io.outputs.get::<f32>(0)?;
        let (read, written) = (input.items_read(), output.items_written());
        let Some(x) = input.window(per)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: per,
            });
        };
        if x.len() < per {
            return Ok(Work::Done); // a partial last spectrum is not made
        }
        let Some(y) = output.reserve(size)? else {
            return Ok(Work::NeedOutput {
                port: 0,
                items: size,
            });
        };
        let (consumed, produced) = self.spectrum.process(x, y);
        move_tags(input, output, read + consumed as u64, &mut self.tags, |i| {
            Some(written + (i - read) / per as u64 * size as u64)
        });
        input.consume(consumed);
        output.commit(produced);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

/// What a [`SpectrumPng`] draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Picture {
    /// The mean of every spectrum, as a line.
    Spectrum,
    /// Every spectrum as a row of colours, newest at the top.
    Waterfall,
}

/// How a [`SpectrumPng`] draws.
#[derive(Debug, Clone, PartialEq)]
pub struct PngSettings {
    /// Line or waterfall.
    pub picture: Picture,
    /// The analysed stream's sample rate in Hz; `None` takes the stream's `rx_rate` (and
    /// without one the axis is in cycles/sample).
    pub sample_rate: Option<f64>,
    /// The centre frequency in Hz; `None` takes the stream's `rx_freq` (else 0).
    pub center_frequency: Option<f64>,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// Waterfall rows kept (older rows are merged in pairs beyond twice this).
    pub max_rows: usize,
    /// The waterfall's colours span this many dB below the peak.
    pub range_db: f32,
    /// The picture's title.
    pub title: String,
}

/// Draws the spectra it receives (`f32[fft_size]` in dB, from [`Spectrum`]) into a PNG at
/// `path` when the stream ends; written beside it and moved onto it then (see
/// [`PartialFile`]), so a failed run leaves an existing picture untouched.
#[derive(Debug)]
pub struct SpectrumPng {
    bins: usize,
    settings: PngSettings,
    rows: Waterfall,
    path: PathBuf,
    partial: Option<PartialFile>,
    tags: Vec<Tag>,
    rate: Option<f64>,
    center: Option<f64>,
    warnings: Vec<String>,
}

impl SpectrumPng {
    /// A sink of `bins`-value spectra drawing into `path`.
    pub fn create(path: &Path, bins: usize, settings: PngSettings) -> Result<Self, NodeError> {
        let rows = Waterfall::new(bins, settings.max_rows).map_err(NodeError::from_error)?;
        let partial = PartialFile::new(path);
        std::fs::File::create(partial.temporary())
            .map_err(|e| NodeError::caused(format!("cannot create {}", path.display()), e))?;
        Ok(SpectrumPng {
            bins,
            rate: settings.sample_rate,
            center: settings.center_frequency,
            settings,
            rows,
            path: path.to_path_buf(),
            warnings: partial.stale_warning().into_iter().collect(),
            partial: Some(partial),
            tags: Vec::new(),
        })
    }

    fn finish(&mut self) -> Result<(), NodeError> {
        let Some(partial) = self.partial.take() else {
            return Ok(());
        };
        if self.rows.count() == 0 {
            return Err(NodeError::msg(format!(
                "{}: no spectrum reached the sink, so there is nothing to draw",
                self.path.display()
            )));
        }
        let axis = FrequencyAxis::new(self.bins, self.rate, self.center.unwrap_or(0.0));
        let s = &self.settings;
        let drawn = match s.picture {
            Picture::Spectrum => spectrum_png(
                partial.temporary(),
                &s.title,
                &axis,
                &self.rows.mean_db(),
                s.size,
            ),
            Picture::Waterfall => {
                let rows = self.rows.rows_db();
                let rows = if rows.is_empty() {
                    vec![self.rows.mean_db()]
                } else {
                    rows
                };
                waterfall_png(
                    partial.temporary(),
                    &s.title,
                    &axis,
                    &rows,
                    self.rows.rows_per_row(),
                    s.range_db,
                    s.size,
                )
            }
        };
        if !drawn.map_err(NodeError::from_error)? {
            self.warnings.push(
                "no TrueType font found: the picture has no labels (set SLUICE_PLOT_FONT)".into(),
            );
        }
        partial.commit().map_err(|e| {
            NodeError::msg(format!(
                "cannot move the picture into {}: {e}",
                self.path.display()
            ))
        })
    }
}

impl Node for SpectrumPng {
    fn ports(&self) -> Ports {
        let mut ports = Ports::new();
        ports.add_input_vectors::<f32>("in", self.bins, 0);
        ports
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<f32>(0)?;
        let read = input.items_read();
        let Some(x) = input.window(self.bins)? else {
            return Ok(Work::NeedInput {
                port: 0,
                items: self.bins,
            });
        };
        if x.len() < self.bins {
            self.finish()?;
            return Ok(Work::Done);
        }
        let n = self.rows.push(x);
        input.take_tags(read + n as u64, &mut self.tags);
        for tag in self.tags.drain(..) {
            match (&*tag.key, &tag.value) {
                (SAMPLE_RATE, TagValue::F64(hz)) if self.settings.sample_rate.is_none() => {
                    self.rate = Some(*hz)
                }
                (CENTER_FREQUENCY, TagValue::F64(hz))
                    if self.settings.center_frequency.is_none() =>
                {
                    self.center = Some(*hz)
                }
                _ => {}
            }
        }
        input.consume(n);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{Head, SignalSource, Waveform};
    use num_complex::Complex32;
    use sluice_runtime::Graph;

    fn settings(picture: Picture) -> PngSettings {
        PngSettings {
            picture,
            sample_rate: None,
            center_frequency: Some(1e6),
            size: (300, 200),
            max_rows: 8,
            range_db: 80.0,
            title: "t".into(),
        }
    }

    /// A 6 kHz tone at 48 kHz through a spectrum into both pictures: the files appear at the
    /// end, and the spectrum stream has its peak on the tone's bin and the stream's rate.
    #[test]
    fn a_tone_becomes_a_spectrum_stream_and_pictures() {
        let dir = std::env::temp_dir().join(format!("sluice-spectrum-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for picture in [Picture::Spectrum, Picture::Waterfall] {
            let path = dir.join(format!("{picture:?}.png"));
            let mut g = Graph::new();
            let tone =
                SignalSource::<Complex32>::new(Waveform::Tone { frequency: 6000.0 }, 1.0, 48000.0);
            let src = g.add("src", tone.unwrap()).unwrap();
            let head = g.add("head", Head::<Complex32>::new(256 * 4 * 20)).unwrap();
            let spec = Spectrum::<Complex32>::new(256, SpectrumWindow::BlackmanHarris, 4).unwrap();
            let spec = g.add("spec", spec).unwrap();
            let (probe, data) = crate::blocks::VectorSink::<f32>::new();
            let png = g
                .add(
                    "png",
                    SpectrumPng::create(&path, 256, settings(picture)).unwrap(),
                )
                .unwrap();
            let flat = g
                .add(
                    "flat",
                    sluice_runtime::Rated::new(crate::blocks::VectorToStream::<f32>::new(256)),
                )
                .unwrap();
            let probe = g.add("probe", probe).unwrap();
            g.connect(src, "out", head, "in").unwrap();
            g.connect(head, "out", spec, "in").unwrap();
            g.connect(spec, "out", png, "in").unwrap();
            g.connect(spec, "out", flat, "in").unwrap();
            g.connect(flat, "out", probe, "in").unwrap();
            assert!(!path.exists());
            g.run_stepped().unwrap();
            assert!(std::fs::read(&path).unwrap().starts_with(b"\x89PNG"));
            let y = data.items();
            assert_eq!(y.len(), 20 * 256);
            let peak = (0..256).max_by(|&a, &b| y[a].total_cmp(&y[b])).unwrap();
            assert_eq!(peak, 128 + 32, "6 kHz of 48 kHz is bin 32 above DC");
            assert!(y[peak].abs() < 0.01);
            let rate = data
                .tags()
                .into_iter()
                .find(|t| &*t.key == SAMPLE_RATE)
                .unwrap();
            assert_eq!((rate.index, rate.value), (0, TagValue::F64(48000.0)));
        }
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 2, "no partial file left: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_empty_stream_is_an_error_naming_the_picture_and_leaves_no_file() {
        let path = std::env::temp_dir().join(format!("sluice-empty-{}.png", std::process::id()));
        let mut g = Graph::new();
        let src = g
            .add(
                "src",
                crate::blocks::VectorSource::<f32>::new(vec![0.0; 10]),
            )
            .unwrap();
        let pack = g
            .add(
                "pack",
                sluice_runtime::Rated::new(crate::blocks::StreamToVector::<f32>::new(64)),
            )
            .unwrap();
        let png = g
            .add(
                "png",
                SpectrumPng::create(&path, 64, settings(Picture::Spectrum)).unwrap(),
            )
            .unwrap();
        g.connect(src, "out", pack, "in").unwrap();
        g.connect(pack, "out", png, "in").unwrap();
        let err = g.run_stepped().unwrap_err().to_string();
        assert!(err.contains("no spectrum reached the sink"), "{err}");
        assert!(!path.exists());
        assert!(Spectrum::<f32>::new(1, SpectrumWindow::Hann, 1).is_err());
    }
}
