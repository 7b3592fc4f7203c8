//! The `convolve` block's `gain` (dB): the output is the convolution scaled by it, so a loud
//! impulse response need not clip a WAV file.

use sluice_formats::wav::{Encoding, WavReader, WavWriter};

#[test]
fn convolve_gain_scales_the_convolved_signal() {
    let dir = std::env::temp_dir().join(format!("sluice-convolve-gain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, ir) = (dir.join("in.wav"), dir.join("ir.wav"));
    let x: Vec<f32> = (0..3000)
        .map(|n| ((n * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let h = [1.0f32, 0.75, -0.5, 0.25];
    for (path, samples) in [(&input, &x[..]), (&ir, &h[..])] {
        let mut w = WavWriter::create(path, 1, Some(48_000), Encoding::Float(32)).unwrap();
        w.write(samples).unwrap();
        w.finish().unwrap();
    }
    let registry = sluice_blocks::graph_blocks::standard_registry();
    for gain_db in [0.0f64, -12.0, 6.0] {
        let output = dir.join(format!("out{gain_db}.wav"));
        let graph = format!(
            r#"
[[node]]
name = "src"
type = "wav_source"
params = {{ path = "{}" }}

[[node]]
name = "rev"
type = "convolve"
params = {{ ir = "{}", block = 256, gain = {gain_db:?} }}

[[node]]
name = "snk"
type = "wav_sink"
params = {{ path = "{}" }}

[[edge]]
from = "src.out0"
to = "rev.in0"

[[edge]]
from = "rev.out0"
to = "snk.in0"
"#,
            input.display(),
            ir.display(),
            output.display()
        );
        sluice_graph::load_str(&graph, "gain.toml", &registry)
            .unwrap()
            .run_stepped()
            .unwrap();
        let y = WavReader::open(&output)
            .unwrap()
            .read_channels()
            .unwrap()
            .remove(0);
        assert_eq!(y.len(), x.len() + h.len() - 1);
        let g = 10f64.powf(gain_db / 20.0);
        for (n, &got) in y.iter().enumerate() {
            let want: f64 = (0..h.len())
                .filter(|&k| n >= k && n - k < x.len())
                .map(|k| f64::from(h[k]) * f64::from(x[n - k]))
                .sum::<f64>()
                * g;
            assert!(
                (f64::from(got) - want).abs() < 1e-5,
                "gain {gain_db} dB, n {n}: {got} vs {want}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
