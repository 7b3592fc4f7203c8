//! Probe: a sink that measures a stream's rate and level.

use super::sample::Sample;
use sluice_runtime::{Node, NodeError, Ports, TagPolicy, Work, WorkIo};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// What a probe measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProbeStats {
    /// Items received.
    pub items: u64,
    /// Items per second between the first and the last item received.
    pub rate: f64,
    /// Root-mean-square level (linear).
    pub rms: f64,
    /// Largest `|x|`.
    pub peak: f64,
    /// Samples that were NaN or infinite (left out of `rms` and `peak`): a filter that blew up,
    /// a division by zero upstream.
    pub non_finite: u64,
}

impl ProbeStats {
    /// One line: items, rate, and levels in dBFS.
    pub fn summary(&self) -> String {
        let db = |x: f64| {
            if x > 0.0 {
                format!("{:.1} dBFS", 20.0 * x.log10())
            } else {
                "-inf dBFS".to_string()
            }
        };
        let mut line = format!(
            "{} items, {:.3e} items/s, rms {}, peak {}",
            self.items,
            self.rate,
            db(self.rms),
            db(self.peak)
        );
        if self.non_finite > 0 {
            line.push_str(&format!(
                "; warning: {} NaN or infinite samples, left out of the levels",
                self.non_finite
            ));
        }
        line
    }
}

/// Consumes a stream and measures its rate and level; the handle reads the figures.
#[derive(Debug)]
pub struct Probe<S> {
    label: Option<String>,
    first: Option<Instant>,
    items: u64,
    energy: f64,
    peak_power: f64,
    non_finite: u64,
    shared: Arc<Mutex<ProbeStats>>,
    _sample: std::marker::PhantomData<S>,
}

impl<S: Sample> Probe<S> {
    /// A probe, and the handle to its figures. With a `label`, it prints a summary line to
    /// stderr when the stream ends.
    pub fn new(label: Option<String>) -> (Self, Arc<Mutex<ProbeStats>>) {
        let shared = Arc::new(Mutex::new(ProbeStats::default()));
        (
            Probe {
                label,
                first: None,
                items: 0,
                energy: 0.0,
                peak_power: 0.0,
                non_finite: 0,
                shared: shared.clone(),
                _sample: std::marker::PhantomData,
            },
            shared,
        )
    }

    fn publish(&self) -> ProbeStats {
        let elapsed = self.first.map_or(0.0, |t| t.elapsed().as_secs_f64());
        let stats = ProbeStats {
            items: self.items,
            rate: if elapsed > 0.0 {
                self.items as f64 / elapsed
            } else {
                0.0
            },
            rms: if self.items > self.non_finite {
                (self.energy / (self.items - self.non_finite) as f64).sqrt()
            } else {
                0.0
            },
            peak: self.peak_power.sqrt(),
            non_finite: self.non_finite,
        };
        *self.shared.lock().unwrap_or_else(PoisonError::into_inner) = stats;
        stats
    }
}

impl<S: Sample> Node for Probe<S> {
    fn ports(&self) -> Ports {
        Ports::new().input::<S>("in")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<S>(0)?;
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            let stats = self.publish();
            if let Some(label) = &self.label {
                eprintln!("probe {label}: {}", stats.summary());
            }
            return Ok(Work::Done);
        }
        self.first.get_or_insert_with(Instant::now);
        for &x in window {
            let p = x.power();
            if p.is_finite() {
                self.energy += p;
                self.peak_power = self.peak_power.max(p);
            } else {
                self.non_finite += 1;
            }
        }
        let n = window.len();
        self.items += n as u64;
        input.consume(n);
        self.publish();
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nan_and_infinity_are_counted_not_hidden() {
        let mut g = Graph::new();
        let data = vec![0.5f32, f32::NAN, -0.5, f32::INFINITY, 0.5];
        let src = g.add("src", VectorSource::new(data)).unwrap();
        let (probe, stats) = Probe::<f32>::new(None);
        let probe = g.add("probe", probe).unwrap();
        g.connect(src, "out", probe, "in").unwrap();
        g.run_stepped().unwrap();
        let s = *stats.lock().unwrap();
        assert_eq!((s.items, s.non_finite), (5, 2));
        assert!((s.rms - 0.5).abs() < 1e-9, "{}", s.rms);
        assert!(
            s.summary()
                .ends_with("warning: 2 NaN or infinite samples, left out of the levels"),
            "{}",
            s.summary()
        );
    }

    use super::*;
    use crate::blocks::vector::VectorSource;
    use sluice_runtime::Graph;

    #[test]
    fn probe_measures_level_of_a_known_signal() {
        let mut g = Graph::new();
        let data: Vec<f32> = (0..1000)
            .map(|i| if i % 2 == 0 { 0.5 } else { -0.5 })
            .collect();
        let src = g.add("src", VectorSource::new(data)).unwrap();
        let (probe, stats) = Probe::<f32>::new(None);
        let probe = g.add("probe", probe).unwrap();
        g.connect(src, "out", probe, "in").unwrap();
        g.run_stepped().unwrap();
        let s = *stats.lock().unwrap();
        assert_eq!(s.items, 1000);
        assert!((s.rms - 0.5).abs() < 1e-9 && (s.peak - 0.5).abs() < 1e-9);
        assert!(s.summary().contains("rms -6.0 dBFS"));
    }
}
