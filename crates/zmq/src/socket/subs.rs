//! A PUB socket's subscriptions from one peer: a sorted map of topic prefixes with reference
//! counts (as libzmq's trie: a repeated SUBSCRIBE costs a count, not memory, and one CANCEL
//! takes one back), bounded in number, matched without scanning every topic.

use std::collections::BTreeMap;
use std::ops::Bound;

/// The topics one subscriber asked for, each with how many times.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    topics: BTreeMap<Vec<u8>, u64>,
    /// The longest topic: a message's first frame is matched on at most this many bytes.
    longest: usize,
}

/// A subscription beyond the per-peer bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooMany;

impl Subscriptions {
    /// Adds one reference to `topic`; a new topic beyond `limit` distinct ones is refused.
    pub(super) fn subscribe(&mut self, topic: &[u8], limit: usize) -> Result<(), TooMany> {
        if let Some(n) = self.topics.get_mut(topic) {
            *n = n.saturating_add(1);
            return Ok(());
        }
        if self.topics.len() >= limit {
            return Err(TooMany);
        }
        self.longest = self.longest.max(topic.len());
        self.topics.insert(topic.to_vec(), 1);
        Ok(())
    }

    /// Takes one reference from `topic` (a CANCEL of a topic never subscribed does nothing).
    pub(super) fn cancel(&mut self, topic: &[u8]) {
        if let Some(n) = self.topics.get_mut(topic) {
            *n -= 1;
            if *n == 0 {
                self.topics.remove(topic);
                if topic.len() == self.longest {
                    self.longest = self.topics.keys().map(Vec::len).max().unwrap_or(0);
                }
            }
        }
    }

    /// Distinct topics.
    pub(super) fn len(&self) -> usize {
        self.topics.len()
    }

    /// Whether there is none.
    pub(super) fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }

    /// The most bytes of a message's start that [`Subscriptions::matches`] looks at.
    pub(super) fn longest(&self) -> usize {
        self.longest
    }

    /// Whether some topic is a prefix of `head`. The greatest topic not after `head` is a
    /// prefix of it, or every topic that is lies within their common prefix: each step
    /// shortens `head`, so this takes a few lookups, never a scan of every topic.
    pub(super) fn matches(&self, head: &[u8]) -> bool {
        let mut head = &head[..head.len().min(self.longest)];
        loop {
            let below = (Bound::Unbounded, Bound::Included(head));
            let Some((t, _)) = self.topics.range::<[u8], _>(below).next_back() else {
                return false;
            };
            if head.starts_with(t) {
                return true;
            }
            let common = t.iter().zip(head).take_while(|(a, b)| a == b).count();
            head = &head[..common];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_counted_not_stored() {
        let mut s = Subscriptions::default();
        for _ in 0..10_000 {
            s.subscribe(b"abc", 4).unwrap();
        }
        assert_eq!(s.len(), 1);
        for _ in 0..9_999 {
            s.cancel(b"abc");
        }
        assert!(s.matches(b"abcdef"));
        s.cancel(b"abc");
        assert!(s.is_empty() && !s.matches(b"abcdef"));
        s.cancel(b"never");
    }

    #[test]
    fn distinct_topics_are_bounded() {
        let mut s = Subscriptions::default();
        for i in 0..4u8 {
            s.subscribe(&[i], 4).unwrap();
        }
        assert_eq!(s.subscribe(b"x", 4), Err(TooMany));
        s.subscribe(&[2], 4).unwrap();
    }

    #[test]
    fn prefix_matching_agrees_with_a_scan() {
        let topics: Vec<&[u8]> = vec![b"", b"a", b"ab", b"abd", b"b", b"ba", b"zz", b"abcx"];
        let heads: Vec<&[u8]> = vec![
            b"", b"a", b"abc", b"abcd", b"abcxy", b"abd", b"b", b"bb", b"c", b"zy", b"zz1",
        ];
        for mask in 0u32..(1 << topics.len()) {
            let mut s = Subscriptions::default();
            let chosen: Vec<&[u8]> = (0..topics.len())
                .filter(|k| mask & (1 << k) != 0)
                .map(|k| topics[k])
                .collect();
            for t in &chosen {
                s.subscribe(t, 64).unwrap();
            }
            for h in &heads {
                let scan = chosen.iter().any(|t| h.starts_with(t));
                assert_eq!(s.matches(h), scan, "topics {chosen:?}, head {h:?}");
            }
        }
    }
}
