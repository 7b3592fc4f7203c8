//! Stream tags: key/value pairs attached to absolute item indices, travelling beside the items.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// The value of a stream tag.
#[derive(Debug, Clone, PartialEq)]
pub enum TagValue {
    /// A flag.
    Bool(bool),
    /// A signed integer (sequence numbers, counts).
    I64(i64),
    /// An unsigned integer.
    U64(u64),
    /// A real number (frequencies, gains, time stamps in seconds).
    F64(f64),
    /// Text.
    Str(Arc<str>),
}

/// A key/value pair attached to the item at absolute index `index` of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    /// Absolute item index (0 = the first item ever written to the queue).
    pub index: u64,
    /// The tag's name, e.g. `"rx_time"` or `"rx_freq"`.
    pub key: Arc<str>,
    /// The tag's value.
    pub value: TagValue,
}

impl Tag {
    /// A tag at `index` with `key` and `value`.
    pub fn new(index: u64, key: &str, value: TagValue) -> Self {
        Tag {
            index,
            key: key.into(),
            value,
        }
    }
}

/// Tags of one queue, ordered by index. Tags are rare beside items, so a mutex is cheap here:
/// it is taken only when a tag is added or a reader asks for tags and some exist.
#[derive(Debug, Default)]
pub(crate) struct TagStore {
    tags: Mutex<VecDeque<Tag>>,
    /// Number of tags stored, read without the lock so that readers of untagged streams never
    /// touch the mutex.
    count: std::sync::atomic::AtomicUsize,
}

impl TagStore {
    /// Adds `tag`, first dropping tags below `keep_from` (every reader has passed them).
    pub(crate) fn push(&self, tag: Tag, keep_from: u64) {
        use std::sync::atomic::Ordering;
        let mut tags = self.tags.lock().unwrap_or_else(PoisonError::into_inner);
        while tags.front().is_some_and(|t| t.index < keep_from) {
            tags.pop_front();
        }
        let at = tags.partition_point(|t| t.index <= tag.index);
        tags.insert(at, tag);
        self.count.store(tags.len(), Ordering::Release);
    }

    /// Appends the tags with index in `start..end` to `out`.
    pub(crate) fn collect(&self, start: u64, end: u64, out: &mut Vec<Tag>) {
        use std::sync::atomic::Ordering;
        if self.count.load(Ordering::Acquire) == 0 || start >= end {
            return;
        }
        let tags = self.tags.lock().unwrap_or_else(PoisonError::into_inner);
        let from = tags.partition_point(|t| t.index < start);
        out.extend(
            tags.iter()
                .skip(from)
                .take_while(|t| t.index < end)
                .cloned(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_kept_in_order_and_pruned() {
        let store = TagStore::default();
        store.push(Tag::new(5, "a", TagValue::I64(1)), 0);
        store.push(Tag::new(2, "b", TagValue::I64(2)), 0);
        let mut out = Vec::new();
        store.collect(0, 10, &mut out);
        assert_eq!(out.iter().map(|t| t.index).collect::<Vec<_>>(), vec![2, 5]);
        store.push(Tag::new(9, "c", TagValue::Bool(true)), 4);
        out.clear();
        store.collect(0, 100, &mut out);
        assert_eq!(out.iter().map(|t| t.index).collect::<Vec<_>>(), vec![5, 9]);
        out.clear();
        store.collect(6, 9, &mut out);
        assert!(out.is_empty());
    }
}
