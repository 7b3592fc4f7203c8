//! `soapy_source` against Debian's real libSoapySDR and the test device module: every sample
//! checked by its index, tags at the start, at setting changes and at injected overflows,
//! channels aligned, integer formats converted exactly, and errors that name the range.

mod support;

use num_complex::Complex32;
use sluice_blocks::blocks::{VectorSink, VectorSinkData};
use sluice_kernels::IqFormat;
use sluice_runtime::{Graph, RunOptions, RunReport, StopHandle, Tag, TagValue};
use sluice_soapy::{RadioSettings, SoapySource, StreamFormat};

/// The device's time of sample `k` (ns) at `rate`, as the module computes it.
fn time_of(k: u64, rate: f64) -> i64 {
    1_000_000_000_000 + (k as f64 * 1e9 / rate).round() as i64
}

fn rx_time(ns: i64) -> TagValue {
    TagValue::rx_time(
        (ns / 1_000_000_000) as u64,
        (ns % 1_000_000_000) as f64 * 1e-9,
    )
}

/// Runs a source with `settings` for `n` samples into one vector sink per channel.
fn run(
    mut settings: RadioSettings,
    n: u64,
) -> Result<(Vec<VectorSinkData<Complex32>>, RunReport), String> {
    support::module();
    settings.args = support::unique(&settings.args);
    let channels = settings.channels.len();
    let mut g = Graph::new();
    let src = g
        .add("rx", SoapySource::new(settings, Some(n)).unwrap())
        .unwrap();
    let mut data = Vec::new();
    for c in 0..channels {
        let (sink, d) = VectorSink::<Complex32>::new();
        let s = g.add(&format!("sink{c}"), sink).unwrap();
        g.connect(src, &format!("out{c}"), s, "in").unwrap();
        data.push(d);
    }
    let report = g.run(&RunOptions::default()).map_err(|e| e.to_string())?;
    Ok((data, report))
}

/// Waits (at most 10 s) until `data` holds `n` items.
fn wait_for<T: Clone>(data: &VectorSinkData<T>, n: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while (data.items().len() as u64) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} items after 10 s, wanted {n}",
            data.items().len()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn tags(d: &VectorSinkData<Complex32>, key: &str) -> Vec<(u64, TagValue)> {
    d.tags()
        .into_iter()
        .filter(|t: &Tag| &*t.key == key)
        .map(|t| (t.index, t.value))
        .collect()
}

#[test]
fn every_sample_of_every_channel_arrives_in_order_and_aligned() {
    let mut s = RadioSettings::new("driver=sluice_test,rx_channels=3", 2.048e6);
    s.channels = vec![0, 1, 2];
    s.frequency = Some(433.92e6);
    let n = 300_000;
    let (data, report) = run(s, n).unwrap();
    for (c, d) in data.iter().enumerate() {
        let items = d.items();
        assert_eq!(items.len() as u64, n, "channel {c}");
        for (k, z) in items.iter().enumerate() {
            assert_eq!(
                *z,
                Complex32::new(k as f32, c as f32),
                "channel {c} sample {k}"
            );
        }
        assert_eq!(tags(d, "rx_rate"), vec![(0, TagValue::F64(2.048e6))]);
        assert_eq!(tags(d, "rx_freq"), vec![(0, TagValue::F64(433.92e6))]);
        assert_eq!(tags(d, "rx_time"), vec![(0, rx_time(time_of(0, 2.048e6)))]);
        assert_eq!(tags(d, "gap"), vec![]);
    }
    assert!(report.node("rx").unwrap().warnings.is_empty());
}

#[test]
fn paced_at_one_million_samples_a_second_nothing_is_lost() {
    support::module();
    let s = RadioSettings::new("driver=sluice_test,pace=1", 1e6);
    let n = 250_000;
    let (data, _) = run(s, n).unwrap();
    let items = data[0].items();
    assert_eq!(items.len() as u64, n);
    for (k, z) in items.iter().enumerate() {
        assert_eq!(z.re, k as f32, "sample {k}");
    }
    assert_eq!(tags(&data[0], "gap"), vec![]);
}

#[test]
fn overflows_are_counted_and_tagged_with_their_gap_and_time() {
    let rate = 1.024e6;
    let s = RadioSettings::new("driver=sluice_test,overflow=1000:500;50000:123", rate);
    let n = 100_000;
    let (data, report) = run(s, n).unwrap();
    let items = data[0].items();
    assert_eq!(items.len() as u64, n);
    // The device's sample number of each item out: the lost ones are skipped.
    let device_k = |i: u64| match i {
        i if i < 1000 => i,
        i if i < 50000 - 500 => i + 500,
        i => i + 623,
    };
    for (i, z) in items.iter().enumerate() {
        assert_eq!(z.re, device_k(i as u64) as f32, "item {i}");
    }
    assert_eq!(
        tags(&data[0], "gap"),
        vec![(1000, TagValue::U64(500)), (49500, TagValue::U64(123))]
    );
    assert_eq!(
        tags(&data[0], "rx_time"),
        vec![
            (0, rx_time(time_of(0, rate))),
            (1000, rx_time(time_of(1500, rate))),
            (49500, rx_time(time_of(50123, rate))),
        ]
    );
    let warnings = &report.node("rx").unwrap().warnings;
    assert_eq!(
        warnings,
        &vec![
            "2 overflows: the device dropped 623 samples per channel while the graph was behind"
                .to_string()
        ]
    );
}

/// The conversion reference, one value at a time: (v − offset) · (1/scale) in f32, as the
/// kernel documents it.
fn reference(format: IqFormat, v: i32) -> f32 {
    let (scale, offset) = match format {
        IqFormat::Cu8 => (127.5f32, 127.5f32),
        IqFormat::Ci8 => (128.0, 0.0),
        IqFormat::Ci16 => (32768.0, 0.0),
    };
    (v as f32 - offset) * (1.0 / scale)
}

#[test]
fn integer_formats_are_converted_exactly() {
    for (format, iq) in [
        (StreamFormat::Cs16, IqFormat::Ci16),
        (StreamFormat::Cs8, IqFormat::Ci8),
        (StreamFormat::Cu8, IqFormat::Cu8),
    ] {
        let mut s = RadioSettings::new("driver=sluice_test,rx_channels=2", 2.4e6);
        s.channels = vec![0, 1];
        s.format = format;
        s.mtu = 1000; // reads that end anywhere in the counter's wrap
        let n = 70_000;
        let (data, _) = run(s, n).unwrap();
        for (c, d) in data.iter().enumerate() {
            let items = d.items();
            assert_eq!(items.len() as u64, n);
            for (k, z) in items.iter().enumerate() {
                // The module's integers: k and c, wrapping in the format's type.
                let (i, q) = match format {
                    StreamFormat::Cs16 => (i32::from(k as u16 as i16), c as i32),
                    StreamFormat::Cs8 => (i32::from(k as u8 as i8), c as i32),
                    _ => (i32::from(k as u8), c as i32),
                };
                let want = Complex32::new(reference(iq, i), reference(iq, q));
                assert_eq!(
                    z.re.to_bits(),
                    want.re.to_bits(),
                    "{format:?} channel {c} sample {k}"
                );
                assert_eq!(
                    z.im.to_bits(),
                    want.im.to_bits(),
                    "{format:?} channel {c} sample {k}"
                );
            }
        }
    }
}

#[test]
fn frequency_and_gain_changes_are_tagged_where_they_took_effect() {
    support::module();
    let mut s = RadioSettings::new(&support::unique("driver=sluice_test,pace=1"), 1e6);
    s.frequency = Some(100e6);
    s.gain = Some(10.0);
    let mut g = Graph::new();
    let src = g.add("rx", SoapySource::new(s, None).unwrap()).unwrap();
    let (sink, data) = VectorSink::<Complex32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out0", sink, "in").unwrap();
    let control = g.control_handle();
    let stop = StopHandle::new();
    let opts = RunOptions {
        stop: Some(stop.clone()),
        ..RunOptions::default()
    };
    let running = std::thread::spawn(move || g.run(&opts));
    wait_for(&data, 10_000);
    let f_at = control
        .set("rx", "frequency", TagValue::F64(433.92e6))
        .unwrap();
    let g_at = control.set("rx", "gain", TagValue::F64(25.0)).unwrap();
    let err = control
        .set("rx", "frequency", TagValue::F64(3e9))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "node 'rx' could not set 'frequency': frequency of RX channel 0 3000000000 Hz is outside what sluice_test takes (24000000 .. 1766000000 Hz)"
    );
    let err = control
        .set("rx", "gain", TagValue::F64(71.0))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "gain of RX channel 0 71 dB is outside what sluice_test takes (0 .. 70 step 1 dB)"
        ),
        "{err}"
    );
    wait_for(&data, g_at + 1000);
    stop.stop();
    running.join().unwrap().unwrap();
    assert_eq!(
        tags(&data, "rx_freq"),
        vec![(0, TagValue::F64(100e6)), (f_at, TagValue::F64(433.92e6))]
    );
    assert_eq!(
        tags(&data, "rx_gain"),
        vec![(0, TagValue::F64(10.0)), (g_at, TagValue::F64(25.0))]
    );
    let items = data.items();
    for (k, z) in items.iter().enumerate() {
        assert_eq!(
            z.re, k as f32,
            "sample {k}: nothing lost across the changes"
        );
    }
}

fn init_error(settings: RadioSettings) -> String {
    match run(settings, 10) {
        Ok(_) => panic!("the source should fail to start"),
        Err(e) => e,
    }
}

#[test]
fn errors_name_the_device_the_setting_and_its_range() {
    support::module();
    let e = init_error(RadioSettings::new("driver=nonesuch", 1e6));
    assert!(
        e.contains("no SoapySDR device matches 'driver=nonesuch,test_id="),
        "{e}"
    );
    assert!(
        e.contains("devices found: driver=sluice_test,label=sluice test device,serial=5L1CE"),
        "{e}"
    );

    let e = init_error(RadioSettings::new("driver=sluice_test,rx_channels=9", 1e6));
    assert!(e.contains("sluice_test: rx_channels must be 1 .. 4"), "{e}");

    let e = init_error(RadioSettings::new("driver=sluice_test", 200e3));
    assert!(
        e.contains("sample rate of RX channel 0 200000 samples/s is outside what sluice_test takes (225001 .. 300000, 900001 .. 3200000 samples/s)"),
        "{e}"
    );

    let mut s = RadioSettings::new("driver=sluice_test", 1e6);
    s.gains = vec![("MIXER".into(), 3.0)];
    let e = init_error(s);
    assert!(
        e.contains(
            "gain element 'MIXER' of RX channel 0 on sluice_test: its gain elements are LNA, VGA"
        ),
        "{e}"
    );

    let mut s = RadioSettings::new("driver=sluice_test", 1e6);
    s.gains = vec![("LNA".into(), 40.0)];
    let e = init_error(s);
    assert!(
        e.contains(
            "gain LNA of RX channel 0 40 dB is outside what sluice_test takes (0 .. 30 step 1 dB)"
        ),
        "{e}"
    );

    let mut s = RadioSettings::new("driver=sluice_test", 1e6);
    s.antenna = Some("TX/RX".into());
    let e = init_error(s);
    assert!(e.contains("its antennas are RX, CAL"), "{e}");

    let mut s = RadioSettings::new("driver=sluice_test", 1e6);
    s.channels = vec![0, 1];
    let e = init_error(s);
    assert!(
        e.contains("RX channel 1 asked for, the device has 1"),
        "{e}"
    );
}

#[test]
fn every_setting_reaches_the_device() {
    support::module();
    let mut s = RadioSettings::new(&support::unique("driver=sluice_test,rx_channels=2"), 2.4e6);
    s.channels = vec![0, 1];
    s.frequency = Some(1.2e9);
    s.bandwidth = Some(1e6);
    s.gain = Some(12.0);
    s.gains = vec![("VGA".into(), 8.0)];
    s.antenna = Some("CAL".into());
    s.agc = Some(true);
    s.ppm = Some(-3.5);
    s.dc_offset_mode = Some(true);
    s.iq_balance_mode = Some(true);
    let mut dev = sluice_soapy::Device::open(&s.args).unwrap();
    s.apply(&mut dev, sluice_soapy::Direction::Rx).unwrap();
    for ch in 0..2 {
        use sluice_soapy::Direction::Rx;
        assert_eq!(dev.sample_rate(Rx, ch), 2.4e6);
        assert_eq!(dev.frequency(Rx, ch), 1.2e9);
        // LNA takes the first 12 dB of the overall gain, then VGA is set to 8.
        assert_eq!(dev.gain(Rx, ch), 20.0);
    }
}

/// A sink that is away for `nap` before its first read (as a graph stalled by a slow disk
/// would be), then keeps every item and tag.
struct LateSink {
    nap: std::time::Duration,
    napped: bool,
    items: std::sync::Arc<std::sync::Mutex<(Vec<Complex32>, Vec<Tag>)>>,
}

impl sluice_runtime::Node for LateSink {
    fn ports(&self) -> sluice_runtime::Ports {
        sluice_runtime::Ports::new().input::<Complex32>("in")
    }

    fn work(
        &mut self,
        io: &mut sluice_runtime::WorkIo<'_>,
    ) -> Result<sluice_runtime::Work, sluice_runtime::NodeError> {
        if !self.napped {
            std::thread::sleep(self.nap);
            self.napped = true;
        }
        let input = io.inputs.get::<Complex32>(0)?;
        let read = input.items_read();
        let Some(x) = input.window(1)? else {
            return Ok(sluice_runtime::Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(sluice_runtime::Work::Done);
        }
        let n = x.len();
        let mut kept = self.items.lock().unwrap();
        kept.0.extend_from_slice(x);
        input.take_tags(read + n as u64, &mut kept.1);
        input.consume(n);
        Ok(sluice_runtime::Work::Progress)
    }
}

#[test]
fn a_paced_device_whose_reader_falls_behind_its_fifo_loses_the_oldest_samples_tagged() {
    // 250 kS/s with a FIFO of 2,000 samples (8 ms); the graph holds 4,096 items and its sink
    // is away for 200 ms at the start: far behind, whatever the machine's load, so the device
    // must drop samples, and each drop is a gap tag with the count its indices show.
    support::module();
    let rate = 250e3;
    let args = support::unique("driver=sluice_test,pace=1,rt_buffer=2000");
    let kept = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
    let mut g = Graph::new();
    let src = g
        .add(
            "rx",
            SoapySource::new(RadioSettings::new(&args, rate), Some(60_000)).unwrap(),
        )
        .unwrap();
    let sink = g
        .add(
            "late",
            LateSink {
                nap: std::time::Duration::from_millis(200),
                napped: false,
                items: kept.clone(),
            },
        )
        .unwrap();
    g.connect_with(src, "out0", sink, "in", Some(4096)).unwrap();
    let report = g.run(&RunOptions::default()).unwrap();
    let (items, tags) = &*kept.lock().unwrap();
    assert_eq!(items.len(), 60_000);
    let gaps: Vec<(u64, u64)> = tags
        .iter()
        .filter(|t| &*t.key == "gap")
        .map(|t| match t.value {
            TagValue::U64(lost) => (t.index, lost),
            ref other => panic!("a gap of {other:?}"),
        })
        .collect();
    assert!(!gaps.is_empty(), "no gap after a 200 ms stall");
    // The counter signal gives each item's device index: every jump is a tagged gap of its
    // size, and nothing else jumps.
    let mut lost_total = 0;
    for i in 1..items.len() {
        let jump = (items[i].re - items[i - 1].re) as u64 - 1;
        let tagged = gaps
            .iter()
            .find(|&&(at, _)| at == i as u64)
            .map_or(0, |g| g.1);
        assert_eq!(jump, tagged, "item {i}");
        lost_total += jump;
    }
    // At least the stall less the FIFO and the graph's queue was lost.
    assert!(lost_total >= 50_000 - 2_000 - 8_192, "{lost_total} lost");
    let warnings = &report.node("rx").unwrap().warnings;
    assert!(
        warnings.iter().any(|w| w.contains("overflow")),
        "{warnings:?}"
    );
}
