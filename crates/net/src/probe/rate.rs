//! Bit rates as the probe's users write and read them: `70M`, `1.5G`, `800k`, `full`.

/// Parses a bit rate: `70M`, `1.5G`, `800k`, a number of bits per second, or `full` (also
/// `0`: as fast as the loop takes the packets, `None`).
pub fn parse_bit_rate(s: &str) -> Result<Option<f64>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("full") || t == "0" {
        return Ok(None);
    }
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G') => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Some(v * mult)),
        _ => Err(format!(
            "'{s}' is not a bit rate (use 70M, 1.5G, 800k, a number of bits per second, or full)"
        )),
    }
}

/// A bit rate in words: `70 Mbit/s`, `1.5 Gbit/s`, `800 kbit/s`, or `full speed` for `None`.
pub fn rate_words(rate: Option<f64>) -> String {
    match rate {
        None => "full speed".to_string(),
        Some(r) if r >= 1e9 => format!("{} Gbit/s", r / 1e9),
        Some(r) if r >= 1e6 => format!("{} Mbit/s", r / 1e6),
        Some(r) => format!("{} kbit/s", r / 1e3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_read_back() {
        assert_eq!(parse_bit_rate("70M"), Ok(Some(70e6)));
        assert_eq!(parse_bit_rate(" 1.5g "), Ok(Some(1.5e9)));
        assert_eq!(parse_bit_rate("800k"), Ok(Some(800e3)));
        assert_eq!(parse_bit_rate("1200"), Ok(Some(1200.0)));
        assert_eq!(parse_bit_rate("full"), Ok(None));
        assert_eq!(parse_bit_rate("0"), Ok(None));
        for bad in ["", "M", "-5M", "fast", "nanM"] {
            assert!(
                parse_bit_rate(bad)
                    .unwrap_err()
                    .contains("is not a bit rate"),
                "{bad}"
            );
        }
        assert_eq!(rate_words(Some(70e6)), "70 Mbit/s");
        assert_eq!(rate_words(Some(1.5e9)), "1.5 Gbit/s");
        assert_eq!(rate_words(Some(800e3)), "800 kbit/s");
        assert_eq!(rate_words(None), "full speed");
    }
}
