//! SigMF recordings against the reference implementation: the `sigmf` Python package (PyPI,
//! installed by `scripts/setup.sh` into the system Python). Recordings written by
//! `sigmf_sink` in every datatype must pass its schema validation and read back, through it,
//! as the samples and metadata written; a recording written by it must read through
//! `sigmf_source` as the samples and metadata it holds.
//!
//! Without `/usr/bin/python3` and its `sigmf` module this test fails and says so; it never
//! skips.

use num_complex::Complex32;
use serde_json::Value;
use sluice_blocks::blocks::sigmf_tags::{annotation_tag, ANNOTATION};
use sluice_blocks::blocks::{SigmfSink, SigmfSource, VectorSink, VectorSource};
use sluice_formats::sigmf::Datatype;
use sluice_runtime::metadata::{CENTER_FREQUENCY, SAMPLE_RATE};
use sluice_runtime::{Graph, TagValue};
use std::path::{Path, PathBuf};
use std::process::Command;

const PYTHON: &str = "/usr/bin/python3";

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(name: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("sluice-sigmf-py-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

/// Runs `script` with `args` in the system Python; its standard output as JSON.
fn python(script: &str, args: &[&Path]) -> Value {
    let out = Command::new(PYTHON)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {PYTHON} ({e}): install python3 (scripts/setup.sh)")
        });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'sigmf'"),
        "the sigmf Python package is missing: run scripts/setup.sh \
         (/usr/bin/python3 -m pip install --break-system-packages --no-deps sigmf==1.14.0)"
    );
    assert!(out.status.success(), "python failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).expect("python prints JSON")
}

fn signal() -> Vec<Complex32> {
    (0..1500)
        .map(|n| Complex32::from_polar(0.9, n as f32 * 0.07) * if n % 5 == 0 { 0.3 } else { 1.0 })
        .collect()
}

/// Validates each recording and prints what the reference reads from it.
const READ: &str = r#"
import json, sys, sigmf
out = []
for path in sys.argv[1:]:
    f = sigmf.sigmffile.fromfile(path)
    f.validate()
    x = f.read_samples()
    out.append({
        "datatype": f.get_global_field("core:datatype"),
        "sample_rate": f.get_global_field("core:sample_rate"),
        "captures": [[c["core:sample_start"], c.get("core:frequency")] for c in f.get_captures()],
        "annotations": [[a["core:sample_start"], a.get("core:sample_count"), a.get("core:label")]
                        for a in f.get_annotations()],
        "re": [float(v) for v in x.real],
        "im": [float(v) for v in x.imag],
    })
print(json.dumps(out))
"#;

#[test]
fn recordings_of_every_datatype_validate_and_read_back_through_the_sigmf_package() {
    let d = dir("write");
    let x = signal();
    let mut paths = Vec::new();
    for datatype in [
        Datatype::Cf32Le,
        Datatype::Ci16Le,
        Datatype::Cu8,
        Datatype::Ci8,
    ] {
        let path = d.0.join(datatype.name());
        let note = annotation_tag(&[
            ("core:sample_count".into(), TagValue::U64(50)),
            ("core:label".into(), TagValue::Str("burst".into())),
        ]);
        let src = VectorSource::new(x.clone())
            .max_chunk(257)
            .with_tag(0, SAMPLE_RATE, TagValue::F64(2.4e6))
            .with_tag(0, CENTER_FREQUENCY, TagValue::F64(433.92e6))
            .with_tag(600, CENTER_FREQUENCY, TagValue::F64(434e6))
            .with_tag(800, ANNOTATION, note);
        let mut g = Graph::new();
        let src = g.add("src", src).unwrap();
        let sink = SigmfSink::create(&path, datatype, None, None, Some("interop".into())).unwrap();
        let sink = g.add("sink", sink).unwrap();
        g.connect(src, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        paths.push(path.with_extension("sigmf-meta"));
    }
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let read = python(READ, &refs);
    // The package scales integers by 2^(bits-1) (cu8 around 128); sluice's cu8 is centred on
    // 127.5 with full scale 127.5, so cu8 differs by up to a step from the written value.
    for (r, (name, tol)) in read.as_array().unwrap().iter().zip([
        ("cf32_le", 1e-7),
        ("ci16_le", 1.0 / 32768.0),
        ("cu8", 2.0 / 127.5),
        ("ci8", 1.0 / 128.0),
    ]) {
        assert_eq!(r["datatype"], name);
        assert_eq!(r["sample_rate"].as_f64(), Some(2.4e6), "{name}");
        assert_eq!(
            r["captures"],
            serde_json::json!([[0, 433.92e6], [600, 434e6]]),
            "{name}"
        );
        assert_eq!(
            r["annotations"],
            serde_json::json!([[800, 50, "burst"]]),
            "{name}"
        );
        let (re, im) = (r["re"].as_array().unwrap(), r["im"].as_array().unwrap());
        assert_eq!(re.len(), x.len(), "{name}");
        for (k, want) in x.iter().enumerate() {
            let got = (re[k].as_f64().unwrap(), im[k].as_f64().unwrap());
            let err = (got.0 - f64::from(want.re))
                .abs()
                .max((got.1 - f64::from(want.im)).abs());
            assert!(err <= tol, "{name} sample {k}: {got:?} vs {want}");
        }
    }
}

/// Writes a ci16_le recording with the reference package: a ramp of integers, two captures.
const WRITE: &str = r#"
import sys, numpy as np, sigmf
from sigmf import SigMFFile
base = sys.argv[1]
n = np.arange(1000)
iq = np.empty(2000, dtype="<i2")
iq[0::2] = (n * 37) % 65536 - 32768
iq[1::2] = 32767 - (n * 11) % 65535
iq.tofile(base + ".sigmf-data")
f = SigMFFile(data_file=base + ".sigmf-data", global_info={
    SigMFFile.DATATYPE_KEY: "ci16_le", SigMFFile.SAMPLE_RATE_KEY: 1.0e6,
    SigMFFile.VERSION_KEY: sigmf.__specification__})
f.add_capture(0, metadata={SigMFFile.FREQUENCY_KEY: 915e6})
f.add_capture(400, metadata={SigMFFile.FREQUENCY_KEY: 916e6})
f.add_annotation(100, 20, metadata={SigMFFile.LABEL_KEY: "ping"})
f.tofile(base + ".sigmf-meta")
print("[]")
"#;

#[test]
fn a_recording_written_by_the_sigmf_package_reads_through_sigmf_source() {
    let d = dir("read");
    let base = d.0.join("ref");
    python(WRITE, &[&base]);
    let mut g = Graph::new();
    let src = g.add("src", SigmfSource::open(&base).unwrap()).unwrap();
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    g.run_stepped().unwrap();
    let got = data.items();
    assert_eq!(got.len(), 1000);
    for (n, z) in got.iter().enumerate() {
        let i = (n as i64 * 37) % 65536 - 32768;
        let q = 32767 - (n as i64 * 11) % 65535;
        let want = (i as f64 / 32768.0, q as f64 / 32768.0);
        assert!(
            (f64::from(z.re) - want.0).abs() < 1e-9 && (f64::from(z.im) - want.1).abs() < 1e-9,
            "sample {n}: {z} vs {want:?}"
        );
    }
    let tags: Vec<(u64, String, TagValue)> = data
        .tags()
        .iter()
        .filter(|t| &*t.key != ANNOTATION)
        .map(|t| (t.index, t.key.to_string(), t.value.clone()))
        .collect();
    assert_eq!(
        tags,
        [
            (0, SAMPLE_RATE.to_string(), TagValue::F64(1e6)),
            (0, CENTER_FREQUENCY.to_string(), TagValue::F64(915e6)),
            (400, CENTER_FREQUENCY.to_string(), TagValue::F64(916e6)),
        ]
    );
    let notes: Vec<u64> = data
        .tags()
        .iter()
        .filter(|t| &*t.key == ANNOTATION)
        .map(|t| t.index)
        .collect();
    assert_eq!(notes, [100]);
}
