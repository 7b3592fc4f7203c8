//! A worker's partitions read and write only beneath its data directory: absolute paths,
//! `..` and symbolic links that lead out are refused (naming the node, the parameter and the
//! path), relative paths become absolute paths beneath the root, and the worker's own
//! configuration can allow paths outside. A file name pattern (`wav_files`' `path`) is
//! confined as a written file is, its file name keeping the pattern.

use sluice_cluster::confine::{confine, PathPolicy};
use sluice_graph::{GraphDoc, PartitionDoc};
use std::path::{Path, PathBuf};

/// A fresh data directory with an `in.f32` file and a link `out` to `/etc`, removed on drop.
struct Root(PathBuf);

impl Root {
    fn new(name: &str) -> Root {
        let dir =
            std::env::temp_dir().join(format!("sluice-confine-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::write(dir.join("data/in.f32"), [0u8; 16]).unwrap();
        std::os::unix::fs::symlink("/etc", dir.join("data/out")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("data/passwd")).unwrap();
        Root(dir)
    }
    fn policy(&self, allow_outside: bool) -> PathPolicy {
        PathPolicy {
            data_dir: self.0.join("data"),
            allow_outside,
        }
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn graph(read: &str, write: &str) -> String {
    format!(
        "[[node]]\nname = \"src\"\ntype = \"file_source\"\nparams = {{ item = \"f32\", path = {read:?} }}\n\
         [[node]]\nname = \"dst\"\ntype = \"file_sink\"\nparams = {{ item = \"f32\", path = {write:?} }}\n\
         [[edge]]\nfrom = \"src.out\"\nto = \"dst.in\"\n"
    )
}

/// Confines the partition `text` (a graph file's) by `policy`: the confined partition as a
/// graph file.
fn confined(text: &str, policy: &PathPolicy) -> Result<String, String> {
    let registry = sluice_blocks::graph_blocks::standard_registry();
    let mut doc = PartitionDoc::new("a", GraphDoc::from_graph_file(text).unwrap());
    confine(&mut doc, &registry, policy, "/controller/cwd")?;
    Ok(doc.graph.to_toml())
}

fn check(root: &Root, read: &str, write: &str) -> Result<String, String> {
    confined(&graph(read, write), &root.policy(false))
}

#[test]
fn relative_paths_resolve_beneath_the_data_directory() {
    let root = Root::new("ok");
    let text = check(&root, "in.f32", "out.f32").unwrap();
    let data = root.0.join("data");
    assert!(
        text.contains(&format!("{:?}", data.join("in.f32").display().to_string())),
        "{text}"
    );
    assert!(
        text.contains(&data.join("out.f32").display().to_string()),
        "{text}"
    );
}

#[test]
fn absolute_paths_are_refused() {
    let root = Root::new("abs");
    let e = check(&root, "/etc/shadow", "out.f32").unwrap_err();
    assert!(
        e.contains("node 'src' parameter path") && e.contains("absolute"),
        "{e}"
    );
    let e = check(&root, "in.f32", "/tmp/x.f32").unwrap_err();
    assert!(e.contains("node 'dst'") && e.contains("absolute"), "{e}");
}

#[test]
fn dot_dot_is_refused() {
    let root = Root::new("dotdot");
    let e = check(&root, "../../etc/passwd", "out.f32").unwrap_err();
    assert!(e.contains("`..`"), "{e}");
    let e = check(&root, "in.f32", "../escaped.f32").unwrap_err();
    assert!(e.contains("`..`"), "{e}");
    assert!(!Path::new(&root.0.join("escaped.f32")).exists());
}

#[test]
fn symbolic_links_out_of_the_root_are_refused() {
    let root = Root::new("links");
    let e = check(&root, "out/passwd", "x.f32").unwrap_err();
    assert!(e.contains("leads out"), "{e}");
    let e = check(&root, "passwd", "x.f32").unwrap_err();
    assert!(e.contains("leads out"), "{e}");
    let e = check(&root, "in.f32", "out/evil.f32").unwrap_err();
    assert!(e.contains("leads out"), "{e}");
    let e = check(&root, "in.f32", "passwd").unwrap_err();
    assert!(e.contains("leads out"), "{e}");
}

#[test]
fn the_worker_configuration_may_allow_paths_outside() {
    let root = Root::new("allow");
    let text = confined(&graph("/abs/in.f32", "rel.f32"), &root.policy(true)).unwrap();
    assert!(
        text.contains("/abs/in.f32") && text.contains("/controller/cwd/rel.f32"),
        "{text}"
    );
}

/// `wav_files` writes one file per channel, named by a pattern: beneath the data root as any
/// written file, its directory checked and rebased, its file name kept as a pattern.
#[test]
fn a_file_name_pattern_is_confined_as_a_written_file() {
    let root = Root::new("pattern");
    std::fs::create_dir(root.0.join("data/rec")).unwrap();
    let wav = |path: &str| {
        confined(
            &format!(
                "[[node]]\nname = \"rec\"\ntype = \"wav_files\"\nparams = {{ path = {path:?}, channels = 2, sample_rate = 8000 }}\n"
            ),
            &root.policy(false),
        )
    };
    let e = wav("../x/{}.wav").unwrap_err();
    assert!(
        e.contains("node 'rec' parameter path") && e.contains("`..`"),
        "{e}"
    );
    let e = wav("rec/../../{}.wav").unwrap_err();
    assert!(e.contains("`..`"), "{e}");
    let e = wav("/tmp/x/{}.wav").unwrap_err();
    assert!(e.contains("absolute"), "{e}");
    let e = wav("out/{}.wav").unwrap_err();
    assert!(e.contains("leads out"), "{e}");
    let e = wav("ch{}/x.wav").unwrap_err();
    assert!(e.contains("directory varies"), "{e}");
    let e = wav("missing/{}.wav").unwrap_err();
    assert!(e.contains("missing beneath the data directory"), "{e}");
    let data = root.0.join("data");
    for (pattern, rebased) in [("rec/ch{}.wav", "rec/ch{}.wav"), ("{}.wav", "{}.wav")] {
        let text = wav(pattern).unwrap();
        assert!(
            text.contains(&format!("{:?}", data.join(rebased).display().to_string())),
            "{text}"
        );
    }
}
