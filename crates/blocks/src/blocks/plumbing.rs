//! Stream plumbing generic over the item type: [`Delay`] (zeros first, then the stream) and
//! [`SkipHead`] (drops the first items). Both move tags by hand, since neither keeps input
//! index = output index.

use super::tag_map::move_tags;
use sluice_runtime::metadata::{SAMPLE_RATE, TIME};
use sluice_runtime::{Item, Node, NodeError, Ports, Tag, TagPolicy, TagValue, Work, WorkIo};
use std::marker::PhantomData;

/// Copies up to `limit` items from input 0 to output 0, moving their tags by `shift` (output
/// index = input index + shift). Returns the outcome and the items moved.
fn pass<T: Item>(
    io: &mut WorkIo<'_>,
    limit: u64,
    shift: i128,
    tags: &mut Vec<Tag>,
) -> Result<(Work, u64), NodeError> {
    let input = io.inputs.get::<T>(0)?;
    let output = io.outputs.get::<T>(0)?;
    let read = input.items_read();
    let Some(x) = input.window(1)? else {
        return Ok((Work::NeedInput { port: 0, items: 1 }, 0));
    };
    if x.is_empty() {
        return Ok((Work::Done, 0));
    }
    let Some(y) = output.reserve(1)? else {
        return Ok((Work::NeedOutput { port: 0, items: 1 }, 0));
    };
    let n = x
        .len()
        .min(y.len())
        .min(limit.min(usize::MAX as u64) as usize);
    y[..n].copy_from_slice(&x[..n]);
    move_tags(input, output, read + n as u64, tags, |i| {
        u64::try_from(i128::from(i) + shift).ok()
    });
    input.consume(n);
    output.commit(n);
    Ok((Work::Progress, n as u64))
}

/// `items` zero items, then the input stream (GNU Radio's `delay`): output `n + items` is input
/// `n`, and so are its tags.
#[derive(Debug)]
pub struct Delay<T> {
    items: u64,
    zeros_left: u64,
    tags: Vec<Tag>,
    _items: PhantomData<T>,
}

impl<T: Item> Delay<T> {
    /// A delay of `items` items.
    pub fn new(items: u64) -> Self {
        Delay {
            items,
            zeros_left: items,
            tags: Vec::new(),
            _items: PhantomData,
        }
    }
}

impl<T: Item> Node for Delay<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.zeros_left == 0 {
            return Ok(pass::<T>(io, u64::MAX, i128::from(self.items), &mut self.tags)?.0);
        }
        let output = io.outputs.get::<T>(0)?;
        let Some(y) = output.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        let n = y.len().min(self.zeros_left.min(usize::MAX as u64) as usize);
        y[..n].fill(T::zeroed());
        output.commit(n);
        self.zeros_left -= n as u64;
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

/// Drops the first `items` items of the stream, then passes the rest (GNU Radio's
/// `skiphead`). Tags on the dropped items are not lost: the last of each key lands on the first
/// item passed, `rx_time` moved on to that item's time when the stream's `rx_rate` is known
/// (and dropped when it is not), so a stream keeps its metadata.
#[derive(Debug)]
pub struct SkipHead<T> {
    items: u64,
    skipped: u64,
    /// The last tag of each key seen on a dropped item.
    held: Vec<Tag>,
    tags: Vec<Tag>,
    _items: PhantomData<T>,
}

impl<T: Item> SkipHead<T> {
    /// Drops `items` items.
    pub fn new(items: u64) -> Self {
        SkipHead {
            items,
            skipped: 0,
            held: Vec::new(),
            tags: Vec::new(),
            _items: PhantomData,
        }
    }

    /// The held tags, as they apply at the first item passed.
    fn restamped(&mut self) -> Vec<Tag> {
        let rate = self.held.iter().find_map(|t| match t.value {
            TagValue::F64(hz) if &*t.key == SAMPLE_RATE && hz > 0.0 => Some(hz),
            _ => None,
        });
        let items = self.items;
        let mut held = std::mem::take(&mut self.held);
        held.retain_mut(|t| {
            if &*t.key != TIME {
                t.index = 0;
                return true;
            }
            let (Some(rate), TagValue::Tuple(v)) = (rate, &t.value) else {
                return false;
            };
            let (Some(TagValue::U64(secs)), Some(TagValue::F64(frac))) = (v.first(), v.get(1))
            else {
                return false;
            };
            let later = frac + (items - t.index) as f64 / rate;
            let whole = later.floor();
            t.value = TagValue::Tuple(vec![
                TagValue::U64(secs + whole as u64),
                TagValue::F64(later - whole),
            ]);
            t.index = 0;
            true
        });
        held
    }
}

impl<T: Item> Node for SkipHead<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in").output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if self.skipped == self.items {
            if !self.held.is_empty() {
                let output = io.outputs.get::<T>(0)?;
                for tag in self.restamped() {
                    output.push_tag(tag);
                }
            }
            return Ok(pass::<T>(io, u64::MAX, -i128::from(self.items), &mut self.tags)?.0);
        }
        let input = io.inputs.get::<T>(0)?;
        let Some(x) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if x.is_empty() {
            return Ok(Work::Done);
        }
        let n = (x.len() as u64).min(self.items - self.skipped);
        self.skipped += n;
        input.take_tags(self.skipped, &mut self.tags);
        for tag in self.tags.drain(..) {
            self.held.retain(|h| h.key != tag.key);
            self.held.push(tag);
        }
        input.consume(n as usize);
        Ok(Work::Progress)
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::{VectorSink, VectorSource};
    use sluice_runtime::Graph;

    fn run(block: impl Node + 'static, src: VectorSource<u32>) -> (Vec<u32>, Vec<Tag>) {
        let mut g = Graph::new();
        let src = g.add("src", src.max_chunk(97)).unwrap();
        let node = g.add("node", block).unwrap();
        let (sink, data) = VectorSink::<u32>::new();
        let sink = g.add("sink", sink.max_chunk(61)).unwrap();
        g.connect(src, "out", node, "in").unwrap();
        g.connect(node, "out", sink, "in").unwrap();
        g.run_stepped().unwrap();
        (data.items(), data.tags())
    }

    #[test]
    fn delay_puts_zeros_first_and_shifts_tags() {
        let x: Vec<u32> = (1..=1000).collect();
        let src = VectorSource::new(x.clone()).with_tag(7, "k", TagValue::U64(7));
        let (y, tags) = run(Delay::<u32>::new(300), src);
        assert_eq!(y.len(), 1300);
        assert!(y[..300].iter().all(|&v| v == 0));
        assert_eq!(y[300..], x[..]);
        assert_eq!(tags.iter().map(|t| t.index).collect::<Vec<_>>(), [307]);
        let (y, _) = run(Delay::<u32>::new(0), VectorSource::new(x.clone()));
        assert_eq!(y, x);
    }

    #[test]
    fn skip_head_drops_items_but_keeps_the_streams_metadata() {
        let x: Vec<u32> = (0..1000).collect();
        let src = VectorSource::new(x.clone())
            .with_tag(0, SAMPLE_RATE, TagValue::F64(1000.0))
            .with_tag(
                0,
                TIME,
                TagValue::Tuple(vec![TagValue::U64(100), TagValue::F64(0.75)]),
            )
            .with_tag(10, "k", TagValue::U64(1))
            .with_tag(20, "k", TagValue::U64(2))
            .with_tag(600, "later", TagValue::U64(3));
        let (y, tags) = run(SkipHead::<u32>::new(500), src);
        assert_eq!(y, x[500..]);
        let seen: Vec<(u64, &str, &TagValue)> =
            tags.iter().map(|t| (t.index, &*t.key, &t.value)).collect();
        // 500 items at 1 kHz after 100.75 s: 101.25 s.
        let time = TagValue::Tuple(vec![TagValue::U64(101), TagValue::F64(0.25)]);
        assert_eq!(
            seen,
            [
                (0, SAMPLE_RATE, &TagValue::F64(1000.0)),
                (0, TIME, &time),
                (0, "k", &TagValue::U64(2)),
                (100, "later", &TagValue::U64(3)),
            ]
        );
        let (y, _) = run(SkipHead::<u32>::new(5000), VectorSource::new(x));
        assert!(y.is_empty());
    }
}
