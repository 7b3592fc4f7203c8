//! Checksum: a sink that hashes the bytes of its stream, for checking that a transport (TCP,
//! shared memory, a file) delivered exactly what was sent.

use sluice_runtime::{Item, Node, NodeError, Ports, TagPolicy, Work, WorkIo};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

/// What a checksum sink saw: items, bytes, and the CRC32C (Castagnoli) of the bytes in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChecksumStats {
    /// Items received.
    pub items: u64,
    /// Bytes received (items × item size).
    pub bytes: u64,
    /// CRC32C of every byte received, in order (hardware-accelerated where the CPU has it).
    pub crc32c: u32,
}

impl ChecksumStats {
    /// One line: `N items, B bytes, crc32c 0x…`, the same for two runs only if their bytes were.
    pub fn summary(&self) -> String {
        format!(
            "{} items, {} bytes, crc32c {:#010x}",
            self.items, self.bytes, self.crc32c
        )
    }
}

/// Consumes a stream and checksums its bytes; with a label, prints the summary at the end.
#[derive(Debug)]
pub struct Checksum<T> {
    label: Option<String>,
    stats: ChecksumStats,
    shared: Arc<Mutex<ChecksumStats>>,
    _items: PhantomData<T>,
}

impl<T: Item> Checksum<T> {
    /// A checksum sink, and the handle to its figures (final once the graph has ended).
    pub fn new(label: Option<String>) -> (Self, Arc<Mutex<ChecksumStats>>) {
        let shared = Arc::new(Mutex::new(ChecksumStats::default()));
        let sink = Checksum {
            label,
            stats: ChecksumStats::default(),
            shared: shared.clone(),
            _items: PhantomData,
        };
        (sink, shared)
    }
}

impl<T: Item> Node for Checksum<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            *self.shared.lock().unwrap_or_else(PoisonError::into_inner) = self.stats;
            if let Some(label) = &self.label {
                eprintln!("checksum {label}: {}", self.stats.summary());
            }
            return Ok(Work::Done);
        }
        let bytes: &[u8] = bytemuck::cast_slice(window);
        self.stats.crc32c = crc32c::crc32c_append(self.stats.crc32c, bytes);
        self.stats.items += window.len() as u64;
        self.stats.bytes += bytes.len() as u64;
        let n = window.len();
        input.consume(n);
        Ok(Work::Progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_items_bytes_and_crc() {
        let s = ChecksumStats {
            items: 2,
            bytes: 16,
            crc32c: crc32c::crc32c(b"123456789"),
        };
        // The CRC32C check value of "123456789" (RFC 3720).
        assert_eq!(s.summary(), "2 items, 16 bytes, crc32c 0xe3069283");
    }
}
