//! Spectrum pictures as PNG: a power spectrum as a line over frequency, and a waterfall
//! (spectra over time, newest at the top, power as colour), drawn with plotters into memory
//! and encoded with `png`, for the `spectrum_png` sink.

use crate::font::font_available;
use crate::PlotError;
use plotters::coord::ReverseCoordTranslate;
use plotters::prelude::*;
use sluice_kernels::colour_map;
use std::path::Path;

/// The frequency axis of a picture: the first bin's frequency, the bin spacing, and the unit
/// the numbers are in (`"Hz"`, `"kHz"`, …, or `"cycles/sample"`).
#[derive(Debug, Clone, PartialEq)]
pub struct FrequencyAxis {
    /// Frequency of the first bin, in `unit`.
    pub start: f64,
    /// Bin spacing, in `unit`.
    pub step: f64,
    /// The unit.
    pub unit: &'static str,
}

impl FrequencyAxis {
    /// `bins` bins (DC in the middle) of a stream at `sample_rate` Hz around `center` Hz, in the
    /// unit that suits their size; without a rate, in cycles/sample around 0.
    pub fn new(bins: usize, sample_rate: Option<f64>, center: f64) -> Self {
        let Some(rate) = sample_rate else {
            let step = 1.0 / bins as f64;
            return FrequencyAxis {
                start: -((bins / 2) as f64) * step,
                step,
                unit: "cycles/sample",
            };
        };
        let top = center.abs() + rate / 2.0;
        let (scale, unit) = [(1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz")]
            .into_iter()
            .find(|&(s, _)| top >= s)
            .unwrap_or((1.0, "Hz"));
        let step = rate / bins as f64;
        FrequencyAxis {
            start: (center - (bins / 2) as f64 * step) / scale,
            step: step / scale,
            unit,
        }
    }

    fn range(&self, bins: usize) -> std::ops::Range<f64> {
        self.start..self.start + self.step * bins as f64
    }
}

/// Renders `draw` into a `width`×`height` RGB image and writes it to `path` as PNG.
pub(crate) fn render(
    path: &Path,
    (width, height): (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<(), PlotError> {
    let mut buf = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (width, height)).into_drawing_area();
        let result = root
            .fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(|e| e.to_string()));
        result.map_err(|message| PlotError::Draw {
            path: path.to_path_buf(),
            message,
        })?;
    }
    let write = || -> Result<(), Box<dyn std::error::Error>> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let mut encoder = png::Encoder::new(file, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&buf)?;
        writer.finish()?;
        Ok(())
    };
    write().map_err(|e| PlotError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Draws `spectrum` (dB per bin) as a line over `axis` into a PNG at `path`; returns whether
/// text was drawn.
pub fn spectrum_png(
    path: &Path,
    title: &str,
    axis: &FrequencyAxis,
    spectrum: &[f32],
    size: (u32, u32),
) -> Result<bool, PlotError> {
    let text = font_available();
    let finite = spectrum.iter().copied().filter(|v| v.is_finite());
    let top = finite.clone().fold(f32::NEG_INFINITY, f32::max);
    let bottom = finite.fold(f32::INFINITY, f32::min).max(top - 150.0);
    let (bottom, top) = if top.is_finite() {
        (bottom - 3.0, top + 3.0)
    } else {
        (-1.0, 1.0)
    };
    render(path, size, |root| {
        let mut builder = ChartBuilder::on(root);
        builder.margin(20);
        if text {
            builder
                .caption(title, ("sans-serif", 22))
                .x_label_area_size(45)
                .y_label_area_size(60);
        } else {
            builder.x_label_area_size(10).y_label_area_size(10);
        }
        let mut chart = builder
            .build_cartesian_2d(
                axis.range(spectrum.len()),
                f64::from(bottom)..f64::from(top),
            )
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        if text {
            mesh.x_desc(format!("frequency ({})", axis.unit))
                .y_desc("power (dB)");
        } else {
            mesh.x_labels(0).y_labels(0);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        let points = spectrum
            .iter()
            .enumerate()
            .map(|(k, &v)| (axis.start + axis.step * k as f64, f64::from(v)));
        chart
            .draw_series(LineSeries::new(points, BLUE.stroke_width(1)))
            .map_err(|e| e.to_string())?;
        Ok(())
    })?;
    Ok(text)
}

/// Draws `rows` (spectra in dB, oldest first; each stands for `rows_per_row` input spectra) as
/// a waterfall with the newest at the top, colours spanning `range_db` below the peak, into a
/// PNG at `path`; returns whether text was drawn.
pub fn waterfall_png(
    path: &Path,
    title: &str,
    axis: &FrequencyAxis,
    rows: &[Vec<f32>],
    rows_per_row: u64,
    range_db: f32,
    size: (u32, u32),
) -> Result<bool, PlotError> {
    let text = font_available();
    let bins = rows.first().map_or(1, Vec::len);
    let top = rows
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    let bottom = top - range_db;
    let spectra = (rows.len() as u64 * rows_per_row).max(1) as f64;
    render(path, size, |root| {
        let mut builder = ChartBuilder::on(root);
        builder.margin(20);
        if text {
            let caption = format!("{title} ({bottom:.0} to {top:.0} dB)");
            builder
                .caption(caption, ("sans-serif", 22))
                .x_label_area_size(45)
                .y_label_area_size(60);
        } else {
            builder.x_label_area_size(10).y_label_area_size(10);
        }
        let chart = builder
            .build_cartesian_2d(axis.range(bins), 0.0..spectra)
            .map_err(|e| e.to_string())?;
        let area = chart.plotting_area();
        let (xs, ys) = area.get_pixel_range();
        let range = axis.range(bins);
        for py in ys {
            for px in xs.clone() {
                let Some((f, t)) = area.as_coord_spec().reverse_translate((px, py)) else {
                    continue;
                };
                let bin = ((f - range.start) / axis.step)
                    .floor()
                    .clamp(0.0, (bins - 1) as f64) as usize;
                let row = (t / rows_per_row as f64)
                    .floor()
                    .clamp(0.0, (rows.len().max(1) - 1) as f64) as usize;
                let v = rows
                    .get(row)
                    .and_then(|r| r.get(bin))
                    .copied()
                    .unwrap_or(bottom);
                let (r, g, b) = colour_map((v - bottom) / range_db);
                root.draw_pixel((px, py), &RGBColor(r, g, b))
                    .map_err(|e| e.to_string())?;
            }
        }
        let mut chart = chart;
        let mut mesh = chart.configure_mesh();
        mesh.disable_mesh();
        if text {
            mesh.x_desc(format!("frequency ({})", axis.unit))
                .y_desc("spectrum (newest at the top)");
        } else {
            mesh.x_labels(0).y_labels(0);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        Ok(())
    })?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frequency_axis_picks_a_unit_and_centres_dc() {
        let a = FrequencyAxis::new(1024, Some(2.048e6), 100e6);
        assert_eq!(a.unit, "MHz");
        assert!((a.start - (100.0 - 1.024)).abs() < 1e-9);
        assert!((a.step - 0.002).abs() < 1e-12);
        let n = FrequencyAxis::new(8, None, 0.0);
        assert_eq!((n.start, n.step, n.unit), (-0.5, 0.125, "cycles/sample"));
        assert_eq!(FrequencyAxis::new(4, Some(100.0), 0.0).unit, "Hz");
    }

    #[test]
    fn pictures_are_png_files_of_the_size_asked() {
        let dir = std::env::temp_dir().join(format!("sluice-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let axis = FrequencyAxis::new(64, Some(48000.0), 0.0);
        let row: Vec<f32> = (0..64).map(|k| -60.0 + (k as f32 - 32.0).abs()).collect();
        let line = dir.join("line.png");
        spectrum_png(&line, "test", &axis, &row, (400, 300)).unwrap();
        let fall = dir.join("fall.png");
        waterfall_png(&fall, "test", &axis, &vec![row; 10], 2, 60.0, (320, 240)).unwrap();
        for (path, size) in [(line, (400, 300)), (fall, (320, 240))] {
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
            assert_eq!((w, h), size, "{}", path.display());
        }
        let err = spectrum_png(
            &dir.join("no/such/dir.png"),
            "t",
            &axis,
            &[0.0; 64],
            (100, 100),
        );
        assert!(err.unwrap_err().to_string().contains("no/such/dir.png"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
