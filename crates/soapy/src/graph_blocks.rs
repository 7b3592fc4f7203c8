//! `soapy_source` and `soapy_sink` as graph-file block types; [`register`] adds them to a
//! [`Registry`]. Building a node does not touch the device: it opens when the graph starts, so
//! graphs load (and `sluice blocks` lists them) on machines without a radio or libSoapySDR.

use crate::{RadioSettings, SoapySink, SoapySource, StreamFormat};
use sluice_graph::{
    BlockType, Family, ItemDecl, Param, ParamDecl, ParamError, Params, PortDecl, Rate, Registry,
};
use sluice_runtime::Node;

const FORMATS: &[&str] = &["CF32", "CS16", "CS8", "CU8"];

fn params(dir: &str) -> Vec<ParamDecl> {
    vec![
        Param::text("device", "SoapySDR device arguments, as `SoapySDRUtil --find` prints them (`driver=rtlsdr,serial=…`)"),
        Param::integer("channels", format!("{dir} channels of the device used, 0 .. channels-1, one port each")).default(1).min(1.0).max(16.0),
        match dir {
            // What a transmitter sends at is its stream's rate.
            "TX" => Param::number("rate", "sample rate").follows_stream().min(0.0),
            _ => Param::number("rate", "sample rate").unit("samples/s").min(0.0),
        },
        Param::number("frequency", "centre frequency").unit("Hz").derived("as the device has it").settable(),
        Param::number("gain", "overall gain, spread over the gain elements by the driver").unit("dB").derived("as the device has it").settable(),
        Param::table("gains", "named gain elements, set after `gain` (`{ LNA = 20, VGA = 10 }`; `sluice devices --probe` lists them)").derived("none"),
        Param::number("bandwidth", "baseband filter bandwidth").unit("Hz").derived("as the driver chooses for the rate"),
        Param::text("antenna", "antenna (`sluice devices --probe` lists them)").derived("as the device has it"),
        Param::bool("agc", "automatic gain control").derived("as the device has it"),
        Param::number("ppm", "frequency correction").unit("ppm").derived("as the device has it"),
        Param::bool("dc_offset_mode", "automatic DC offset correction, where the device has it").derived("as the device has it"),
        Param::bool("iq_balance_mode", "automatic IQ balance correction, where the device has it").derived("as the device has it"),
        Param::text("stream_args", "the driver's stream arguments (`bufflen=65536,buffers=15`)").default(""),
        Param::integer("mtu", "the most samples per device call").unit("samples").derived("the stream's MTU"),
    ]
}

fn opt_bool(p: &mut Params, name: &str) -> Result<Option<bool>, ParamError> {
    if p.given(name).is_none() {
        return Ok(None);
    }
    p.bool_or(name, false).map(Some)
}

fn settings(p: &mut Params, formats: &[&str]) -> Result<RadioSettings, ParamError> {
    let mut s = RadioSettings::new(&p.str("device")?, p.f64("rate")?);
    if !(s.rate.is_finite() && s.rate > 0.0) {
        return Err(ParamError::new(
            "rate",
            format!("must be positive, not {}", s.rate),
        ));
    }
    let channels = p.u64_or("channels", 1)?;
    if !(1..=crate::device::MAX_CHANNELS as u64).contains(&channels) {
        return Err(ParamError::new(
            "channels",
            format!(
                "must be 1 to {}, not {channels}",
                crate::device::MAX_CHANNELS
            ),
        ));
    }
    s.channels = (0..channels as usize).collect();
    s.frequency = p.opt_f64("frequency")?;
    s.gain = p.opt_f64("gain")?;
    s.bandwidth = p.opt_f64("bandwidth")?;
    s.antenna = p.opt_str("antenna")?;
    s.agc = opt_bool(p, "agc")?;
    s.ppm = p.opt_f64("ppm")?;
    s.dc_offset_mode = opt_bool(p, "dc_offset_mode")?;
    s.iq_balance_mode = opt_bool(p, "iq_balance_mode")?;
    s.stream_args = p.opt_str("stream_args")?.unwrap_or_default();
    s.mtu = p.opt_u64("mtu")?.unwrap_or(0) as usize;
    if let Some(v) = p.value("gains") {
        let toml::Value::Table(t) = v else {
            return Err(ParamError::new("gains", "must be a table of element = dB"));
        };
        for (name, db) in t {
            let db = match db {
                toml::Value::Float(x) => *x,
                toml::Value::Integer(i) => *i as f64,
                other => {
                    return Err(ParamError::new(
                        "gains",
                        format!("element {name} must be a number of dB, not {other}"),
                    ))
                }
            };
            s.gains.push((name.clone(), db));
        }
    }
    let format = p.opt_str("format")?.unwrap_or_else(|| "CF32".to_string());
    s.format = StreamFormat::parse(&format)
        .filter(|f| formats.contains(&f.name()))
        .ok_or_else(|| {
            ParamError::new(
                "format",
                format!("must be one of {}, not {format}", formats.join(", ")),
            )
        })?;
    Ok(s)
}

fn build_source(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let s = settings(p, FORMATS)?;
    let samples = p.opt_u64("samples")?;
    let node =
        SoapySource::new(s, samples).map_err(|e| ParamError::new("channels", e.to_string()))?;
    Ok(Box::new(node))
}

fn build_sink(p: &mut Params) -> Result<Box<dyn Node>, ParamError> {
    let s = settings(p, &FORMATS[..2])?;
    let node = SoapySink::new(s).map_err(|e| ParamError::new("format", e.to_string()))?;
    Ok(Box::new(node))
}

/// The `soapy_source` block type.
pub fn soapy_source() -> BlockType {
    BlockType::new("soapy_source", Family::Radio, "Receives from a SoapySDR device (RTL-SDR, HackRF, Airspy, LimeSDR, USRP, …): one c32 output per channel, time-aligned; tags rx_rate, rx_freq, rx_gain, rx_time at the start, rx_freq/rx_gain after run-time changes, and gap + rx_time after every overflow (counted in the node's report).")
        .port(PortDecl::output("out", ItemDecl::fixed("c32")).counted("channels"))
        .params(params("RX"))
        .param(Param::choice("format", FORMATS, "stream format between driver and sluice; integer formats are converted to c32").default("CF32"))
        .param(Param::integer("samples", "end after this many samples per channel").unit("samples").derived("until stopped"))
        .rate(Rate::param("rate"))
        .example(r#"device = "driver=rtlsdr", rate = 2.048e6, frequency = 100e6, gain = 30, format = "CS16""#)
        .build(build_source)
}

/// The `soapy_sink` block type.
pub fn soapy_sink() -> BlockType {
    BlockType::new("soapy_sink", Family::Radio, "Transmits c32 streams on a SoapySDR device, one input per channel; tx_time tags time a packet, tx_sob/tx_eob tags bound bursts (as GNU Radio's UHD and Soapy sinks); underflows and late packets are counted in the node's report.")
        .port(PortDecl::input("in", ItemDecl::fixed("c32")).counted("channels"))
        .params(params("TX"))
        .param(Param::choice("format", &FORMATS[..2], "stream format between sluice and driver").default("CF32"))
        .example(r#"device = "driver=hackrf", rate = 2e6, frequency = 433.92e6, gain = 20"#)
        .build(build_sink)
}

/// Adds `soapy_source` and `soapy_sink` to `registry`.
pub fn register(registry: &mut Registry) {
    for t in [soapy_source(), soapy_sink()] {
        registry
            .add(t)
            .expect("soapy_source and soapy_sink are registered once");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(text: &str) -> Params {
        let t: toml::Table = toml::from_str(text).unwrap();
        Params::from_values(t)
    }

    /// Building touches no device and no library: the examples build anywhere, and bad
    /// parameters are named before anything opens.
    #[test]
    fn the_examples_build_without_a_device_and_mistakes_are_named() {
        let mut registry = Registry::new();
        register(&mut registry);
        for b in registry.types() {
            let mut p = b.example_params().unwrap();
            assert_eq!(b.check(&p), vec![], "{}", b.name);
            b.instantiate(&mut p)
                .unwrap_or_else(|e| panic!("{}: {e:?}", b.name));
        }
        let source = soapy_source();
        let e = source
            .instantiate(&mut params(
                r#"device = "driver=x"
rate = 1e6
format = "CS12""#,
            ))
            .err()
            .unwrap();
        assert_eq!(e.param, "format");
        let e = soapy_sink()
            .instantiate(&mut params(
                r#"device = "driver=x"
rate = 1e6
format = "CU8""#,
            ))
            .err()
            .unwrap();
        assert!(
            e.message.contains("must be one of CF32, CS16, not CU8"),
            "{e:?}"
        );
        let e = source
            .instantiate(&mut params(
                r#"device = "driver=x"
rate = 1e6
gains = { LNA = "loud" }"#,
            ))
            .err()
            .unwrap();
        assert_eq!(e.param, "gains");
        let e = source
            .instantiate(&mut params(
                r#"device = "driver=x"
rate = -5"#,
            ))
            .err()
            .unwrap();
        assert_eq!(
            (e.param.as_str(), e.message.as_str()),
            ("rate", "must be positive, not -5")
        );
        let mut p = params(
            r#"device = "driver=x"
rate = 1e6
channels = 3"#,
        );
        let node = source.instantiate(&mut p).unwrap();
        assert_eq!(node.ports().outputs.len(), 3);
    }
}
