//! The `etcd_response` fuzz target's inputs as ordinary tests: the seed corpus
//! (`fuzz/corpus/etcd_response/`) and any crash inputs (`fuzz/regressions/etcd_response/`)
//! replay through the same function as the target, and the chunk size that wrapped is spelled
//! out.

use sluice_cluster::etcd::fuzz_response;
use std::path::Path;

fn replay(dir: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        // Answers or refuses; a panic fails the test with the file's name in the output.
        eprintln!("{}: {:?}", path.display(), fuzz_response(&data));
        n += 1;
    }
    n
}

#[test]
fn the_seed_corpus_and_regressions_replay_without_panic() {
    assert!(
        replay("corpus/etcd_response") >= 4,
        "the seed corpus is missing"
    );
    replay("regressions/etcd_response");
}

#[test]
fn a_chunk_size_of_two_to_the_64_minus_one_is_refused() {
    let raw =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab\r\n0\r\n\r\n";
    let e = fuzz_response(raw).unwrap_err();
    assert!(e.contains("cut off"), "{e}");
    // Every prefix of a good chunked response answers or refuses.
    let good = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    for end in 0..good.len() {
        let _ = fuzz_response(&good[..end]);
    }
    assert_eq!(fuzz_response(good), Ok((200, 3)));
}
