//! `sluice devices`: the radios SoapySDR finds, or one device's capabilities (`--probe`), as
//! text or JSON.

use anyhow::Context;

/// Arguments of `sluice devices`.
#[derive(clap::Args)]
pub struct DevicesArgs {
    /// Only devices matching these SoapySDR arguments (`driver=rtlsdr`).
    #[arg(long, default_value = "")]
    find: String,
    /// Open the device these arguments name and print its channels, stream formats, sample
    /// rate and frequency ranges, gain elements and antennas (as `SoapySDRUtil --probe`).
    #[arg(long, value_name = "ARGS")]
    probe: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `sluice devices`.
pub fn devices(args: DevicesArgs) -> anyhow::Result<()> {
    if let Some(device) = args.probe {
        let p = sluice_soapy::probe::probe(&device).with_context(|| {
            format!(
                "probing SoapySDR device '{}'",
                sluice_soapy::device::escape(&device)
            )
        })?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&p)?);
        } else {
            print!("{}", sluice_soapy::probe::render_probe(&p));
        }
        return Ok(());
    }
    let found = sluice_soapy::probe::list(&args.find).context("listing SoapySDR devices")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        print!("{}", sluice_soapy::probe::render_list(&found));
    }
    Ok(())
}
