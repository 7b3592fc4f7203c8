//! `sluice devices` and `examples/rtlsdr_fm.toml` against Debian's libSoapySDR and the test
//! device module of `crates/soapy` (built here with g++ as its own tests build it).

#[path = "../../soapy/tests/support/mod.rs"]
mod support;

use std::process::Command;

fn sluice(args: &[&str]) -> (bool, String, String) {
    support::module();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn devices_lists_and_probes_the_test_device() {
    let (ok, out, err) = sluice(&["devices"]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "0: driver=sluice_test,label=sluice test device,serial=5L1CE\n"
    );
    let (ok, out, err) = sluice(&["devices", "--find", "driver=nonesuch"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("SoapySDR finds no device"), "{out}");
    let (ok, out, err) = sluice(&["devices", "--probe", "driver=sluice_test,rx_channels=2"]);
    assert!(ok, "{err}");
    assert!(out.contains("  channels: 2 RX, 1 TX\n"), "{out}");
    assert!(out.contains("    LNA: 0 .. 30 step 1 dB\n"), "{out}");
    let (ok, out, err) = sluice(&["devices", "--probe", "driver=sluice_test", "--json"]);
    assert!(ok, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["driver"], "sluice_test");
    assert_eq!(
        json["channels"][0]["antennas"],
        serde_json::json!(["RX", "CAL"])
    );
    let (ok, _, err) = sluice(&["devices", "--probe", "driver=nonesuch"]);
    assert!(!ok);
    assert!(
        err.starts_with("sluice: error: probing SoapySDR device 'driver=nonesuch': no SoapySDR device matches 'driver=nonesuch'"),
        "{err}"
    );
}

#[test]
fn the_fm_receiver_example_runs_on_the_test_device() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("fm.wav");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/rtlsdr_fm.toml");
    let (ok, out, err) = sluice(&[
        "run",
        example,
        "--set",
        "rx.device=\"driver=sluice_test,signal=tone,tone=5000\"",
        "--set",
        "rx.samples=192000",
        "--set",
        &format!("wav.path=\"{}\"", wav.display()),
        "--stats",
    ]);
    assert!(ok, "{out}\n{err}");
    // 0.1 s of radio at 1.92 MS/s is 4800 samples of audio at 48 kHz.
    let reader = hound::WavReader::open(&wav).unwrap();
    assert_eq!(reader.spec().sample_rate, 48000);
    assert_eq!(reader.len(), 4800);
    // An unmodulated carrier 5 kHz off centre demodulates to a constant: 5 kHz / 75 kHz of
    // full deviation, once the filters have settled.
    let samples: Vec<i16> = reader.into_samples::<i16>().map(Result::unwrap).collect();
    let want = 5000.0 / 75000.0 * 32768.0;
    for (k, s) in samples.iter().enumerate().skip(400) {
        assert!(
            (f64::from(*s) - want).abs() < 60.0,
            "sample {k}: {s}, want about {want:.0}"
        );
    }
}
