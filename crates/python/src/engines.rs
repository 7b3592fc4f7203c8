//! The engines on their own, over numpy arrays: `convolve` (few large FFTs, offline),
//! `Convolver` (the partitioned convolution engine, streaming) and `firwin` (windowed-sinc FIR
//! design in scipy's conventions). The resamplers and the channelizer are in `resampling`.

use crate::dtype::Dtype;
use crate::view::contiguous;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sluice_conv::{
    ConvolverConfig, IrMatrix, LatePolicy, Partitioning, Scheduling, StreamConvolver,
    MAX_IR_LEN_LIMIT,
};
use sluice_kernels::Window;
use std::sync::Mutex;

/// Rows of a 1-D or 2-D float array as f32 vectors (1-D is one row), and whether it was 1-D.
pub(crate) fn rows(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(Vec<Vec<f32>>, bool)> {
    let (array, address, items) = contiguous(obj, Dtype::F32)?;
    let shape: Vec<usize> = array.getattr("shape")?.extract()?;
    let (n_rows, len, flat) = match shape.as_slice() {
        [n] => (1, *n, true),
        [r, n] => (*r, *n, false),
        _ => {
            return Err(PyValueError::new_err(format!(
                "{what}: a 1-D signal or a 2-D array (channels, samples), not {}-D",
                shape.len()
            )))
        }
    };
    debug_assert_eq!(n_rows * len, items);
    // SAFETY: `address` is the first of `items` f32s of the C-contiguous array `array`, which
    // is alive (held here) until the copies below are made.
    let all = unsafe { std::slice::from_raw_parts(address as *const f32, items) };
    Ok((
        all.chunks(len.max(1))
            .take(n_rows)
            .map(<[f32]>::to_vec)
            .collect(),
        flat,
    ))
}

/// A float32 numpy array of `rows` (1-D, the rows one after another, if `flat`), written
/// straight into numpy's memory: one copy.
pub(crate) fn to_array<'py, R: AsRef<[f32]>>(
    py: Python<'py>,
    rows: &[R],
    flat: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let len = rows.first().map_or(0, |r| r.as_ref().len());
    let shape = if flat {
        vec![rows.len() * len]
    } else {
        vec![rows.len(), len]
    };
    let empty = py.import("numpy")?.getattr("empty")?;
    let array = empty.call1((shape, Dtype::F32.numpy()))?;
    let (array, address, items) = contiguous(&array, Dtype::F32)?;
    debug_assert_eq!(items, rows.len() * len);
    for (i, row) in rows.iter().enumerate() {
        let row = row.as_ref();
        debug_assert_eq!(row.len(), len);
        // SAFETY: `array` is a new C-contiguous float32 array of `rows.len() × len` items that
        // nothing else references yet; row `i` is its items `i·len .. (i+1)·len`, and `row`
        // (our own memory) cannot overlap it.
        unsafe {
            std::ptr::copy_nonoverlapping(row.as_ptr(), (address as *mut f32).add(i * len), len);
        }
    }
    Ok(array)
}

/// The IR matrix for `channels` inputs: one IR for all, or one per channel.
fn irs(ir: Vec<Vec<f32>>, channels: usize) -> PyResult<IrMatrix> {
    let err = |e: sluice_conv::ConvError| PyValueError::new_err(format!("ir: {e}"));
    match ir.len() {
        1 => Ok(IrMatrix::mono_per_channel(channels, &ir[0])),
        n if n == channels => IrMatrix::per_channel(ir).map_err(err),
        n => Err(PyValueError::new_err(format!(
            "ir has {n} channels and x {channels}: give one IR, or one per channel"
        ))),
    }
}

fn config(block: usize, ir_len: usize) -> ConvolverConfig {
    ConvolverConfig {
        block_size: block,
        partitioning: Partitioning::Auto,
        scheduling: Scheduling::SingleThread,
        late_policy: LatePolicy::Wait,
        max_ir_len: ir_len.clamp(1 << 22, MAX_IR_LEN_LIMIT),
    }
}

/// Convolves `x` with `ir` as `scipy.signal.fftconvolve` does (along the last axis), with
/// few, large FFTs (overlap-add; `sluice_conv::convolve_whole`).
///
/// `x` is one signal (1-D) or several (2-D, channels × samples); `ir` is one impulse response
/// for every channel (1-D) or one per channel (2-D). `mode` is "full" (length n + m - 1),
/// "same" (length n, centred as scipy does) or "valid" (length max(n, m) - min(n, m) + 1).
/// Computes in float32 and returns float32, shaped as `x` (along the last axis). Runs without
/// the GIL, the channels on `threads` threads at once (default: as many as there are cores).
#[pyfunction]
#[pyo3(signature = (x, ir, mode="full", threads=None))]
pub fn convolve<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    ir: &Bound<'py, PyAny>,
    mode: &str,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let (signals, flat) = rows(x, "x")?;
    let (ir, _) = rows(ir, "ir")?;
    let n = signals.first().map_or(0, Vec::len);
    let m = ir.first().map_or(0, Vec::len);
    if n == 0 || m == 0 {
        return Err(PyValueError::new_err(
            "convolve: x and ir must not be empty",
        ));
    }
    let (start, len) = match mode {
        "full" => (0, n + m - 1),
        "same" => ((m - 1) / 2, n),
        "valid" => (n.min(m) - 1, n.max(m) - n.min(m) + 1),
        other => {
            return Err(PyValueError::new_err(format!(
                "mode '{other}': use \"full\", \"same\" or \"valid\""
            )))
        }
    };
    if ir.len() != 1 && ir.len() != signals.len() {
        return Err(PyValueError::new_err(format!(
            "ir has {} channels and x {}: give one IR, or one per channel",
            ir.len(),
            signals.len()
        )));
    }
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let out = py.detach(|| {
        let inputs: Vec<&[f32]> = signals.iter().map(Vec::as_slice).collect();
        let irs: Vec<&[f32]> = ir.iter().map(Vec::as_slice).collect();
        sluice_conv::convolve_whole(&inputs, &irs, threads)
    });
    let out = out.map_err(|e| PyValueError::new_err(format!("convolve: {e}")))?;
    let rows: Vec<&[f32]> = out.iter().map(|y| &y[start..start + len]).collect();
    to_array(py, &rows, flat)
}

/// A streaming convolution: push blocks of samples, get the convolved samples back, as the
/// engine runs live (same engine as `convolve`, latency compensated).
///
/// `Convolver(ir, channels=1, block=1024)`: `ir` one impulse response (1-D) for every channel
/// or one per channel (2-D). `process(x)` takes samples (1-D for one channel, else channels ×
/// samples) and returns the output samples ready (the engine works in blocks, so up to one
/// block fewer than it took, caught up later); `finish()` returns the rest and the tail. The
/// outputs of every call, concatenated, are the convolution of the inputs, concatenated.
#[pyclass(module = "sluice", name = "Convolver")]
pub struct PyConvolver {
    engine: Mutex<StreamConvolver>,
    channels: usize,
}

impl PyConvolver {
    /// Feeds `inputs` (all of them) and returns every output sample the engine has ready;
    /// after `finish`, everything up to the end of the tail.
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<Vec<f32>>,
        flat: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let engine = &self.engine;
        let channels = self.channels;
        let done = py.detach(|| {
            let mut engine = engine
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let frames = inputs.first().map_or(0, Vec::len);
            let mut out: Vec<Vec<f32>> = vec![Vec::new(); channels];
            let mut room = vec![vec![0.0f32; 8192]; channels];
            let mut consumed = 0;
            loop {
                let ins: Vec<&[f32]> = inputs.iter().map(|x| &x[consumed..]).collect();
                let mut outs: Vec<&mut [f32]> = room.iter_mut().map(Vec::as_mut_slice).collect();
                let (c, k) = engine.process(&ins, &mut outs)?;
                consumed += c;
                for (o, r) in out.iter_mut().zip(&room) {
                    o.extend_from_slice(&r[..k]);
                }
                if c == 0 && k == 0 || (consumed == frames && engine.is_done()) {
                    return Ok::<_, sluice_conv::ConvError>(out);
                }
            }
        });
        let out = done.map_err(|e| PyValueError::new_err(format!("Convolver: {e}")))?;
        to_array(py, &out, flat && self.channels == 1)
    }
}

#[pymethods]
impl PyConvolver {
    #[new]
    #[pyo3(signature = (ir, channels=1, block=1024))]
    fn new(ir: &Bound<'_, PyAny>, channels: usize, block: usize) -> PyResult<Self> {
        let (ir, _) = rows(ir, "ir")?;
        let m = ir.first().map_or(0, Vec::len);
        let matrix = irs(ir, channels.max(1))?;
        let engine = StreamConvolver::new(config(block, m), &matrix)
            .map_err(|e| PyValueError::new_err(format!("Convolver: {e}")))?;
        Ok(PyConvolver {
            engine: Mutex::new(engine),
            channels: channels.max(1),
        })
    }

    /// Convolves the next samples `x` and returns as many output samples.
    fn process<'py>(&self, py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let (inputs, flat) = rows(x, "x")?;
        if inputs.len() != self.channels {
            return Err(PyValueError::new_err(format!(
                "Convolver.process: x has {} channels, the convolver {}",
                inputs.len(),
                self.channels
            )));
        }
        self.run(py, inputs, flat)
    }

    /// Ends the input and returns the rest: what the engine still holds and the tail, so that
    /// everything `process` and `finish` returned is the whole convolution (`n + len(ir) - 1`
    /// samples per channel).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.engine
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .finish();
        let inputs = vec![Vec::new(); self.channels];
        self.run(py, inputs, true)
    }
}

/// A window as scipy names it ("hamming", "blackman", ("kaiser", beta)), or `default`.
pub(crate) fn window_of(window: Option<&Bound<'_, PyAny>>, default: Window) -> PyResult<Window> {
    let Some(w) = window else {
        return Ok(default);
    };
    match w.extract::<String>() {
        Ok(s) if s == "hamming" => Ok(Window::Hamming),
        Ok(s) if s == "blackman" => Ok(Window::Blackman),
        Ok(s) => Err(PyValueError::new_err(format!(
            "window '{s}': use \"hamming\", \"blackman\" or (\"kaiser\", beta)"
        ))),
        Err(_) => {
            let (kind, beta): (String, f64) = w.extract()?;
            if kind != "kaiser" {
                return Err(PyValueError::new_err(format!(
                    "window ('{kind}', {beta}): only (\"kaiser\", beta) takes a parameter"
                )));
            }
            Ok(Window::Kaiser { beta })
        }
    }
}

/// FIR design as `scipy.signal.firwin` (windowed sinc, scaled to unit gain in the pass band):
/// a low-pass when `cutoff` is one frequency (`pass_zero=True`), a band-pass when it is two
/// (`pass_zero=False`). Frequencies are in the units of `fs` (default 2: the Nyquist
/// frequency is 1, as in scipy). `window` is "hamming", "blackman" or ("kaiser", beta).
/// Returns float32 taps.
#[pyfunction]
#[pyo3(signature = (numtaps, cutoff, window=None, pass_zero=None, fs=2.0))]
pub fn firwin<'py>(
    py: Python<'py>,
    numtaps: usize,
    cutoff: &Bound<'py, PyAny>,
    window: Option<&Bound<'py, PyAny>>,
    pass_zero: Option<bool>,
    fs: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let window = window_of(window, Window::Hamming)?;
    let cutoffs: Vec<f64> = match cutoff.extract::<f64>() {
        Ok(f) => vec![f],
        Err(_) => cutoff.extract()?,
    };
    // sluice's kernels take cycles per sample (Nyquist 0.5): f / fs.
    let norm: Vec<f64> = cutoffs.iter().map(|f| f / fs).collect();
    let design = match (norm.as_slice(), pass_zero.unwrap_or(norm.len() == 1)) {
        ([f], true) => sluice_kernels::lowpass(numtaps, *f, window),
        ([lo, hi], false) => sluice_kernels::bandpass(numtaps, *lo, *hi, window),
        (_, pz) => {
            return Err(PyValueError::new_err(format!(
                "firwin: {} cutoff(s) with pass_zero={pz} is not supported (a low-pass takes one \
                 cutoff and pass_zero=True, a band-pass two and pass_zero=False)",
                norm.len()
            )))
        }
    };
    let taps = design.map_err(|e| PyValueError::new_err(format!("firwin: {e}")))?;
    to_array(py, &[taps], true)
}
