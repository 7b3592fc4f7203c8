//! PNG line plots for the benchmarks, drawn with plotters' bitmap backend. Without a font
//! (see `font.rs`) the plot is still drawn, with axes, grid and lines but no text, and
//! [`lines`] says so.

use std::path::Path;

use crate::font::font_available;
use crate::PlotError;
use plotters::prelude::*;

/// One line of a plot.
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Line style index: 0 solid, 1 dashed-looking (thin + points), 2 thin.
    pub style: usize,
    /// Series with the same group share a colour.
    pub group: usize,
    /// (x, y) points, in x order.
    pub points: Vec<(f64, f64)>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(188, 189, 34),
];

/// Draws `series` as lines into a 1000×650 PNG at `path`; returns whether text was drawn.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<bool, PlotError> {
    let text = font_available();
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (x, y) in series.iter().flat_map(|s| s.points.iter()) {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if !x0.is_finite() {
        return Err(PlotError::Empty {
            path: path.to_path_buf(),
        });
    }
    let pad = ((y1 - y0) * 0.08).max(1e-9);
    let (y0, y1) = (
        if y0 >= 0.0 {
            0.0f64.max(y0 - pad)
        } else {
            y0 - pad
        },
        y1 + pad,
    );
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let mut groups: Vec<usize> = series.iter().map(|s| s.group).collect();
    groups.dedup();
    let draw = || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let root = BitMapBackend::new(path, (1000, 650)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut builder = ChartBuilder::on(&root);
        builder.margin(20);
        if text {
            builder
                .caption(title, ("sans-serif", 24))
                .x_label_area_size(45)
                .y_label_area_size(70);
        } else {
            builder.x_label_area_size(10).y_label_area_size(10);
        }
        let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
        let mut mesh = chart.configure_mesh();
        if text {
            mesh.x_desc(x_label)
                .y_desc(y_label)
                .label_style(("sans-serif", 15));
        } else {
            mesh.x_labels(0).y_labels(0);
        }
        mesh.draw()?;
        for s in series {
            let gi = groups.iter().position(|g| *g == s.group).unwrap_or(0);
            let colour = PALETTE[gi % PALETTE.len()];
            let width = if s.style == 0 { 3 } else { 1 };
            let drawn = chart.draw_series(LineSeries::new(
                s.points.iter().copied(),
                colour.stroke_width(width),
            ))?;
            if text {
                drawn.label(s.label.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(width))
                });
            }
            if s.style == 1 {
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
            }
        }
        if text {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| PlotError::Draw {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(text)
}
