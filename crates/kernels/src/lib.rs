//! sluice-kernels: pure DSP over slices. Kernels take slices and return `(consumed, produced)`:
//! FFT plans, the FIR family (direct, decimating, multi-channel, with their SIMD loops),
//! overlap-save, resamplers, the channelizer, demodulators, the rotator, beamformers, biquads
//! and IIR design, filter design, spectra, and the arithmetic the blocks need.
//!
//! Architecture invariant: this crate depends on no other crate of sluice. It never imports the
//! runtime, the queues, the graph, a file format or a plotting library; `sluice-blocks` adapts
//! its kernels to the runtime and `sluice-formats` reads and writes files.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod agc;
mod am_demod;
mod arb_resample;
#[cfg(target_arch = "x86_64")]
mod arb_resample_x86;
mod array_gen;
mod beamform;
mod beamform_ttd;
#[cfg(target_arch = "x86_64")]
mod beamform_x86;
mod biquad;
mod burst;
mod channelizer;
mod cmac;
#[cfg(target_arch = "x86_64")]
mod cmac_x86;
mod complex_parts;
mod crossover;
mod design;
mod elementwise;
mod error;
mod fft;
mod fir;
mod fm_demod;
#[cfg(target_arch = "x86_64")]
mod fm_demod_x86;
mod gaussian;
mod iir_design;
mod interleave;
mod iq_convert;
mod overlap_save;
mod pfb_mac;
#[cfg(target_arch = "x86_64")]
mod pfb_mac_x86;
mod rational;
mod resample;
mod rotator;
mod rt_clock;
mod scale;
mod simd;
mod spectrum;
mod sum;
#[cfg(test)]
mod test_util;
mod waterfall;
mod xlating;

pub use agc::{Agc, AgcSample, AgcSettings};
pub use am_demod::AmDemod;
pub use arb_resample::ArbResampler;
pub use array_gen::{ArrayGenerator, Emission, PlaneWave};
pub use beamform::{PhaseBeamformer, Steering, MAX_ANTENNAS, MAX_BEAMS};
pub use beamform_ttd::{fractional_delay, DelayBeamformer, FD_TAPS};
pub use biquad::{Biquad, BiquadCascade, IirSample};
pub use burst::{Burst, BurstScanner};
pub use channelizer::Channelizer;
pub use cmac::{cmac, cmac_with, cmul, cmul_assign, cmul_with, SimdLevel};
pub use complex_parts::{
    conjugate, imag_part, magnitude, magnitude_squared, real_part, to_complex,
};
pub use crossover::{
    fft_size_for_taps, prefer_overlap_save, FFT_CROSSOVER_TAPS, FFT_SIZE_FACTOR, MIN_FFT_SIZE,
};
pub use design::{bandpass, complex_bandpass, lowpass, Window};
pub use elementwise::{add_const, multiply, subtract, Arith, BinaryOp};
pub use error::DspError;
pub use fft::FftPlanCache;
pub use fir::{ChannelFir, ChannelSample, ComplexTaps, Fir, FirTaps, RealTaps};
pub use fm_demod::{fast_atan2, FmDemod};
pub use gaussian::Gaussian;
pub use iir_design::{
    butterworth, cascade_response, dc_blocker, deemphasis, Butterworth, MAX_IIR_ORDER,
};
pub use interleave::{deinterleave, interleave};
pub use iq_convert::{c32_to_iq, c32_to_iq_with, iq_to_c32, iq_to_c32_with, IqFormat, IqValue};
pub use overlap_save::OverlapSave;
pub use rational::RationalResampler;
pub use resample::{resample, resample_ir};
pub use rotator::Rotator;
pub use rt_clock::{GapCounter, RtClock};
pub use scale::{scale, Scalable};
pub use spectrum::{PowerSpectrum, SpectrumSample, SpectrumWindow, MAX_SPECTRUM_SIZE};
pub use sum::{add, sum, sum_accumulate, Summable};
pub use waterfall::{colour_map, Waterfall};
pub use xlating::XlatingFir;
