//! The test device module is a real SoapySDR device for a third party too: GNU Radio's own
//! `gnuradio.soapy` source (Debian's /usr/bin/python3) opens it, sets it up and receives the
//! same counter samples sluice checks, with the same `rx_time` on its first item.

mod support;

use std::process::Command;

const FLOWGRAPH: &str = r#"
import sys
from gnuradio import gr, blocks, soapy
import pmt
tb = gr.top_block()
src = soapy.source("driver=sluice_test,rx_channels=2", "fc32", 2, "", "", [""], [""])
src.set_sample_rate(0, 2.048e6)
src.set_sample_rate(1, 2.048e6)
src.set_frequency(0, 433.92e6)
src.set_gain(0, "LNA", 20)
head0 = blocks.head(gr.sizeof_gr_complex, 100000)
head1 = blocks.head(gr.sizeof_gr_complex, 100000)
sink0 = blocks.vector_sink_c()
sink1 = blocks.vector_sink_c()
tb.connect((src, 0), head0, sink0)
tb.connect((src, 1), head1, sink1)
tb.run()
for c, sink in enumerate([sink0, sink1]):
    data = sink.data()
    assert len(data) == 100000, len(data)
    bad = [k for k, z in enumerate(data) if z != complex(k, c)]
    assert not bad, (c, bad[:5], [data[k] for k in bad[:5]])
    times = [t for t in sink.tags() if pmt.symbol_to_string(t.key) == "rx_time"]
    assert times and times[0].offset == 0, [str(t.key) for t in sink.tags()]
    secs = pmt.to_uint64(pmt.tuple_ref(times[0].value, 0))
    assert secs == 1000, secs
print("ok", src.get_frequency(0), src.get_gain(0, "LNA"))
"#;

#[test]
fn gnu_radio_soapy_source_reads_the_module_as_a_device() {
    support::module();
    let out = Command::new("/usr/bin/python3")
        .args(["-c", FLOWGRAPH])
        .output()
        .expect("Debian's /usr/bin/python3 with GNU Radio (scripts/setup.sh installs gnuradio)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "GNU Radio failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(stdout.trim(), "ok 433920000.0 20.0", "{stderr}");
}
