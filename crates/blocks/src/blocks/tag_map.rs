//! Moving stream tags by hand, for blocks whose tags do not follow a plain ratio of indices
//! (a delay shifts them, a skip drops the head, an IQ conversion halves indices without
//! changing the sample rate): such a block declares `TagPolicy::Drop` and moves them here.

use sluice_runtime::{Input, Item, Output, Tag};

/// Moves the tags on `input`'s items before absolute index `before` to `output`, each at
/// `to(index)`, or drops it where `to` gives `None`. `buf` is scratch space the caller keeps
/// (empty on return), so that no allocation is made per call once it has grown.
pub(crate) fn move_tags<I: Item, O: Item>(
    input: &Input<I>,
    output: &Output<O>,
    before: u64,
    buf: &mut Vec<Tag>,
    to: impl Fn(u64) -> Option<u64>,
) {
    input.take_tags(before, buf);
    for mut tag in buf.drain(..) {
        if let Some(index) = to(tag.index) {
            tag.index = index;
            output.push_tag(tag);
        }
    }
}
