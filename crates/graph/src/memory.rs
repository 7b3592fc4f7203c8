//! A block's memory estimate against what the machine can give, checked before the block
//! allocates: a parameter that asks for tens of gigabytes is an error naming it, not an abort
//! (or the machine swapping) once the graph starts.

use crate::params::ParamError;

/// Bytes the system could give this process now: `MemAvailable` from `/proc/meminfo` (free
/// memory plus what the kernel can reclaim), or `None` where it cannot be read.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Refuses `bytes` (the estimate for what `param` asks for, described by `what`) when it is more
/// than the machine has available now.
pub fn ensure_fits(param: &str, bytes: u128, what: &str) -> Result<(), ParamError> {
    match available_bytes() {
        Some(available) if bytes > u128::from(available) => Err(ParamError::new(
            param,
            format!(
                "needs about {} for {what}, more than the {} this machine has available; lower it",
                human(bytes),
                human(u128::from(available))
            ),
        )),
        _ => Ok(()),
    }
}

/// `3221225472` → `3.0 GiB`.
pub fn human(bytes: u128) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 30), "3.0 GiB");
        assert_eq!(human(1536 << 10), "1.5 MiB");
    }

    #[test]
    fn an_absurd_request_is_refused_by_name() {
        assert!(available_bytes().is_some_and(|b| b > 0));
        let err = ensure_fits("fft_size", 1 << 60, "the FFT buffers").unwrap_err();
        assert_eq!(err.param, "fft_size");
        assert!(
            err.message
                .starts_with("needs about 1024.0 PiB for the FFT buffers"),
            "{}",
            err.message
        );
        assert!(ensure_fits("fft_size", 1 << 20, "the FFT buffers").is_ok());
    }
}
