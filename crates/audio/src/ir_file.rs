//! A live convolver set up from one impulse response WAV file, its channels laid out as in
//! offline convolution ([`Layout`]): mono on every input, one per input, true stereo
//! LL/LR/RL/RR, or mono in to N out.

use crate::offline::read_wav;
use crate::{AudioError, LiveSpec};
use sluice_conv::{IrMatrix, Layout};
use std::path::Path;

/// The spec of a live convolver (client `sluice-convolve`) running the impulse response in
/// `path` on `inputs` inputs (default: 2 for a 4-channel IR, else one per IR channel), with
/// each output's dry source set by the layout. Errors name the file.
pub fn live_spec_from_wav(path: &Path, inputs: Option<usize>) -> Result<LiveSpec, AudioError> {
    let ir = read_wav(path)?;
    if ir.frames() == 0 {
        return Err(AudioError::Invalid(format!(
            "{}: the impulse response has no samples",
            path.display()
        )));
    }
    let channels = ir.channels.len();
    let inputs = inputs.unwrap_or(if channels == 4 { 2 } else { channels });
    let layout = Layout::choose(inputs, channels)
        .map_err(|e| AudioError::Invalid(format!("{}: {e}", path.display())))?;
    let irs: IrMatrix = layout
        .matrix(inputs, &ir.channels)
        .map_err(|e| AudioError::Invalid(format!("{}: {e}", path.display())))?;
    let outputs = irs.outputs();
    let mut spec = LiveSpec::new("sluice-convolve", irs);
    spec.ir_rate = Some(ir.rate);
    spec.dry_sources = (0..outputs).map(|o| Some(layout.dry_source(o))).collect();
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::{write_wav, Encoding};

    #[test]
    fn a_true_stereo_file_makes_two_inputs_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let st = dir.path().join("st.wav");
        let ch = |v: f32| vec![v, 0.5 * v, 0.25 * v];
        write_wav(
            &st,
            48000,
            Encoding::Float(32),
            &[ch(1.0), ch(0.5), ch(0.25), ch(1.0)],
        )
        .unwrap();
        let spec = live_spec_from_wav(&st, None).unwrap();
        assert_eq!((spec.irs.inputs(), spec.irs.outputs()), (2, 2));
        assert_eq!(spec.ir_rate, Some(48000));
        assert_eq!(spec.dry_sources, [Some(0), Some(1)]);
        let empty = dir.path().join("empty.wav");
        write_wav(&empty, 48000, Encoding::Int(16), &[vec![]]).unwrap();
        let e = live_spec_from_wav(&empty, None).unwrap_err().to_string();
        assert!(
            e.contains("empty.wav") && e.contains("has no samples"),
            "{e}"
        );
        let e = live_spec_from_wav(&st, Some(3)).unwrap_err().to_string();
        assert!(e.contains("st.wav"), "{e}");
        let e = live_spec_from_wav(&dir.path().join("missing.wav"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("missing.wav") && e.contains("cannot read"),
            "{e}"
        );
    }
}
