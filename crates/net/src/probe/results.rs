//! What a probe run leaves behind, NAME.csv (every packet) and NAME.json (the summary), and
//! the comparison `sluice probe table` makes of several summaries: the latency and jitter each
//! extra hop added.

use super::{OriginRun, ProbeError, Summary};
use crate::probe::stats::Added;
use std::path::{Path, PathBuf};

/// The latency summary of `run`; an error if no packet came back.
pub fn summarize(run: &OriginRun) -> Result<Summary, ProbeError> {
    let lat: Vec<f64> = run.samples.iter().map(|s| s.latency_us()).collect();
    Summary::of(&lat).ok_or(ProbeError::NoPackets)
}

/// The label of a run when none was given: `2 machines (1 reflector), 70 Mbit/s`.
pub fn default_label(hops: u32, via: &str, rate: Option<f64>) -> String {
    format!(
        "{} machines ({hops} {via}{}), {}",
        hops + 1,
        if hops == 1 { "" } else { "s" },
        super::rate_words(rate)
    )
}

/// One run and what describes it, as its files record it.
#[derive(Debug, Clone)]
pub struct ProbeRecord<'a> {
    /// What the origin measured.
    pub run: &'a OriginRun,
    /// Its latency summary ([`summarize`]).
    pub summary: Summary,
    /// Words for tables and plots.
    pub label: String,
    /// Hops in the loop.
    pub hops: u32,
    /// What the hops are: `reflector` or `relay`.
    pub via: String,
    /// Bytes per packet.
    pub size: usize,
    /// Packets asked for.
    pub count: u64,
    /// Warm-up packets sent first.
    pub warmup: u64,
    /// Bit rate asked for; `None` is full speed.
    pub rate_bps: Option<f64>,
    /// Whether frames carried a CRC32C.
    pub crc: bool,
    /// The machine, in words.
    pub machine: String,
    /// CPU seconds of the origin.
    pub origin_cpu_s: f64,
    /// CPU seconds of each hop process (NaN where one did not say).
    pub reflector_cpu_s: Vec<f64>,
}

impl ProbeRecord<'_> {
    /// Packet bits per second achieved.
    pub fn achieved_bps(&self) -> f64 {
        self.run.samples.len() as f64 * self.size as f64 * 8.0 / self.run.secs.max(1e-9)
    }

    /// Every packet: `seq,sent_us,received_us,latency_us`, with a header line.
    pub fn csv(&self) -> String {
        let mut csv = String::from("seq,sent_us,received_us,latency_us\n");
        for x in &self.run.samples {
            csv.push_str(&format!(
                "{},{:.3},{:.3},{:.3}\n",
                x.seq,
                x.sent_ns as f64 / 1e3,
                x.received_ns as f64 / 1e3,
                x.latency_us()
            ));
        }
        csv
    }

    /// The summary, as [`read_summary`] reads it back.
    pub fn json(&self) -> serde_json::Value {
        let (s, run) = (&self.summary, self.run);
        serde_json::json!({
            "benchmark": "probe",
            "machine": self.machine,
            "label": self.label,
            "hops": self.hops,
            "via": self.via,
            "size": self.size,
            "count": self.count,
            "warmup": self.warmup,
            "rate_bps": self.rate_bps,
            "crc": self.crc,
            "secs": run.secs,
            "achieved_bps": self.achieved_bps(),
            "frames_back": run.frames_back,
            "summary_us": {
                "packets": s.packets, "mean": s.mean, "std": s.std, "min": s.min, "p50": s.p50,
                "p99": s.p99, "p999": s.p999, "max": s.max,
            },
            "origin_cpu_s": self.origin_cpu_s,
            "reflector_cpu_s": self.reflector_cpu_s,
            "peers": [run.peers.0, run.peers.1],
        })
    }

    /// Writes `DIR/NAME.csv` and `DIR/NAME.json` (creating `dir`); their paths.
    pub fn write(&self, dir: &Path, name: &str) -> Result<(PathBuf, PathBuf), ProbeError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| io(format!("cannot create {}", dir.display()), e))?;
        let base = dir.join(name);
        let csv_path = base.with_extension("csv");
        std::fs::write(&csv_path, self.csv())
            .map_err(|e| io(format!("writing {}", csv_path.display()), e))?;
        let json_path = base.with_extension("json");
        let json = serde_json::to_string_pretty(&self.json())
            .map_err(|e| ProbeError::Config(e.to_string()))?;
        std::fs::write(&json_path, json)
            .map_err(|e| io(format!("writing {}", json_path.display()), e))?;
        Ok((csv_path, json_path))
    }
}

fn io(what: String, source: std::io::Error) -> ProbeError {
    ProbeError::Io { what, source }
}

/// One run's summary as read back from its JSON file.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// The run's label.
    pub label: String,
    /// What the hops were (`reflector` when the file does not say).
    pub via: String,
    /// Hops in the loop.
    pub hops: u64,
    /// Bytes per packet.
    pub size: u64,
    /// Bit rate; `None` is full speed.
    pub rate: Option<f64>,
    /// The latency summary.
    pub s: Summary,
}

/// Reads a summary written by [`ProbeRecord::write`].
pub fn read_summary(path: &Path) -> Result<SummaryRow, ProbeError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io(format!("cannot read {}", path.display()), e))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| ProbeError::NotJson {
            path: path.to_path_buf(),
            source,
        })?;
    let bad = || ProbeError::NotSummary(path.to_path_buf());
    let num = |x: &serde_json::Value, k: &str| x.get(k).and_then(|y| y.as_f64()).ok_or_else(bad);
    let su = v.get("summary_us").ok_or_else(bad)?;
    Ok(SummaryRow {
        label: v
            .get("label")
            .and_then(|l| l.as_str())
            .ok_or_else(bad)?
            .to_string(),
        via: v
            .get("via")
            .and_then(|l| l.as_str())
            .unwrap_or("reflector")
            .to_string(),
        hops: num(&v, "hops")? as u64,
        size: num(&v, "size")? as u64,
        rate: v.get("rate_bps").and_then(|r| r.as_f64()),
        s: Summary {
            packets: num(su, "packets")? as u64,
            mean: num(su, "mean")?,
            std: num(su, "std")?,
            min: num(su, "min")?,
            p50: num(su, "p50")?,
            p99: num(su, "p99")?,
            p999: num(su, "p999")?,
            max: num(su, "max")?,
        },
    })
}

/// What one more hop added: a run and the run with one hop fewer (same rate, size and kind
/// of hop).
#[derive(Debug, Clone, Copy)]
pub struct HopAdded<'a> {
    /// The run with one hop fewer.
    pub fewer: &'a SummaryRow,
    /// The run with the extra hop.
    pub more: &'a SummaryRow,
    /// What the hop added ([`Summary::added_over`]).
    pub added: Added,
}

/// For each run that has a run with one hop fewer among `rows` (same rate, size and kind of
/// hop), what the extra hop added; in the order of `rows`.
pub fn hops_added(rows: &[SummaryRow]) -> Vec<HopAdded<'_>> {
    rows.iter()
        .filter_map(|more| {
            let fewer = rows.iter().find(|f| {
                f.hops + 1 == more.hops
                    && f.rate == more.rate
                    && f.size == more.size
                    && f.via == more.via
            })?;
            Some(HopAdded {
                fewer,
                more,
                added: more.s.added_over(&fewer.s),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Sample;

    fn run() -> OriginRun {
        OriginRun {
            samples: (0..4)
                .map(|i| Sample {
                    seq: i,
                    sent_ns: 1000 * i,
                    received_ns: 1000 * i + 50_000 + 1000 * i,
                })
                .collect(),
            secs: 0.5,
            frames_back: 4,
            reads: 4,
            peers: ("a".into(), "b".into()),
        }
    }

    #[test]
    fn a_written_summary_reads_back_and_hops_compare() {
        let dir = std::env::temp_dir().join(format!("sluice-probe-results-{}", std::process::id()));
        let run = run();
        let record = |hops: u32, name: &str| {
            let summary = summarize(&run).unwrap();
            let record = ProbeRecord {
                run: &run,
                summary,
                label: default_label(hops, "reflector", Some(70e6)),
                hops,
                via: "reflector".into(),
                size: 1024,
                count: 4,
                warmup: 0,
                rate_bps: Some(70e6),
                crc: false,
                machine: "test".into(),
                origin_cpu_s: 0.1,
                reflector_cpu_s: vec![0.2],
            };
            let (csv, json) = record.write(&dir, name).unwrap();
            assert_eq!(std::fs::read_to_string(csv).unwrap().lines().count(), 5);
            read_summary(&json).unwrap()
        };
        let one = record(1, "one");
        let two = record(2, "two");
        assert_eq!(one.label, "2 machines (1 reflector), 70 Mbit/s");
        assert_eq!(two.label, "3 machines (2 reflectors), 70 Mbit/s");
        assert_eq!(one.s.packets, 4);
        let rows = [one, two];
        let added = hops_added(&rows);
        assert_eq!(added.len(), 1);
        assert_eq!((added[0].fewer.hops, added[0].more.hops), (1, 2));
        std::fs::write(dir.join("bad.json"), "{}").unwrap();
        let e = read_summary(&dir.join("bad.json")).unwrap_err().to_string();
        assert!(e.contains("not a `sluice probe` summary"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(
            summarize(&OriginRun {
                samples: vec![],
                ..run.clone()
            }),
            Err(ProbeError::NoPackets)
        ));
    }
}
