//! A node's ports by index and run-time dtype, as addresses: for nodes whose ports' item types
//! are chosen at run time (Python blocks). Each call borrows one port at a time; the windows
//! and reservations stay valid until consumed or committed, which is what lets a node hold
//! several at once without holding the borrows.

use crate::dtype::{with_dtype, Dtype};
use sluice_runtime::{MemoryGuard, NodeError, Tag, WorkIo};
use std::ops::Range;

/// A window or reservation: the address of its first item, its length in items and the
/// absolute index of its first item.
pub struct Span {
    pub address: usize,
    pub items: usize,
    pub first: u64,
}

/// A window of at least `n` items of input `i`, if there is one now (shorter at end of stream).
pub fn window(
    io: &mut WorkIo<'_>,
    i: usize,
    dtype: Dtype,
    n: usize,
) -> Result<Option<Span>, NodeError> {
    with_dtype!(dtype, T => {
        let input = io.inputs.get::<T>(i)?;
        let first = input.items_read();
        Ok(input.window(n)?.map(|w| Span { address: w.as_ptr() as usize, items: w.len(), first }))
    })
}

/// Consumes `k` items of input `i`.
pub fn consume(io: &mut WorkIo<'_>, i: usize, dtype: Dtype, k: usize) -> Result<(), NodeError> {
    with_dtype!(dtype, T => {
        io.inputs.get::<T>(i)?.consume(k);
        Ok(())
    })
}

/// Moves the tags of input `i` before absolute index `before` to `out`.
pub fn take_tags(
    io: &mut WorkIo<'_>,
    i: usize,
    dtype: Dtype,
    before: u64,
    out: &mut Vec<Tag>,
) -> Result<(), NodeError> {
    with_dtype!(dtype, T => {
        io.inputs.get::<T>(i)?.take_tags(before, out);
        Ok(())
    })
}

/// The memory guard of input `i`'s queue, and the queue's address range.
pub fn input_guard(
    io: &mut WorkIo<'_>,
    i: usize,
    dtype: Dtype,
) -> Result<(MemoryGuard, Range<usize>), NodeError> {
    with_dtype!(dtype, T => {
        let input = io.inputs.get::<T>(i)?;
        Ok((input.memory_guard(), input.queue_memory()))
    })
}

/// Room for at least `n` items on output `o`, if there is some now.
pub fn reserve(
    io: &mut WorkIo<'_>,
    o: usize,
    dtype: Dtype,
    n: usize,
) -> Result<Option<Span>, NodeError> {
    with_dtype!(dtype, T => {
        let out = io.outputs.get::<T>(o)?;
        let first = out.items_written();
        Ok(out.reserve(n)?.map(|w| Span { address: w.as_mut_ptr() as usize, items: w.len(), first }))
    })
}

/// Commits `k` items of output `o`.
pub fn commit(io: &mut WorkIo<'_>, o: usize, dtype: Dtype, k: usize) -> Result<(), NodeError> {
    with_dtype!(dtype, T => {
        io.outputs.get::<T>(o)?.commit(k);
        Ok(())
    })
}

/// Puts `tag` on output `o`.
pub fn push_tag(io: &mut WorkIo<'_>, o: usize, dtype: Dtype, tag: Tag) -> Result<(), NodeError> {
    with_dtype!(dtype, T => {
        io.outputs.get::<T>(o)?.push_tag(tag);
        Ok(())
    })
}

/// The memory guard of output `o`'s queue, and the queue's address range.
pub fn output_guard(
    io: &mut WorkIo<'_>,
    o: usize,
    dtype: Dtype,
) -> Result<(MemoryGuard, Range<usize>), NodeError> {
    with_dtype!(dtype, T => {
        let out = io.outputs.get::<T>(o)?;
        Ok((out.memory_guard(), out.queue_memory()))
    })
}
