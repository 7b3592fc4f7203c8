//! A receiver's tag budget: how many tags, and how many bytes of them, the DATA frames within
//! any queue's worth of items may carry together. A sender's tags become heap values in the
//! receiving queue (several times their wire size), and credit counts items, not tags: without
//! a budget, a peer could send one item per frame with a full tag list each and make the
//! receiver hold millions of tags for a queue of a few thousand items.
//!
//! Why a window of the stream and not the tags the queue still holds: the items of the last
//! `capacity` offsets are all a queue can hold unread, so the tags on them bound what it holds,
//! and the window needs nothing from the queue's readers (which may look ahead without
//! consuming, so that waiting for them to drop tags could wait forever). A frame that would
//! pass the budget costs its connection ([`NetError::TagBudget`](crate::NetError::TagBudget)):
//! it ends with the reason, and the stream resumes (or, from a sender that keeps doing it, keeps failing with the reason that
//! names the setting to raise).

use std::collections::VecDeque;

/// The default of [`TcpOptions::tag_budget`](crate::TcpOptions::tag_budget).
pub const DEFAULT_TAGS: usize = 65_536;

/// The default of [`TcpOptions::tag_budget_bytes`](crate::TcpOptions::tag_budget_bytes).
pub const DEFAULT_BYTES: usize = 16 << 20;

/// The tags of the frames in the window: each frame with tags as (end offset, tags, bytes).
#[derive(Debug, Default)]
pub(crate) struct TagWindow {
    frames: VecDeque<(u64, usize, usize)>,
    tags: usize,
    bytes: usize,
}

impl TagWindow {
    /// Takes a frame that ends at stream offset `end` with `tags` tags of `bytes` bytes, in a
    /// window of `window` items ending there, if the tags of the window stay within `limits`
    /// (tags, bytes); otherwise says why.
    pub(crate) fn admit(
        &mut self,
        end: u64,
        window: u64,
        (tags, bytes): (usize, usize),
        limits: (usize, usize),
    ) -> Result<(), String> {
        let start = end.saturating_sub(window);
        while let Some(&(e, t, b)) = self.frames.front() {
            if e > start {
                break;
            }
            self.frames.pop_front();
            (self.tags, self.bytes) = (self.tags - t, self.bytes - b);
        }
        if tags == 0 {
            return Ok(());
        }
        let (all_tags, all_bytes) = (self.tags + tags, self.bytes + bytes);
        if all_tags > limits.0 || all_bytes > limits.1 {
            return Err(format!(
                "{all_tags} tags of {all_bytes} bytes within {window} items (a queue's worth), more than this end's budget of {} tags and {} bytes (tag_budget, tag_budget_bytes)",
                limits.0, limits.1
            ));
        }
        self.frames.push_back((end, tags, bytes));
        (self.tags, self.bytes) = (all_tags, all_bytes);
        Ok(())
    }

    /// Forgets the frames that end after `offset` (taken, then lost with their connection
    /// before they were whole: they come again).
    pub(crate) fn forget_after(&mut self, offset: u64) {
        while let Some(&(e, t, b)) = self.frames.back() {
            if e <= offset {
                break;
            }
            self.frames.pop_back();
            (self.tags, self.bytes) = (self.tags - t, self.bytes - b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides_and_refuses_what_would_pass_the_budget() {
        let mut w = TagWindow::default();
        let limits = (10, 1000);
        // Frames of 100 items, 4 tags each, in a window of 250 items.
        assert!(w.admit(100, 250, (4, 100), limits).is_ok());
        assert!(w.admit(200, 250, (4, 100), limits).is_ok());
        let e = w.admit(250, 250, (4, 100), limits).unwrap_err();
        assert!(e.contains("12 tags"), "{e}");
        // Once the first frame leaves the window there is room again.
        assert!(w.admit(350, 250, (4, 100), limits).is_ok());
        assert!(w.admit(351, 250, (0, 0), limits).is_ok());
        let e = w.admit(400, 250, (1, 900), limits).unwrap_err();
        assert!(e.contains("tag_budget_bytes"), "{e}");
        // A frame lost before it was whole is forgotten.
        assert!(w.admit(450, 250, (4, 100), limits).is_ok());
        w.forget_after(400);
        assert_eq!((w.tags, w.bytes), (4, 100));
    }
}
