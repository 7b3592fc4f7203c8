//! The descriptor blocks on real pipes: a round trip, item boundaries cut by the pipe, the end
//! of stream, a broken pipe, and the real-time source's drops with their tags.

use super::*;
use crate::blocks::{Throttle, VectorSink, VectorSource};
use sluice_runtime::{Graph, RunOptions, Scheduler};

fn pipe() -> (File, File) {
    let (r, w) = std::io::pipe().unwrap();
    (
        File::from(std::os::fd::OwnedFd::from(r)),
        File::from(std::os::fd::OwnedFd::from(w)),
    )
}

#[test]
fn items_cross_a_pipe_in_odd_pieces_and_back_out() {
    let (reader, mut writer) = pipe();
    let data: Vec<u32> = (0..50_000).collect();
    let bytes: Vec<u8> = bytemuck::cast_slice(&data).to_vec();
    let feeder = std::thread::spawn(move || {
        // 7-byte writes: almost every read ends inside an item.
        for piece in bytes.chunks(7) {
            writer.write_all(piece).unwrap();
        }
    });
    let (out_reader, out_writer) = pipe();
    let collector = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut r = out_reader;
        r.read_to_end(&mut all).unwrap();
        all
    });
    let mut g = Graph::new();
    let src = g
        .add("src", FdSource::<u32>::new(reader, "the test pipe", false))
        .unwrap();
    let sink = g
        .add("sink", FdSink::<u32>::new(out_writer, "the out pipe"))
        .unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    g.run(&RunOptions::default()).unwrap();
    feeder.join().unwrap();
    let back = collector.join().unwrap();
    assert_eq!(back, bytemuck::cast_slice::<u32, u8>(&data));
}

#[test]
fn a_pipe_that_ends_inside_an_item_is_an_error_and_a_broken_pipe_a_warning() {
    let (reader, mut writer) = pipe();
    writer.write_all(&[1, 2, 3, 4, 5, 6]).unwrap();
    drop(writer);
    let mut g = Graph::new();
    let src = g
        .add("src", FdSource::<u32>::new(reader, "the test pipe", false))
        .unwrap();
    let (sink, _) = VectorSink::<u32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    let err = g.run_stepped().unwrap_err().to_string();
    assert!(
        err.contains("the test pipe ended inside an item (2 of 4 bytes)"),
        "{err}"
    );

    let (reader, writer) = pipe();
    drop(reader);
    let mut g = Graph::new();
    let src = g
        .add("src", VectorSource::new(vec![7u32; 100_000]))
        .unwrap();
    let sink = g
        .add("sink", FdSink::<u32>::new(writer, "the closed pipe"))
        .unwrap();
    g.connect(src, "out", sink, "in").unwrap();
    let report = g.run_stepped().unwrap();
    let warnings = &report.node("sink").unwrap().warnings;
    assert_eq!(
        warnings,
        &["the reader of the closed pipe went away after 0 items"]
    );
}

/// A fast writer, a slow graph: the real-time source drops what finds no room, and every gap
/// is tagged on the item after it with exactly the number of items missing.
///
/// The writer sends 50 000 items at once (far more than the 1024-item queue, the pipe and
/// 20 000 items/s can take, so some are dropped however the threads are scheduled), then,
/// after the queue has had time to drain, 1000 more: these find room, and the first of them
/// carries the last gap's tag.
#[test]
fn a_realtime_source_drops_what_finds_no_room_and_tags_each_gap() {
    let (reader, mut writer) = pipe();
    let (burst, total) = (50_000u32, 51_000u32);
    let feeder = std::thread::spawn(move || {
        let data: Vec<u32> = (0..total).collect();
        writer
            .write_all(bytemuck::cast_slice(&data[..burst as usize]))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        writer
            .write_all(bytemuck::cast_slice(&data[burst as usize..]))
            .unwrap();
    });
    let mut g = Graph::new();
    let src = g
        .add("src", FdSource::<u32>::new(reader, "the test pipe", true))
        .unwrap();
    let slow = g
        .add("slow", Throttle::<u32>::new(20_000.0).unwrap())
        .unwrap();
    let (sink, data) = VectorSink::<u32>::new();
    let sink = g.add("sink", sink).unwrap();
    g.connect_with(src, "out", slow, "in", Some(1024)).unwrap();
    g.connect(slow, "out", sink, "in").unwrap();
    let opts = RunOptions {
        scheduler: Scheduler::ThreadPerNode,
        ..RunOptions::default()
    };
    let report = g.run(&opts).unwrap();
    feeder.join().unwrap();
    let items = data.items();
    let gaps: std::collections::BTreeMap<u64, u64> = data
        .tags()
        .iter()
        .filter(|t| &*t.key == OVERFLOW)
        .map(|t| match t.value {
            TagValue::U64(n) => (t.index, n),
            ref v => panic!("{v:?}"),
        })
        .collect();
    assert!(
        !gaps.is_empty(),
        "the graph kept up with a pipe: nothing was dropped"
    );
    let mut expected = 0u32;
    for (k, &v) in items.iter().enumerate() {
        let lost = gaps.get(&(k as u64)).copied().unwrap_or(0);
        assert_eq!(u64::from(v - expected), lost, "item {k} is {v}");
        expected = v + 1;
    }
    // Items lost at the very end have no item after them to carry a tag, but are counted.
    let dropped: u64 = gaps.values().sum::<u64>() + u64::from(total - expected);
    assert_eq!(items.len() as u64 + dropped, u64::from(total));
    let warnings = &report.node("src").unwrap().warnings;
    assert!(warnings[0].starts_with("the test pipe: "), "{warnings:?}");
    assert!(
        warnings[0].contains(&format!("({dropped} items dropped")),
        "{warnings:?}"
    );
}
