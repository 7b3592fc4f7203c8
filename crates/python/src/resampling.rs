//! Resamplers and the channelizer as array functions: `resample_poly` (scipy's, on sluice's
//! polyphase rational resampler) and `channelize` (the polyphase filter bank).

use crate::engines::{rows, to_array, window_of};
use num_complex::Complex32;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sluice_kernels::{Channelizer, RationalResampler, Window};

/// Rows of a 1-D or 2-D real or complex array as complex samples; whether it was 1-D, and
/// whether it was real (the result then goes back real).
fn complex_rows(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<(Vec<Vec<Complex32>>, bool, bool)> {
    let np = py.import("numpy")?;
    let array = np.call_method1("asarray", (obj,))?;
    let complex: bool = np.call_method1("iscomplexobj", (&array,))?.extract()?;
    let floats = if complex {
        array
            .call_method1("astype", ("complex64",))?
            .call_method1("view", ("float32",))?
    } else {
        array.call_method1("astype", ("float32",))?
    };
    let (rows, flat) = rows(&floats, what)?;
    let rows = rows
        .into_iter()
        .map(|r| {
            if complex {
                r.chunks_exact(2)
                    .map(|p| Complex32::new(p[0], p[1]))
                    .collect()
            } else {
                r.iter().map(|&v| Complex32::new(v, 0.0)).collect()
            }
        })
        .collect();
    Ok((rows, flat, !complex))
}

/// `rows` as a complex64 array (1-D if `flat`), or its real part as float32 if `real`.
fn complex_array<'py>(
    py: Python<'py>,
    rows: &[Vec<Complex32>],
    flat: bool,
    real: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let floats: Vec<Vec<f32>> = rows
        .iter()
        .map(|r| bytemuck::cast_slice::<Complex32, f32>(r).to_vec())
        .collect();
    let array = to_array(py, &floats, flat)?.call_method1("view", ("complex64",))?;
    if real {
        array.getattr("real")?.call_method0("copy")
    } else {
        Ok(array)
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Resamples `x` by `up / down` along its last axis as `scipy.signal.resample_poly` does
/// (same filter, same alignment, same output length `ceil(n · up / down)`), on sluice's
/// polyphase rational resampler, in float32/complex64.
///
/// `x` is real or complex, 1-D or 2-D (channels × samples); the result has its kind.
/// `window` is scipy's default ("kaiser", 5.0), or "hamming", "blackman", ("kaiser", beta).
/// The filter is a low-pass of `20 · max(up, down) + 1` taps cutting off at
/// `1 / max(up, down)` of the Nyquist frequency, with gain `up`.
#[pyfunction]
#[pyo3(signature = (x, up, down, window=None))]
pub fn resample_poly<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    up: usize,
    down: usize,
    window: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if up == 0 || down == 0 {
        return Err(PyValueError::new_err(format!(
            "resample_poly: up and down must be at least 1, not {up} and {down}"
        )));
    }
    let window = window_of(window, Window::Kaiser { beta: 5.0 })?;
    let (signals, flat, real) = complex_rows(py, x, "x")?;
    let g = gcd(up, down);
    let (up, down) = (up / g, down / g);
    if up == 1 && down == 1 {
        return complex_array(py, &signals, flat, real);
    }
    // scipy's design and alignment (scipy/signal/_signaltools.py, resample_poly).
    let max_rate = up.max(down);
    let half_len = 10 * max_rate;
    let h = sluice_kernels::lowpass(2 * half_len + 1, 0.5 / max_rate as f64, window)
        .map_err(|e| PyValueError::new_err(format!("resample_poly: {e}")))?;
    let pre_pad = down - half_len % down;
    let pre_remove = (half_len + pre_pad) / down;
    let taps: Vec<f32> = std::iter::repeat_n(0.0, pre_pad)
        .chain(h.iter().map(|t| t * up as f32))
        .collect();
    let out = py.detach(|| {
        signals
            .iter()
            .map(|x| -> Result<Vec<Complex32>, String> {
                let n_out = (x.len() * up).div_ceil(down);
                let wanted = pre_remove + n_out;
                // Output m reads input up to ⌊m·down/up⌋: zeros after the signal, as scipy's.
                let needed = ((wanted.max(1) - 1) * down / up + 1).max(x.len());
                let mut input = x.clone();
                input.resize(needed, Complex32::default());
                let mut r = RationalResampler::new(up, down, &taps).map_err(|e| e.to_string())?;
                let mut y = vec![Complex32::default(); wanted];
                let (mut read, mut made) = (0, 0);
                while made < wanted {
                    let (c, p) = r.process(&input[read..], &mut y[made..]);
                    if c == 0 && p == 0 {
                        return Err(format!(
                            "the resampler stopped at output {made} of {wanted}"
                        ));
                    }
                    (read, made) = (read + c, made + p);
                }
                y.drain(..pre_remove);
                Ok(y)
            })
            .collect::<Result<Vec<_>, _>>()
    });
    let out = out.map_err(|e| PyValueError::new_err(format!("resample_poly: {e}")))?;
    complex_array(py, &out, flat, real)
}

/// Splits a complex signal into `channels` channels centred on `k · fs / channels` with a
/// polyphase filter bank: returns complex64 of shape (channels, frames), channel `k` shifted to
/// 0 Hz, low-passed and decimated by `decimation` (default `channels`: critically sampled;
/// `channels / 2`: 2× oversampled). Frame `n` ends at input sample `n · decimation`, so there
/// are `(len − 1) // decimation + 1` frames (zeros before the first sample). `taps` is the
/// prototype low-pass at the input rate (default: Kaiser β = 9, `18 · channels` taps,
/// cutting off at the channel edge). As a formula, with `h` the taps:
/// `y[k, n] = Σ_i h[i] · x[nD − i] · exp(−2πj · k · (nD − i) / channels)`.
#[pyfunction]
#[pyo3(signature = (x, channels, decimation=None, taps=None))]
pub fn channelize<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    channels: usize,
    decimation: Option<usize>,
    taps: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let err = |e: String| PyValueError::new_err(format!("channelize: {e}"));
    let (signals, flat, _) = complex_rows(py, x, "x")?;
    if !flat {
        return Err(err("x must be one signal (1-D)".into()));
    }
    let taps = match taps {
        Some(t) => rows(t, "taps")?.0.swap_remove(0),
        None => Channelizer::prototype(channels, 18).map_err(|e| err(e.to_string()))?,
    };
    let decimation = decimation.unwrap_or(channels);
    let mut bank =
        Channelizer::new(channels, decimation, &taps, None).map_err(|e| err(e.to_string()))?;
    let x = &signals[0];
    let frames = if x.is_empty() {
        0
    } else {
        (x.len() - 1) / decimation + 1
    };
    let out = py.detach(|| {
        let mut y = vec![Complex32::default(); frames * channels];
        let (mut read, mut made) = (0, 0);
        while made < y.len() {
            let (c, p) = bank.process(&x[read..], &mut y[made..]);
            if c == 0 && p == 0 {
                break;
            }
            (read, made) = (read + c, made + p);
        }
        // Frames are interleaved (one sample per channel); the result is channel-major.
        (0..channels)
            .map(|k| (0..frames).map(|n| y[n * channels + k]).collect())
            .collect::<Vec<Vec<Complex32>>>()
    });
    complex_array(py, &out, false, false)
}
