//! How fast a block's streams run, declared once: a source's rate comes from its parameters
//! (or its file), a rate changer scales its input's rate, most blocks keep it. The loader
//! follows rates from the sources through the graph before it builds a node, so a parameter
//! declared with [`ParamDecl::follows_stream`](super::param::ParamDecl::follows_stream) takes
//! the stream's rate when the file leaves it out, and a rate the file gives that disagrees with
//! the stream's is an error naming both.

use crate::params::Params;
use std::sync::Arc;

/// Computes a rate, or a factor, from a node's parameters (declared defaults included);
/// `None` when it cannot be known before the graph runs.
pub type RateFn = Arc<dyn Fn(&mut Params) -> Option<f64> + Send + Sync>;

/// How a block's output rate follows from its input's rate and its parameters. Rates are in
/// items per second, an item being one vector for vector ports.
#[derive(Clone)]
pub enum Rate {
    /// Its outputs run at its inputs' rate, and all its inputs must run at one rate (the
    /// default for a block with inputs).
    Same,
    /// Its outputs run at its input's rate times this factor (`1 / decimation`, `ratio`).
    Scaled(RateFn),
    /// Its outputs run at this rate whatever feeds it: a source (the default for a block
    /// without inputs is [`Rate::Unknown`]).
    Fixed(RateFn),
    /// Not known before it runs (a network source, a sound card).
    Unknown,
}

impl std::fmt::Debug for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Rate::Same => "Same",
            Rate::Scaled(_) => "Scaled",
            Rate::Fixed(_) => "Fixed",
            Rate::Unknown => "Unknown",
        })
    }
}

impl Rate {
    /// A source whose rate is the number parameter `name` (when given or defaulted).
    pub fn param(name: &'static str) -> Rate {
        Rate::Fixed(Arc::new(move |p| p.opt_f64(name).ok().flatten()))
    }
    /// A rate changer that divides its input's rate by the whole number parameter `name`
    /// (`decimation`, `n`, `vlen`).
    pub fn divided_by(name: &'static str) -> Rate {
        Rate::Scaled(Arc::new(move |p| {
            let n = p.opt_u64(name).ok().flatten()?;
            (n > 0).then(|| 1.0 / n as f64)
        }))
    }
    /// A rate changer that multiplies its input's rate by the whole number parameter `name`.
    pub fn times(name: &'static str) -> Rate {
        Rate::Scaled(Arc::new(move |p| {
            p.opt_u64(name).ok().flatten().map(|n| n as f64)
        }))
    }
    /// A rate changer whose factor `f` computes from its parameters.
    pub fn scaled(f: impl Fn(&mut Params) -> Option<f64> + Send + Sync + 'static) -> Rate {
        Rate::Scaled(Arc::new(f))
    }
    /// A source whose rate `f` computes from its parameters (e.g. reads its file's header).
    pub fn fixed(f: impl Fn(&mut Params) -> Option<f64> + Send + Sync + 'static) -> Rate {
        Rate::Fixed(Arc::new(f))
    }
}

/// Whether two rates are the same, to the precision a rate written in a file has.
pub fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// A rate in words: `480 kHz`, `2.4 MHz`, `48000 Hz` (exact values stay exact).
pub fn describe(hz: f64) -> String {
    let scaled = |v: f64, unit: &str| {
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s} {unit}")
    };
    match hz.abs() {
        x if x >= 1e6 => scaled(hz / 1e6, "MHz"),
        x if x >= 1e3 => scaled(hz / 1e3, "kHz"),
        _ => scaled(hz, "Hz"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml::Value;

    #[test]
    fn rates_read_in_their_units() {
        assert_eq!(describe(480_000.0), "480 kHz");
        assert_eq!(describe(2.4e6), "2.4 MHz");
        assert_eq!(describe(44_100.0), "44.1 kHz");
        assert_eq!(describe(12.5), "12.5 Hz");
        assert!(same_rate(48_000.0, 48_000.0 * (1.0 + 1e-12)));
        assert!(!same_rate(48_000.0, 48_001.0));
    }

    #[test]
    fn factors_come_from_parameters() {
        let mut p = Params::from_values([("decimation".to_string(), Value::Integer(4))]);
        let Rate::Scaled(f) = Rate::divided_by("decimation") else {
            panic!()
        };
        assert_eq!(f(&mut p), Some(0.25));
        let mut zero = Params::from_values([("decimation".to_string(), Value::Integer(0))]);
        assert_eq!(f(&mut zero), None);
        let Rate::Fixed(g) = Rate::param("sample_rate") else {
            panic!()
        };
        assert_eq!(g(&mut Params::default()), None);
    }
}
