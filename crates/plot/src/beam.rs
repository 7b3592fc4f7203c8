//! The beam-pattern picture: power against steering angle, with the angles of interest marked.

use crate::font::font_available;
use crate::spectrum::render;
use crate::PlotError;
use plotters::prelude::*;
use std::path::Path;

/// Draws `power_db` (one value per angle in `angles`, degrees) as a line, with vertical marks
/// at `marks`, into a PNG at `path`; returns whether text was drawn.
pub fn beam_pattern_png(
    path: &Path,
    title: &str,
    angles: &[f64],
    power_db: &[f64],
    marks: &[f64],
) -> Result<bool, PlotError> {
    let text = font_available();
    let top = power_db.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (bottom, top) = if top.is_finite() {
        (top - 60.0, top + 3.0)
    } else {
        (-1.0, 1.0)
    };
    let (left, right) = match (angles.first(), angles.last()) {
        (Some(&l), Some(&r)) if r > l => (l, r),
        _ => (-90.0, 90.0),
    };
    render(path, (900, 500), |root| {
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
            .build_cartesian_2d(left..right, bottom..top)
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        if text {
            mesh.x_desc("steering angle (degrees)")
                .y_desc("beam power (dB)");
        } else {
            mesh.x_labels(0).y_labels(0);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        for &m in marks {
            chart
                .draw_series(LineSeries::new(
                    [(m, bottom), (m, top)],
                    RED.stroke_width(1),
                ))
                .map_err(|e| e.to_string())?;
        }
        let points = angles
            .iter()
            .zip(power_db)
            .map(|(&a, &p)| (a, p.max(bottom)));
        chart
            .draw_series(LineSeries::new(points, BLUE.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        Ok(())
    })?;
    Ok(text)
}
