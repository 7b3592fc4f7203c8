//! `sluice bench …`: benchmarks that print a table, write CSV/JSON (and PNG plots), and compare
//! with their baseline or peer in the same run.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod amps;
mod beamform;
mod chain;
mod chain_nodes;
mod cluster;
mod console;
mod convolve;
mod copy;
mod failover;
mod fir_crossover;
mod live;
pub mod messages;
mod net;
mod net_small;
mod net_zmq;
mod overlap_save;
pub use sluice_plot as plot;
mod radio;
mod radio_cases;
pub mod report;
mod shm;
mod soapy;
mod sum;
mod worker_out;
mod zmq;

use clap::Subcommand;

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Copy or Saxpy chains (source -> head -> k stages -> checking sink) on every scheduler vs GNU Radio and FutureSDR.
    Chain(chain::BenchChainArgs),
    /// Partitioned convolution: offline, real-time and max-channels figures.
    Convolve(convolve::BenchConvolveArgs),
    /// The first seed's overlap-save experiment: zero-copy vs manual copy vs bare compute.
    OverlapSave(overlap_save::BenchOverlapSaveArgs),
    /// Where overlap-save beats the direct-form FIR on this machine.
    FirCrossover(fir_crossover::BenchFirCrossoverArgs),
    /// The asynchronous copy engine vs memcpy/memset and memory bandwidth; `--calibrate`
    /// measures its break-even table.
    Copy(copy::BenchCopyArgs),
    /// sluice's TCP stream (tcp_sink -> tcp_source) vs a raw TCP write/read loop and libzmq
    /// on loopback: throughput, 100-byte message rate, 100-byte round trip.
    Net(net::BenchNetArgs),
    /// A stream between two processes through a shared-memory ring vs the same stream over TCP
    /// loopback, producer writing and consumer reading every byte.
    Shm(shm::BenchShmArgs),
    /// An N-input Sum (windows of every input held at once) vs the same kernel on one input.
    Sum(sum::BenchSumArgs),
    /// The whole AMPS band (333 FM channels at 20 M samples/s) through examples/amps_receiver.toml
    /// vs real time, with the CPU of each stage.
    Amps(amps::BenchAmpsArgs),
    /// Radio blocks (FIR, xlating FIR, resamplers, FM, rotator, channelizer) vs GNU Radio, FutureSDR and liquid-dsp.
    Radio(radio::BenchRadioArgs),
    /// `sluice live convolve` vs jconvolver on one JACK server: most channels without a late
    /// period, CPU per period, latency.
    Live(live::BenchLiveArgs),
    /// Delay-and-sum beamformer (16 antennas x 8 beams, phase and true-time delay) vs numpy/scipy and memory bandwidth.
    Beamform(beamform::BenchBeamformArgs),
    /// The seed's cluster experiments on a local cluster of network-namespace hosts (root):
    /// one cross-host edge vs loopback, AMPS on 4 hosts, the beamformer on 5 hosts, each vs
    /// one machine.
    Cluster(cluster::BenchClusterArgs),
    /// What watching a graph in the web console costs it: a c32 edge paced at 10 M samples/s
    /// with and without the console and two taps at 25 frames/s: the graph's CPU per item,
    /// the console's own, late items, the sink's checksum.
    Console(console::BenchConsoleArgs),
    /// Failover (root): a partition with a hot standby on a local cluster, its primary killed,
    /// cut off or stopped at random moments; outputs vs one machine, detection and takeover
    /// times.
    Failover(failover::BenchFailoverArgs),
    /// sluice-zmq's native ZMTP sockets vs libzmq's C API (zero-copy, and with the copy a
    /// gr-zeromq source makes): PUSH→PULL throughput and CPU per GB, REQ/REP round trip.
    Zmq(zmq::BenchZmqArgs),
    /// SoapySDR receive (test device module, unpaced) vs GNU Radio's gr-soapy and the module
    /// alone: items/s and CPU per sample; the CS16 conversion kernel; recording vs dd.
    Soapy(soapy::BenchSoapyArgs),
    /// A PDU chain (stream_to_tagged_stream -> tagged_stream_to_pdu -> add_system_time ->
    /// 3 x pdu_set -> time_delta -> message_debug) vs GNU Radio 3.10's same chain: PDUs/s and
    /// latency p50/p99 per PDU size.
    Messages(messages::BenchMessagesArgs),
}

/// Runs one benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Chain(args) => chain::run(args),
        BenchCommand::Convolve(args) => convolve::run(args),
        BenchCommand::OverlapSave(args) => overlap_save::run(args),
        BenchCommand::FirCrossover(args) => fir_crossover::run(args),
        BenchCommand::Copy(args) => copy::run(args),
        BenchCommand::Sum(args) => sum::run(args),
        BenchCommand::Net(args) => net::run(args),
        BenchCommand::Shm(args) => shm::run(args),
        BenchCommand::Radio(args) => radio::run(args),
        BenchCommand::Live(args) => live::run(args),
        BenchCommand::Beamform(args) => beamform::run(args),
        BenchCommand::Zmq(args) => zmq::run(args),
        BenchCommand::Soapy(args) => soapy::run(args),
        BenchCommand::Messages(args) => messages::run(args),
        BenchCommand::Amps(args) => amps::run(args),
        BenchCommand::Cluster(args) => cluster::run(args),
        BenchCommand::Failover(args) => failover::run(args),
        BenchCommand::Console(args) => console::run(args),
    }
}
