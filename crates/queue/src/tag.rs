//! Stream tags: key/value pairs attached to absolute item indices, travelling beside the items.

mod value;

use crate::sync::{lock, AtomicUsize, Mutex, Ordering};
use std::collections::VecDeque;
use std::sync::Arc;

pub use value::{TagValue, Uniform};

/// A key/value pair attached to the item at absolute index `index` of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    /// Absolute item index (0 = the first item ever written to the queue).
    pub index: u64,
    /// The tag's name, e.g. `"rx_time"` or `"rx_freq"`.
    pub key: Arc<str>,
    /// The tag's value.
    pub value: TagValue,
    /// The block that made the tag, if it says (GNU Radio's `srcid`: a symbol, or `PMT_F`
    /// when absent). Propagation through nodes keeps it.
    pub source: Option<Arc<str>>,
}

impl Tag {
    /// A tag at `index` with `key` and `value`, from no named source.
    pub fn new(index: u64, key: &str, value: TagValue) -> Self {
        Tag {
            index,
            key: key.into(),
            value,
            source: None,
        }
    }

    /// A tag at `index` with `key` and `value`, made by `source` (e.g. a block's name).
    pub fn with_source(index: u64, key: &str, value: TagValue, source: &str) -> Self {
        Tag {
            source: Some(source.into()),
            ..Tag::new(index, key, value)
        }
    }
}

/// One reader's inbox of tags, ordered by index. The writer puts every tag into the inbox of
/// every attached reader before it publishes the tagged item, and a reader takes the tags out
/// once it has consumed past them. Tags are rare beside items, so a mutex is cheap here; readers
/// of untagged streams never touch it (they check `pending` first).
#[derive(Debug)]
pub(crate) struct TagInbox {
    tags: Mutex<VecDeque<Tag>>,
    pending: AtomicUsize,
}

impl Default for TagInbox {
    fn default() -> Self {
        TagInbox {
            tags: Mutex::new(VecDeque::new()),
            pending: AtomicUsize::new(0),
        }
    }
}

impl TagInbox {
    /// Adds `tag` in index order.
    pub(crate) fn push(&self, tag: Tag) {
        let mut tags = lock(&self.tags);
        let at = tags.partition_point(|t| t.index <= tag.index);
        tags.insert(at, tag);
        self.pending.store(tags.len(), Ordering::Release);
    }

    /// Moves the tags with index below `end` to `out`.
    pub(crate) fn take_before(&self, end: u64, out: &mut Vec<Tag>) {
        if self.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut tags = lock(&self.tags);
        while tags.front().is_some_and(|t| t.index < end) {
            out.extend(tags.pop_front());
        }
        self.pending.store(tags.len(), Ordering::Release);
    }

    /// A copy of every pending tag (for a reader cloned from this one).
    pub(crate) fn snapshot(&self) -> Vec<Tag> {
        lock(&self.tags).iter().cloned().collect()
    }

    /// Replaces every pending tag with `tags` (sorted here), for a slot being reused.
    pub(crate) fn replace(&self, mut tags: Vec<Tag>) {
        tags.sort_by_key(|t| t.index);
        let mut inbox = lock(&self.tags);
        inbox.clear();
        inbox.extend(tags);
        self.pending.store(inbox.len(), Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tags_come_out_in_index_order_once_passed() {
        let inbox = TagInbox::default();
        inbox.push(Tag::new(5, "a", TagValue::I64(1)));
        inbox.push(Tag::new(2, "b", TagValue::I64(2)));
        let mut out = Vec::new();
        inbox.take_before(3, &mut out);
        assert_eq!(out.iter().map(|t| t.index).collect::<Vec<_>>(), vec![2]);
        inbox.push(Tag::new(1, "late", TagValue::Bool(true)));
        out.clear();
        inbox.take_before(100, &mut out);
        assert_eq!(out.iter().map(|t| t.index).collect::<Vec<_>>(), vec![1, 5]);
        out.clear();
        inbox.take_before(100, &mut out);
        assert!(out.is_empty());
    }
}
