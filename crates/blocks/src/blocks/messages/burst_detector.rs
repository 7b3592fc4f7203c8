//! `burst_detector`: passes a complex stream through unchanged and tags each burst found by
//! power ([`BurstScanner`]): `burst_start` on its first item, `burst_end` on its last, both
//! with the burst's power in dB, and a length tag (`packet_len`) on its first item. With
//! `only_bursts` it passes the bursts' items alone, so its output is a tagged stream of one
//! packet per burst, which `tagged_stream_to_pdu` turns into PDUs.

use num_complex::Complex32;
use sluice_kernels::{Burst, BurstScanner};
use sluice_runtime::{
    InPort, Node, NodeError, OutPort, Output, Ports, Tag, TagPolicy, TagValue, Work, WorkIo,
};
use std::collections::VecDeque;
use std::sync::Arc;

/// The tag on a burst's first item (its power in dB).
pub const BURST_START: &str = "burst_start";
/// The tag on a burst's last item (its power in dB).
pub const BURST_END: &str = "burst_end";
/// The tag on a burst's first item giving that item's index in the detector's input (so that
/// a PDU's metadata says where in the capture its burst was).
pub const BURST_ITEM: &str = "burst_item";

/// See the module docs. Items leave once no burst tag can fall on them any more: a burst is
/// held back until it has closed (at most `max_len` plus the hold-off and the window), which
/// the input's queue is sized for, so the delay through it is that long at most.
pub struct BurstDetector {
    scanner: BurstScanner,
    keys: Keys,
    only_bursts: bool,
    found: Vec<Burst>,
    /// Scratch for [`BurstDetector::gate`]'s bursts that begin, kept so `work` allocates
    /// nothing.
    starts: Vec<(Burst, usize)>,
    /// Bursts found whose items have not all left (with `only_bursts`).
    closed: VecDeque<Burst>,
    bursts: u64,
    inp: InPort<Complex32>,
    out: OutPort<Complex32>,
    ports: Ports,
}

/// The tag keys, made once and shared by every tag (so tagging allocates nothing).
struct Keys {
    start: Arc<str>,
    item: Arc<str>,
    end: Arc<str>,
    length: Option<Arc<str>>,
}

impl Keys {
    /// Puts the tags of burst `b` on the output, its first item at output index `at`.
    fn tag(&self, out: &Output<Complex32>, b: &Burst, at: u64) {
        let tag = |index, key: &Arc<str>, value| Tag {
            index,
            key: key.clone(),
            value,
            source: None,
        };
        let power = TagValue::F64(b.power_db);
        out.push_tag(tag(at, &self.start, power.clone()));
        out.push_tag(tag(at, &self.item, TagValue::U64(b.start)));
        out.push_tag(tag(at + b.len() - 1, &self.end, power));
        if let Some(key) = &self.length {
            out.push_tag(tag(at, key, TagValue::I64(b.len() as i64)));
        }
    }
}

impl BurstDetector {
    /// A detector for the scanner's settings (see [`BurstScanner::new`]), marking bursts also
    /// with `length_key` = their length when given (`packet_len` for GNU Radio's tagged
    /// streams).
    pub fn new(
        threshold_db: f64,
        hysteresis_db: f64,
        window: usize,
        holdoff: u64,
        max_len: u64,
        length_key: Option<&str>,
        only_bursts: bool,
    ) -> Result<Self, NodeError> {
        let scanner = BurstScanner::new(threshold_db, hysteresis_db, window, holdoff, max_len)
            .map_err(|e| NodeError::msg(e.to_string()))?;
        let mut ports = Ports::new();
        let hold = (max_len + holdoff) as usize + window + 1;
        let inp = ports.add_input_window::<Complex32>("in", hold);
        let out = ports.add_output::<Complex32>("out");
        Ok(BurstDetector {
            scanner,
            keys: Keys {
                start: BURST_START.into(),
                item: BURST_ITEM.into(),
                end: BURST_END.into(),
                length: length_key.map(Arc::from),
            },
            only_bursts,
            found: Vec::new(),
            starts: Vec::new(),
            closed: VecDeque::new(),
            bursts: 0,
            inp,
            out,
            ports,
        })
    }

    /// Bursts found so far.
    pub fn bursts(&self) -> u64 {
        self.bursts
    }

    /// Copies the items of bursts among `x` (input items from `read` on) to `y`, noting in
    /// `starts` each burst that begins, with its output offset in `y`; returns (items consumed,
    /// items written).
    fn gate(
        &mut self,
        x: &[Complex32],
        read: u64,
        y: &mut [Complex32],
        starts: &mut Vec<(Burst, usize)>,
    ) -> (usize, usize) {
        let (mut i, mut o) = (0usize, 0usize);
        while i < x.len() {
            let at = read + i as u64;
            let Some(b) = self.closed.front().copied() else {
                return (x.len(), o); // no burst among the rest
            };
            if at < b.start {
                i = (b.start - read).min(x.len() as u64) as usize;
                continue;
            }
            if at > b.end {
                self.closed.pop_front();
                continue;
            }
            if o == y.len() {
                break;
            }
            if at == b.start {
                starts.push((b, o));
            }
            let n = ((b.end + 1 - at) as usize)
                .min(x.len() - i)
                .min(y.len() - o);
            y[o..o + n].copy_from_slice(&x[i..i + n]);
            o += n;
            i += n;
        }
        (i, o)
    }
}

impl Node for BurstDetector {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.port(self.inp);
        let out = io.outputs.port(self.out);
        let read = input.items_read();
        let scanned = (self.scanner.next_index() - read) as usize;
        let Some(x) = input.window(scanned + 1)? else {
            return Ok(self.inp.need(scanned + 1));
        };
        let ended = x.len() <= scanned;
        self.scanner.scan(&x[scanned..], &mut self.found);
        if ended {
            self.scanner.finish(&mut self.found);
        }
        self.bursts += self.found.len() as u64;
        if self.only_bursts {
            self.closed.extend(self.found.drain(..));
        } else {
            for b in self.found.drain(..) {
                self.keys.tag(out, &b, b.start);
            }
        }
        // Settled items leave (all of them at the end of the stream).
        let ready = if ended {
            x.len()
        } else {
            (self.scanner.settled().max(read) - read) as usize
        };
        if ready == 0 {
            return if ended {
                Ok(Work::Done)
            } else {
                Ok(self.inp.need(x.len() + 1))
            };
        }
        if !self.only_bursts {
            let Some(y) = out.reserve(1)? else {
                return Ok(self.out.need(1));
            };
            let n = ready.min(y.len());
            y[..n].copy_from_slice(&x[..n]);
            out.commit(n);
            input.consume(n);
            return Ok(Work::Progress);
        }
        let first = out.items_written();
        let Some(y) = out.reserve(1)? else {
            return Ok(self.out.need(1));
        };
        let mut starts = std::mem::take(&mut self.starts);
        let (consumed, produced) = self.gate(&x[..ready], read, y, &mut starts);
        out.commit(produced);
        input.consume(consumed);
        for (b, o) in starts.drain(..) {
            self.keys.tag(out, &b, first + o as u64);
        }
        self.starts = starts;
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        if self.only_bursts {
            TagPolicy::Drop // items are dropped: upstream tags have no place
        } else {
            TagPolicy::ONE_TO_ONE
        }
    }
}
