//! Interleaving N streams into frames of N items (one from each stream in turn) and back.
//!
//! A frame layout is what the multi-channel blocks (`fir`, `iir`, `agc`, … with `channels = N`)
//! and multi-channel files take: item `n` of stream `c` is item `n·N + c` of the interleaved
//! stream. Both functions work on whole frames and may be called on groups of the streams
//! (`first` is the group's first channel), so a caller can hold windows of a few streams at a
//! time whatever N is.

/// Writes item `n` of `inputs[k]` to `out[n·channels + first + k]`, for `n < frames`; `frames`
/// is the shortest input and `out.len() / channels`, and is returned. Items of channels outside
/// `first..first + inputs.len()` are left as they are.
///
/// # Panics
/// If `first + inputs.len() > channels` (a caller's bug).
pub fn interleave<T: Copy>(inputs: &[&[T]], channels: usize, first: usize, out: &mut [T]) -> usize {
    assert!(first + inputs.len() <= channels, "channels out of range");
    let frames = inputs
        .iter()
        .map(|x| x.len())
        .fold(out.len() / channels, usize::min);
    for (k, x) in inputs.iter().enumerate() {
        for (frame, &v) in out.chunks_exact_mut(channels).zip(&x[..frames]) {
            frame[first + k] = v;
        }
    }
    frames
}

/// Writes item `n·channels + first + k` of `x` to `outputs[k][n]`, for `n < frames`; `frames`
/// is `x.len() / channels` or the shortest output, and is returned.
///
/// # Panics
/// If `first + outputs.len() > channels` (a caller's bug).
pub fn deinterleave<T: Copy>(
    x: &[T],
    channels: usize,
    first: usize,
    outputs: &mut [&mut [T]],
) -> usize {
    assert!(first + outputs.len() <= channels, "channels out of range");
    let frames = outputs
        .iter()
        .map(|y| y.len())
        .fold(x.len() / channels, usize::min);
    for (k, y) in outputs.iter_mut().enumerate() {
        for (o, frame) in y[..frames].iter_mut().zip(x.chunks_exact(channels)) {
            *o = frame[first + k];
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_in_groups_matches_the_index_formula_and_inverts() {
        let channels = 5;
        let streams: Vec<Vec<u32>> = (0..channels)
            .map(|c| (0..100).map(|n| (n * 10 + c) as u32).collect())
            .collect();
        let mut out = vec![0u32; 100 * channels + 3];
        let views: Vec<&[u32]> = streams.iter().map(|s| s.as_slice()).collect();
        assert_eq!(interleave(&views[..2], channels, 0, &mut out), 100);
        assert_eq!(interleave(&views[2..], channels, 2, &mut out), 100);
        for (i, v) in out[..500].iter().enumerate() {
            assert_eq!(*v, ((i / channels) * 10 + i % channels) as u32, "item {i}");
        }
        let mut back = vec![vec![0u32; 120]; channels];
        let mut views: Vec<&mut [u32]> = back.iter_mut().map(|b| b.as_mut_slice()).collect();
        assert_eq!(deinterleave(&out, channels, 0, &mut views[..3]), 100);
        assert_eq!(deinterleave(&out, channels, 3, &mut views[3..]), 100);
        for (c, b) in back.iter().enumerate() {
            assert_eq!(b[..100], streams[c][..], "channel {c}");
        }
    }

    #[test]
    fn chunking_gives_the_same_frames() {
        let x: Vec<i16> = (0..600).collect();
        let mut whole = vec![vec![0i16; 200]; 3];
        let mut views: Vec<&mut [i16]> = whole.iter_mut().map(|b| b.as_mut_slice()).collect();
        deinterleave(&x, 3, 0, &mut views);
        let mut parts = vec![vec![0i16; 200]; 3];
        let mut at = 0;
        for frames in [1, 7, 150, 42] {
            let mut views: Vec<&mut [i16]> =
                parts.iter_mut().map(|b| &mut b[at..at + frames]).collect();
            at += deinterleave(&x[3 * at..], 3, 0, &mut views);
        }
        assert_eq!((at, whole), (200, parts));
    }
}
