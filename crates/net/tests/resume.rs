//! Resume by offset: a relay between sink and source cuts the TCP connection at random points
//! several times; every item must arrive exactly once, in order.

mod common;

use common::*;
use rand::{Rng, SeedableRng};
use sluice_net::TcpOptions;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn resume_through_cuts(seed: u64, crc: bool, frame_bytes: usize, count: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // Six cuts anywhere in the first few MB of each connection (or of the whole stream):
    // mid-header, mid-payload, mid-tags, between frames.
    let span = (count as usize * 8 / 10).min(6_000_000);
    let cuts: Vec<usize> = (0..6).map(|_| rng.gen_range(1..span)).collect();
    let opts = TcpOptions {
        crc,
        frame_bytes,
        retention_bytes: 4 << 20,
        resume_timeout: Duration::from_secs(20),
        ..TcpOptions::default()
    };
    let make = |i: u64| i.wrapping_mul(0x9e3779b97f4a7c15);
    let (rx, addr, seen) = receiver::<u64>(make, opts.clone());
    let (relay, cut) = cutting_relay(addr, cuts.clone(), Flow::FromClient);
    let tags: Vec<_> = (0..count)
        .step_by(count as usize / 12 + 1)
        .map(|i| rate_tag(i, i as f64))
        .collect();
    let tx = sender(
        Counter::new(count, make, tags.clone()),
        &format!("tcp://{relay}"),
        opts,
    );
    let rx = spawn(rx);
    let tx = spawn(tx);
    tx.join().unwrap().unwrap();
    rx.join().unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(
        cut.load(Ordering::SeqCst),
        cuts.len(),
        "every planned cut happened"
    );
    assert_eq!(
        seen.first_bad, None,
        "an item arrived out of place (cuts {cuts:?})"
    );
    assert_eq!(
        seen.items, count,
        "items lost or duplicated (cuts {cuts:?})"
    );
    assert_eq!(seen.tags, tags, "tags lost or duplicated (cuts {cuts:?})");
}

#[test]
fn every_item_arrives_once_in_order_across_random_cuts() {
    resume_through_cuts(1, false, 256 << 10, 4_000_000); // 32 MB of u64
}

#[test]
fn resume_with_crc_across_random_cuts() {
    resume_through_cuts(2, true, 256 << 10, 4_000_000);
}

/// Small frames (1000 bytes) take the receiver's read-ahead path: their payloads come from
/// its read-ahead buffer, across cuts, with CRC and tags.
#[test]
fn small_frames_resume_across_random_cuts() {
    resume_through_cuts(3, true, 1000, 500_000); // 4 MB in 4000 frames
    resume_through_cuts(4, false, 1000, 500_000);
}
