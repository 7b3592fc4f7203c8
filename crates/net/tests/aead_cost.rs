//! What each candidate cipher of the secure channel's records costs here, in CPU seconds per
//! GB sealed and per GB opened, at the record sizes a 1 MiB and a 64 KiB frame use: ring's
//! AES-256-GCM (the one the channel uses) and ChaCha20-Poly1305, and the RustCrypto crates'
//! (`aes-gcm`, `chacha20poly1305`: what `snow`'s default resolver seals Noise messages with).
//! A measurement, not a check: run it with
//! `cargo test --release -p sluice-net --test aead_cost -- --ignored --nocapture`.

use aes_gcm::aead::generic_array::GenericArray;
use aes_gcm::aead::{AeadInPlace, KeyInit};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};
use std::time::Duration;

const BYTES: usize = 1 << 30;

fn nonce12(n: u64) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[4..].copy_from_slice(&n.to_be_bytes());
    b
}

/// CPU seconds per GB for sealing and then opening `BYTES` in records of `record` bytes.
fn cost(
    record: usize,
    mut seal: impl FnMut(u64, &mut [u8]) -> [u8; 16],
    mut open: impl FnMut(u64, &mut [u8], [u8; 16]),
) -> (f64, f64) {
    let mut buf = vec![0x5au8; record];
    let records = (BYTES / record) as u64;
    let mut tags = Vec::with_capacity(records as usize);
    let t0 = sluice_os::thread_cpu_time();
    for n in 0..records {
        tags.push(seal(n, &mut buf));
        // (Each record seals its own copy in the channel; here the same buffer is sealed
        // again, which costs the cipher the same.)
    }
    let sealed = sluice_os::thread_cpu_time() - t0;
    // Open what the last seal made, as many times (a wrong tag would panic below).
    let last = *tags.last().expect("records");
    let mut copy = buf.clone();
    let t1 = sluice_os::thread_cpu_time();
    for _ in 0..records {
        copy.copy_from_slice(&buf);
        open(records - 1, &mut copy, last);
    }
    let opened = sluice_os::thread_cpu_time() - t1;
    let gb = (records as usize * record) as f64 / 1e9;
    let per = |d: Duration| d.as_secs_f64() / gb;
    (per(sealed), per(opened))
}

fn ring_cost(record: usize, alg: &'static ring::aead::Algorithm) -> (f64, f64) {
    let key = LessSafeKey::new(UnboundKey::new(alg, &[3u8; 32]).unwrap());
    let head = [0u8; 4];
    cost(
        record,
        |n, b| {
            let tag = key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce12(n)),
                    Aad::from(head),
                    b,
                )
                .unwrap();
            tag.as_ref().try_into().unwrap()
        },
        |n, b, tag| {
            key.open_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce12(n)),
                Aad::from(head),
                ring::aead::Tag::from(tag),
                b,
                0..,
            )
            .unwrap();
        },
    )
}

/// AES-256-GCM with the whole record as associated data and nothing encrypted (GMAC): what
/// `security = "authenticate"` costs.
fn ring_gmac_cost(record: usize) -> (f64, f64) {
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[3u8; 32]).unwrap());
    cost(
        record,
        |n, b| {
            let tag = key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce12(n)),
                    Aad::from(&*b),
                    &mut [],
                )
                .unwrap();
            tag.as_ref().try_into().unwrap()
        },
        |n, b, tag| {
            key.open_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce12(n)),
                Aad::from(&*b),
                ring::aead::Tag::from(tag),
                &mut [],
                0..,
            )
            .unwrap();
        },
    )
}

fn rustcrypto_cost<C: AeadInPlace + KeyInit>(record: usize) -> (f64, f64) {
    let cipher = C::new_from_slice(&[3u8; 32]).unwrap();
    let head = [0u8; 4];
    cost(
        record,
        |n, b| {
            let tag = cipher
                .encrypt_in_place_detached(GenericArray::from_slice(&nonce12(n)), &head, b)
                .unwrap();
            tag.as_slice().try_into().unwrap()
        },
        |n, b, tag| {
            cipher
                .decrypt_in_place_detached(
                    GenericArray::from_slice(&nonce12(n)),
                    &head,
                    b,
                    GenericArray::from_slice(&tag),
                )
                .unwrap();
        },
    )
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn cipher_cost_per_gb() {
    println!("cipher                          record   seal CPU s/GB   open CPU s/GB");
    for record in [256 << 10, 64 << 10] {
        let rows = [
            ("ring AES-256-GCM", ring_cost(record, &AES_256_GCM)),
            ("ring AES-256-GMAC (authenticate)", ring_gmac_cost(record)),
            (
                "ring ChaCha20-Poly1305",
                ring_cost(record, &CHACHA20_POLY1305),
            ),
            (
                "RustCrypto aes-gcm",
                rustcrypto_cost::<aes_gcm::Aes256Gcm>(record),
            ),
            (
                "RustCrypto chacha20poly1305",
                rustcrypto_cost::<chacha20poly1305::ChaCha20Poly1305>(record),
            ),
        ];
        for (name, (seal, open)) in rows {
            println!("{name:<30} {record:>7}   {seal:>13.3}   {open:>13.3}");
        }
    }
}
