//! `sluice devices` as the library gives it: the list and one device's probe, against the
//! test device module, checked against what `SoapySDRUtil --probe` (Debian's soapysdr-tools)
//! says about the same device.

mod support;

use sluice_soapy::probe::{list, probe, render_list, render_probe};
use sluice_soapy::Direction;

#[test]
fn the_list_and_the_probe_show_the_device_as_it_is() {
    support::module();
    let found = list("driver=sluice_test").unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        render_list(&found),
        "0: driver=sluice_test,label=sluice test device,serial=5L1CE\n"
    );
    assert!(list("driver=nonesuch").unwrap().is_empty());

    let p = probe("driver=sluice_test,rx_channels=2").unwrap();
    assert_eq!(
        (p.driver.as_str(), p.hardware.as_str()),
        ("sluice_test", "sluice_test_v1")
    );
    assert!(p.hardware_time);
    let rx: Vec<_> = p
        .channels
        .iter()
        .filter(|c| c.direction == Direction::Rx)
        .collect();
    assert_eq!(rx.len(), 2);
    let text = render_probe(&p);
    for line in [
        "  channels: 2 RX, 1 TX",
        "  timestamps: yes",
        "RX channel 1",
        "  formats: CF32, CS16, CS8, CU8 (native CS16, full scale 32768)",
        "  antennas: RX, CAL",
        "  gain: 0 .. 70 step 1 dB, AGC",
        "    LNA: 0 .. 30 step 1 dB",
        "    VGA: 0 .. 40 step 2 dB",
        "  frequency: 24000000 .. 1766000000 Hz",
        "  sample rate: 225001 .. 300000, 900001 .. 3200000 samples/s",
        "  bandwidth: 200000 .. 8000000 Hz",
        "  corrections: frequency (ppm), DC offset mode, IQ balance mode",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line:?} missing from\n{text}"
        );
    }
    let json: serde_json::Value = serde_json::to_value(&p).unwrap();
    assert_eq!(
        json["channels"][0]["gain_elements"][1]["range"]["max"],
        40.0
    );

    // The same device through SoapySDR's own tool: the same ranges and elements.
    let util = std::process::Command::new("SoapySDRUtil")
        .arg("--probe=driver=sluice_test,rx_channels=2")
        .output()
        .expect("SoapySDRUtil runs (scripts/setup.sh installs soapysdr-tools)");
    let theirs = String::from_utf8_lossy(&util.stdout);
    for line in [
        "  Channels: 2 Rx, 1 Tx",
        "    LNA gain range: [0, 30, 1] dB",
        "    VGA gain range: [0, 40, 2] dB",
        "  Full freq range: [24, 1766] MHz",
        "  Sample rates: [0.225001, 0.3], [0.900001, 3.2] MSps",
        "  Antennas: RX, CAL",
    ] {
        assert!(
            theirs.lines().any(|l| l == line),
            "{line:?} missing from\n{theirs}"
        );
    }
}
