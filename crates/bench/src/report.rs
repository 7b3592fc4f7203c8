//! Shared benchmark reporting: machine description, medians, a printed table, CSV and JSON files.

use std::fmt::Write as _;
use std::path::Path;

/// One line describing this machine: CPU model, logical cores, kernel.
pub fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!("{cpu}, {cores} logical cores, Linux {kernel}")
}

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// A table of results: named columns, rows of cells already formatted as text.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows; each has one cell per column.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and no rows.
    pub fn new(columns: &[&str]) -> Self {
        Table {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends one row; it must have one cell per column.
    pub fn push(&mut self, row: Vec<String>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    /// The table aligned in columns, for the terminal.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.len()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                let sep = if i == 0 { "" } else { "  " };
                let _ = write!(out, "{sep}{cell:>w$}");
            }
            out.push('\n');
        };
        line(&self.columns, &mut out);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        line(&rule, &mut out);
        for row in &self.rows {
            line(row, &mut out);
        }
        out
    }

    /// Writes the table as CSV (RFC 4180: a cell with a comma, quote or line break is quoted).
    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_csv())
    }

    /// The table as CSV text.
    pub fn to_csv(&self) -> String {
        fn cell(text: &str) -> String {
            if text.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", text.replace('"', "\"\""))
            } else {
                text.to_string()
            }
        }
        let line = |cells: &[String]| cells.iter().map(|c| cell(c)).collect::<Vec<_>>().join(",");
        let mut out = line(&self.columns);
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    /// Writes the table as a JSON array of objects keyed by column, with the machine description.
    pub fn write_json(&self, path: &Path, benchmark: &str) -> std::io::Result<()> {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|row| {
                let obj: serde_json::Map<String, serde_json::Value> = self
                    .columns
                    .iter()
                    .zip(row)
                    .map(|(c, v)| (c.clone(), serde_json::Value::String(v.clone())))
                    .collect();
                serde_json::Value::Object(obj)
            })
            .collect();
        let doc = serde_json::json!({
            "benchmark": benchmark,
            "machine": machine_description(),
            "rows": rows,
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)
    }
}

/// Creates a benchmark's output directory and says where it is (as an absolute path, so a run
/// from any directory shows where its files went), before the measurements start.
pub fn results_dir(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow::anyhow!("cannot create the results directory {}: {e}", dir.display())
    })?;
    let full = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    println!("# results go to {} (--out to choose)", full.display());
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn csv_cells_with_commas_and_quotes_are_quoted() {
        let mut t = Table::new(&["variant", "items/s"]);
        t.push(vec!["copying queues, auto".into(), "1e9".into()]);
        t.push(vec!["a \"quoted\" name".into(), "2".into()]);
        assert_eq!(
            t.to_csv(),
            "variant,items/s\n\"copying queues, auto\",1e9\n\"a \"\"quoted\"\" name\",2\n"
        );
    }

    #[test]
    fn table_renders_aligned_columns() {
        let mut t = Table::new(&["n", "value"]);
        t.push(vec!["1".into(), "10.5".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, vec!["n  value", "-  -----", "1   10.5"]);
    }
}
