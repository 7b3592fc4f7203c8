//! sluice's tag value encoding against the real peer: GNU Radio's `pmt` module (3.10) through
//! the system Python. One Python process serialises every value of a list covering every
//! `TagValue` variant and every uniform vector type; the test asserts that sluice writes the
//! same bytes, that sluice reads GNU Radio's bytes back to the same value, and that GNU Radio
//! reads sluice's bytes back to the value it built itself (`pmt.equal`) and re-serialises them
//! unchanged.
//!
//! Needs Debian's `gnuradio` package (installed by `scripts/setup.sh`); without it this test
//! fails and says so, it never skips.

use num_complex::{Complex32, Complex64};
use sluice_pmt as pmt;
use sluice_queue::{TagValue, Uniform};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

const PYTHON: &str = "/usr/bin/python3";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex from python"))
        .collect()
}

fn d(x: f64) -> String {
    format!("D('{}')", hex(&x.to_be_bytes()))
}

fn f(x: f32) -> String {
    format!("F('{}')", hex(&x.to_be_bytes()))
}

fn join<T>(items: &[T], each: impl Fn(&T) -> String) -> String {
    items.iter().map(each).collect::<Vec<_>>().join(", ")
}

/// A Python expression that builds `value` with GNU Radio's `pmt` module (helpers in
/// `PRELUDE`).
fn py(value: &TagValue) -> String {
    match value {
        TagValue::Null => "pmt.PMT_NIL".into(),
        TagValue::Bool(true) => "pmt.PMT_T".into(),
        TagValue::Bool(false) => "pmt.PMT_F".into(),
        TagValue::I64(v) => format!("pmt.from_long({v})"),
        TagValue::U64(v) => format!("pmt.from_uint64({v})"),
        TagValue::F64(v) => format!("pmt.from_double({})", d(*v)),
        TagValue::Complex(c) => format!("pmt.from_complex(complex({}, {}))", d(c.re), d(c.im)),
        TagValue::Str(s) => format!("S('{}')", hex(s.as_bytes())),
        TagValue::Pair(p) => format!("pmt.cons({}, {})", py(&p.0), py(&p.1)),
        TagValue::Tuple(items) => format!("T({})", join(items, py)),
        TagValue::Vector(items) => format!("V({})", join(items, py)),
        TagValue::Dict(entries) => {
            format!(
                "Dct({})",
                join(entries, |(k, v)| format!("({}, {})", py(k), py(v)))
            )
        }
        TagValue::Uniform(u) => {
            let elements = match u {
                Uniform::U8(v) => join(v, u8::to_string),
                Uniform::I8(v) => join(v, i8::to_string),
                Uniform::U16(v) => join(v, u16::to_string),
                Uniform::I16(v) => join(v, i16::to_string),
                Uniform::U32(v) => join(v, u32::to_string),
                Uniform::I32(v) => join(v, i32::to_string),
                Uniform::U64(v) => join(v, u64::to_string),
                Uniform::I64(v) => join(v, i64::to_string),
                Uniform::F32(v) => join(v, |x| f(*x)),
                Uniform::F64(v) => join(v, |x| d(*x)),
                Uniform::C32(v) => join(v, |c| format!("complex({}, {})", f(c.re), f(c.im))),
                Uniform::C64(v) => join(v, |c| format!("complex({}, {})", d(c.re), d(c.im))),
            };
            format!(
                "pmt.init_{}vector({}, [{elements}])",
                u.type_name(),
                u.len()
            )
        }
    }
}

const PRELUDE: &str = r#"
import struct, sys
import pmt
def D(h): return struct.unpack('>d', bytes.fromhex(h))[0]
def F(h): return struct.unpack('>f', bytes.fromhex(h))[0]
def S(h): return pmt.intern(bytes.fromhex(h).decode('utf-8'))
def V(*xs):
    v = pmt.make_vector(len(xs), pmt.PMT_NIL)
    for i, x in enumerate(xs):
        pmt.vector_set(v, i, x)
    return v
def T(*xs): return pmt.to_tuple(V(*xs)) if xs else pmt.make_tuple()
def Dct(*entries):
    r = pmt.make_dict()
    for k, v in reversed(entries):
        r = pmt.dcons(pmt.cons(k, v), r)
    return r
def case(value, ours):
    theirs = pmt.serialize_str(value)
    try:
        back = pmt.deserialize_str(bytes.fromhex(ours))
    except Exception as e:
        print(theirs.hex(), 'refused:' + str(e).replace('\n', ' '))
        return
    same = pmt.equal(back, value) and pmt.serialize_str(back) == bytes.fromhex(ours)
    print(theirs.hex(), 'same' if same else 'differs:' + str(back).replace('\n', ' '))
"#;

/// Values covering every variant, both integer widths, every uniform vector type (empty and
/// not), nesting of each container in the others, and text beyond ASCII.
fn values() -> Vec<TagValue> {
    vec![
        TagValue::Null,
        TagValue::Bool(true),
        TagValue::Bool(false),
        TagValue::I64(0),
        TagValue::I64(-1),
        TagValue::I64(i64::from(i32::MAX)),
        TagValue::I64(i64::from(i32::MIN)),
        TagValue::I64(i64::from(i32::MAX) + 1),
        TagValue::I64(i64::from(i32::MIN) - 1),
        TagValue::I64(i64::MIN),
        TagValue::I64(i64::MAX),
        TagValue::U64(0),
        TagValue::U64(u64::MAX),
        TagValue::F64(1.5),
        TagValue::F64(-0.0),
        TagValue::F64(f64::INFINITY),
        TagValue::F64(1e-310),
        TagValue::F64(100e6),
        TagValue::Complex(Complex64::new(1.0, -2.5)),
        TagValue::from(""),
        TagValue::from("rx_freq"),
        TagValue::from("grüße ✓"),
        TagValue::pair("key", 1.5),
        TagValue::pair(TagValue::Null, TagValue::Null),
        TagValue::list([1i64.into(), "two".into(), TagValue::rx_time(3, 0.5)]),
        TagValue::rx_time(1_700_000_000, 0.123_456_789),
        TagValue::Tuple(vec![]),
        TagValue::Tuple((0..12i64).map(TagValue::from).collect()),
        TagValue::Vector(vec![]),
        TagValue::Vector(vec![
            TagValue::from(1u64),
            TagValue::Vector(vec![TagValue::Bool(true)]),
            TagValue::dict([("x", 1i64)]),
        ]),
        TagValue::Dict(vec![]),
        TagValue::dict([("a", 1i64)]),
        TagValue::Dict(vec![
            (TagValue::from("rx_time"), TagValue::rx_time(5, 0.25)),
            (TagValue::from("rx_rate"), TagValue::F64(1e6)),
            (TagValue::I64(7), TagValue::pair(1i64, 2i64)),
            (
                TagValue::from("inner"),
                TagValue::dict([("deep", vec![1u8, 2, 3])]),
            ),
        ]),
        TagValue::pair("tail", TagValue::dict([("k", 1i64)])),
        vec![0u8, 1, 255].into(),
        Vec::<u8>::new().into(),
        vec![i8::MIN, -1, i8::MAX].into(),
        Vec::<i8>::new().into(),
        vec![0u16, u16::MAX].into(),
        Vec::<u16>::new().into(),
        vec![i16::MIN, i16::MAX].into(),
        Vec::<i16>::new().into(),
        vec![0u32, u32::MAX].into(),
        Vec::<u32>::new().into(),
        vec![i32::MIN, i32::MAX].into(),
        Vec::<i32>::new().into(),
        vec![0u64, u64::MAX].into(),
        Vec::<u64>::new().into(),
        vec![i64::MIN, i64::MAX].into(),
        Vec::<i64>::new().into(),
        vec![1.5f32, -0.0, f32::MAX].into(),
        Vec::<f32>::new().into(),
        vec![1.5f64, -0.0, f64::MIN_POSITIVE].into(),
        Vec::<f64>::new().into(),
        vec![Complex32::new(1.0, 2.0), Complex32::new(-3.0, 0.5)].into(),
        Vec::<Complex32>::new().into(),
        vec![Complex64::new(1.0, 2.0), Complex64::new(-3.0, 0.5)].into(),
        Vec::<Complex64>::new().into(),
    ]
}

/// Values built with GNU Radio's own API the way its blocks do it, and the `TagValue` each
/// must read as.
fn gnu_radio_built() -> Vec<(&'static str, TagValue)> {
    vec![
        (
            "pmt.make_tuple(pmt.from_uint64(1700000000), pmt.from_double(0.5))",
            TagValue::rx_time(1_700_000_000, 0.5),
        ),
        (
            // dict_add puts a new key in front.
            "pmt.dict_add(pmt.dict_add(pmt.make_dict(), pmt.intern('a'), pmt.from_long(1)), \
             pmt.intern('b'), pmt.from_double(2.0))",
            TagValue::Dict(vec![
                (TagValue::from("b"), TagValue::F64(2.0)),
                (TagValue::from("a"), TagValue::I64(1)),
            ]),
        ),
        (
            "pmt.list3(pmt.from_long(1), pmt.string_to_symbol('x'), pmt.PMT_NIL)",
            TagValue::list([1i64.into(), "x".into(), TagValue::Null]),
        ),
        ("pmt.to_pmt(2.5)", TagValue::F64(2.5)),
        ("pmt.to_pmt(5)", TagValue::I64(5)),
        ("pmt.to_pmt(True)", TagValue::Bool(true)),
        ("pmt.to_pmt('sob')", TagValue::from("sob")),
        (
            "pmt.to_pmt(1+2j)",
            TagValue::Complex(Complex64::new(1.0, 2.0)),
        ),
        (
            "pmt.init_u8vector(3, list(b'abc'))",
            TagValue::bytes(b"abc"),
        ),
    ]
}

/// Runs `script` in the system Python with GNU Radio's `pmt` module; its output lines.
fn run_python(script: &str) -> Vec<String> {
    let probe = Command::new(PYTHON)
        .args(["-c", "import pmt"])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {PYTHON} ({e}): GNU Radio's Python module `pmt` comes with the \
                 Debian package `gnuradio` (apt-get install gnuradio; scripts/setup.sh installs it)"
            )
        });
    assert!(
        probe.status.success(),
        "{PYTHON} cannot import GNU Radio's `pmt` module ({}): install the Debian package \
         `gnuradio` (scripts/setup.sh installs it)",
        String::from_utf8_lossy(&probe.stderr).trim()
    );
    let mut child = Command::new(PYTHON)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python");
    child
        .stdin
        .take()
        .expect("python stdin")
        .write_all(script.as_bytes())
        .expect("write the script to python");
    let out = child.wait_with_output().expect("python output");
    assert!(
        out.status.success(),
        "the GNU Radio pmt script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("python prints hex")
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn sluice_and_gnu_radio_write_and_read_the_same_pmt_bytes() {
    let values = values();
    let mut script = PRELUDE.to_owned();
    let mut ours = Vec::new();
    for value in &values {
        let bytes = pmt::to_bytes(value).expect("encode");
        writeln!(script, "case({}, '{}')", py(value), hex(&bytes)).unwrap();
        ours.push(bytes);
    }
    let built = gnu_radio_built();
    for (expr, value) in &built {
        let bytes = pmt::to_bytes(value).expect("encode");
        writeln!(script, "case({expr}, '{}')", hex(&bytes)).unwrap();
        ours.push(bytes);
    }
    let lines = run_python(&script);
    let expected: Vec<(String, TagValue)> = values
        .iter()
        .map(|v| (py(v), v.clone()))
        .chain(built.into_iter().map(|(e, v)| (e.to_owned(), v)))
        .collect();
    assert_eq!(lines.len(), expected.len(), "python printed: {lines:?}");
    for (((expr, value), bytes), line) in expected.iter().zip(&ours).zip(&lines) {
        let (theirs, verdict) = line.split_once(' ').expect("hex and verdict");
        assert_eq!(
            hex(bytes),
            theirs,
            "sluice's bytes for {value:?} differ from GNU Radio's for {expr}"
        );
        if *value == TagValue::Tuple(vec![]) {
            // GNU Radio writes the empty tuple but its own reader refuses it (`to_tuple` of
            // an empty list throws): a GNU Radio limitation, pinned here so we notice a fix.
            assert!(
                verdict.starts_with("refused:"),
                "GNU Radio now reads the empty tuple ({verdict}): update the pmt module docs"
            );
        } else {
            assert_eq!(
                verdict, "same",
                "GNU Radio reads sluice's bytes for {value:?} as something else"
            );
        }
        let theirs = unhex(theirs);
        let (back, used) = pmt::decode(&theirs).expect("decode GNU Radio's bytes");
        assert_eq!(used, theirs.len(), "{expr}");
        // The empty dict is PMT_NIL in GNU Radio, so it reads back as Null.
        let want = match value {
            TagValue::Dict(entries) if entries.is_empty() => TagValue::Null,
            other => other.clone(),
        };
        assert_eq!(
            back, want,
            "sluice reads GNU Radio's {expr} as something else"
        );
    }
}
