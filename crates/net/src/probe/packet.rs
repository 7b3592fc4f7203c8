//! The probe's packets: one message of a stated size carrying an incrementing counter stream.
//!
//! A packet of `size` bytes (a multiple of 8, at least 16) is `size / 8` little-endian u64
//! words: word 0 is the packet's sequence number `k`, word 1 the origin's clock (nanoseconds
//! since the origin started) when it handed the packet to the kernel, and every other word
//! `i` is `k · (size / 8) + i`: the seed's incrementing integers, so that a lost, repeated,
//! reordered or altered packet is seen at the first word that differs.

use std::fmt;

/// Bytes of a packet's fixed part (sequence number and send time).
pub const PACKET_HEAD: usize = 16;

/// Checks that `size` can be a packet size.
pub fn check_size(size: usize) -> Result<(), String> {
    if size < PACKET_HEAD || !size.is_multiple_of(8) {
        return Err(format!(
            "a packet is a multiple of 8 bytes and at least {PACKET_HEAD} (sequence number and time stamp), not {size}"
        ));
    }
    Ok(())
}

/// Writes packet `seq` into `buf` (its whole length), with a zero time stamp.
pub fn fill(buf: &mut [u8], seq: u64) {
    let words = (buf.len() / 8) as u64;
    for (i, w) in buf.chunks_exact_mut(8).enumerate() {
        let v = match i {
            0 => seq,
            1 => 0,
            _ => seq.wrapping_mul(words).wrapping_add(i as u64),
        };
        w.copy_from_slice(&v.to_le_bytes());
    }
}

/// Sets the send time stamp of the packet in `buf`.
pub fn stamp(buf: &mut [u8], sent_ns: u64) {
    buf[8..16].copy_from_slice(&sent_ns.to_le_bytes());
}

/// A packet that is not the one expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketError {
    /// The sequence number expected.
    pub expected: u64,
    /// The word of the packet that differs (0: the sequence number).
    pub word: usize,
    /// What that word should hold.
    pub want: u64,
    /// What it holds.
    pub found: u64,
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.word == 0 {
            let what = if self.found > self.expected {
                "packets lost"
            } else {
                "a packet repeated or reordered"
            };
            write!(
                f,
                "expected packet {} but packet {} came ({what})",
                self.expected, self.found
            )
        } else {
            write!(
                f,
                "packet {}: word {} is {:#x}, expected {:#x} (the counter stream was altered)",
                self.expected, self.word, self.found, self.want
            )
        }
    }
}

/// Checks that `buf` is packet `expected`; returns its send time stamp.
pub fn check(buf: &[u8], expected: u64) -> Result<u64, PacketError> {
    let words = (buf.len() / 8) as u64;
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&buf[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    };
    let seq = word(0);
    if seq != expected {
        return Err(PacketError {
            expected,
            word: 0,
            want: expected,
            found: seq,
        });
    }
    let base = expected.wrapping_mul(words);
    for (i, w) in buf.chunks_exact(8).enumerate().skip(2) {
        let want = base.wrapping_add(i as u64);
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let found = u64::from_le_bytes(b);
        if found != want {
            return Err(PacketError {
                expected,
                word: i,
                want,
                found,
            });
        }
    }
    Ok(word(1))
}

/// Reassembles packets from payload bytes that arrive in any chunking: whole packets are
/// checked where they lie; only a packet split between two chunks is gathered in a buffer.
#[derive(Debug)]
pub struct Assembler {
    partial: Vec<u8>,
    filled: usize,
    next: u64,
}

impl Assembler {
    /// An assembler of packets of `size` bytes, expecting packet 0 first.
    pub fn new(size: usize) -> Self {
        Assembler {
            partial: vec![0; size],
            filled: 0,
            next: 0,
        }
    }

    /// The number of whole packets seen.
    pub fn packets(&self) -> u64 {
        self.next
    }

    /// Whether a packet is partly received.
    pub fn mid_packet(&self) -> bool {
        self.filled > 0
    }

    /// Takes the next payload bytes; calls `done(seq, sent_ns)` for every packet they complete.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        mut done: impl FnMut(u64, u64),
    ) -> Result<(), PacketError> {
        let size = self.partial.len();
        while !bytes.is_empty() {
            if self.filled == 0 && bytes.len() >= size {
                let sent = check(&bytes[..size], self.next)?;
                done(self.next, sent);
                self.next += 1;
                bytes = &bytes[size..];
                continue;
            }
            let k = (size - self.filled).min(bytes.len());
            self.partial[self.filled..self.filled + k].copy_from_slice(&bytes[..k]);
            self.filled += k;
            bytes = &bytes[k..];
            if self.filled == size {
                let sent = check(&self.partial, self.next)?;
                done(self.next, sent);
                self.next += 1;
                self.filled = 0;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u64, size: usize, t: u64) -> Vec<u8> {
        let mut p = vec![0; size];
        fill(&mut p, seq);
        stamp(&mut p, t);
        p
    }

    #[test]
    fn sizes_are_checked() {
        assert!(check_size(1024).is_ok());
        assert!(check_size(16).is_ok());
        assert!(check_size(8).is_err());
        assert!(check_size(1000 + 4).is_err());
    }

    #[test]
    fn a_packet_checks_and_gives_its_stamp() {
        let p = packet(7, 64, 12345);
        assert_eq!(check(&p, 7), Ok(12345));
        let e = check(&p, 6).unwrap_err();
        assert_eq!((e.word, e.found), (0, 7));
        assert!(e.to_string().contains("packets lost"), "{e}");
        let mut q = p.clone();
        q[40] ^= 1;
        let e = check(&q, 7).unwrap_err();
        assert_eq!(e.word, 5);
        assert!(e.to_string().contains("altered"), "{e}");
    }

    #[test]
    fn any_chunking_gives_every_packet_once_in_order() {
        let size = 48;
        let stream: Vec<u8> = (0..20).flat_map(|k| packet(k, size, 1000 + k)).collect();
        for cut in [1, 5, 47, 48, 49, 100, 960] {
            let mut a = Assembler::new(size);
            let mut seen = Vec::new();
            for chunk in stream.chunks(cut) {
                a.push(chunk, |k, t| seen.push((k, t))).unwrap();
            }
            assert_eq!(seen, (0..20).map(|k| (k, 1000 + k)).collect::<Vec<_>>());
            assert!(!a.mid_packet());
        }
    }

    #[test]
    fn a_missing_packet_is_named() {
        let size = 32;
        let mut stream = packet(0, size, 0);
        stream.extend(packet(2, size, 0));
        let mut a = Assembler::new(size);
        let e = a.push(&stream, |_, _| {}).unwrap_err();
        assert_eq!((e.expected, e.found), (1, 2));
    }
}
