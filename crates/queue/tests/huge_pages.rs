//! Huge-page rings: the reservation must be 2 MiB aligned, or mapping the hugetlb memfd with
//! `MAP_FIXED` fails. The test reserves huge pages itself (it needs root, as CI has) and
//! restores the system's setting afterwards; it fails loudly, never skips, when it cannot.

use sluice_queue::{channel, QueueOptions, RingReader, RingWriter};

const NR_HUGEPAGES: &str = "/proc/sys/vm/nr_hugepages";
const HUGE_PAGE: usize = 2 << 20;

fn read_nr() -> u64 {
    std::fs::read_to_string(NR_HUGEPAGES)
        .expect("read /proc/sys/vm/nr_hugepages")
        .trim()
        .parse()
        .expect("nr_hugepages is a number")
}

/// Puts `vm.nr_hugepages` back as it was when dropped, also when the test fails.
struct Restore(u64);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(NR_HUGEPAGES, self.0.to_string());
    }
}

#[test]
fn huge_page_rings_are_2mib_aligned_and_stream_across_the_wrap() {
    let before = read_nr();
    let _restore = Restore(before);
    // Two rings of 2 MiB each (mapped twice, but one memory object each).
    let wanted = before + 4;
    if let Err(e) = std::fs::write(NR_HUGEPAGES, wanted.to_string()) {
        panic!("this test reserves huge pages and needs root: writing {wanted} to {NR_HUGEPAGES} failed: {e}");
    }
    let got = read_nr();
    assert!(
        got >= wanted,
        "the kernel granted {got} huge pages of the {wanted} asked for (memory too fragmented?)"
    );
    let opts = QueueOptions {
        huge_pages: true,
        ..QueueOptions::default()
    };
    let rings: Vec<_> = (0..2)
        .map(|_| channel::<u64>(1, &opts).expect("a huge-page ring"))
        .collect();
    for (mut w, mut r) in rings {
        let cap = w.capacity();
        assert_eq!(cap * 8, HUGE_PAGE);
        assert_eq!(w.reserve(1).unwrap().as_ptr() as usize % HUGE_PAGE, 0);
        // Three quarters of the ring, three times: every window after the first wraps.
        let chunk = cap * 3 / 4;
        let mut next = 0u64;
        for _ in 0..3 {
            let space = w.reserve(chunk).unwrap();
            for (i, s) in space[..chunk].iter_mut().enumerate() {
                *s = next + i as u64;
            }
            w.commit(chunk);
            let window = r.window(chunk).unwrap();
            assert!(window[..chunk]
                .iter()
                .enumerate()
                .all(|(i, &v)| v == next + i as u64));
            r.consume(chunk);
            next += chunk as u64;
        }
    }
}
