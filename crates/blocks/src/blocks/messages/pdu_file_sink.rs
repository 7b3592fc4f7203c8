//! `pdu_file_sink`: one JSON line per PDU (its metadata, where its samples are, how many, of
//! what type) beside a raw file of the samples, appended PDU after PDU.

use sluice_runtime::{
    Inbox, MessageIn, MessageKind, Node, NodeError, Pdu, Ports, Recv, TagValue, Uniform, Work,
    WorkIo,
};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes each PDU it receives as one line of JSON in `path` —
/// `{"pdu": k, "type": "c32", "items": n, "offset": bytes, "meta": {…}}` — and its samples,
/// little-endian, at byte `offset` of `data_path`. Metadata keys that are symbols become
/// object keys; values become JSON (numbers, text, lists; complex numbers `[re, im]`).
pub struct PduFileSink {
    path: PathBuf,
    data_path: PathBuf,
    files: Option<(BufWriter<File>, BufWriter<File>)>,
    written: u64,
    offset: u64,
    inp: MessageIn,
    ports: Ports,
}

impl PduFileSink {
    /// Records in `path`, samples in `data_path`; both are created when the node starts.
    pub fn new(path: &Path, data_path: &Path) -> Self {
        let mut ports = Ports::new();
        let inp = ports.add_message_input("pdus", MessageKind::Pdu, Inbox::DEFAULT);
        PduFileSink {
            path: path.to_path_buf(),
            data_path: data_path.to_path_buf(),
            files: None,
            written: 0,
            offset: 0,
            inp,
            ports,
        }
    }
}

fn create(path: &Path) -> Result<BufWriter<File>, NodeError> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|e| NodeError::msg(format!("cannot create {}: {e}", path.display())))
}

impl Node for PduFileSink {
    fn ports(&self) -> Ports {
        self.ports.clone()
    }

    fn init(&mut self) -> Result<(), NodeError> {
        self.files = Some((create(&self.path)?, create(&self.data_path)?));
        Ok(())
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.message(self.inp.index())?;
        let Some((records, data)) = &mut self.files else {
            return Err(NodeError::msg(
                "pdu_file_sink: files not open (init did not run)",
            ));
        };
        let failed = |path: &Path, e: std::io::Error| {
            NodeError::msg(format!("cannot write {}: {e}", path.display()))
        };
        loop {
            match input.recv()? {
                Recv::Message(msg) => {
                    let pdu = Pdu::from_message(&msg).ok_or_else(|| {
                        NodeError::msg(format!(
                            "expected a PDU, got {}",
                            sluice_runtime::message::message_text(&msg)
                        ))
                    })?;
                    let bytes = uniform_bytes(&pdu.data);
                    data.write_all(&bytes)
                        .map_err(|e| failed(&self.data_path, e))?;
                    let meta: serde_json::Map<String, serde_json::Value> = pdu
                        .meta
                        .iter()
                        .map(|(k, v)| (key_text(k), json(v)))
                        .collect();
                    let record = serde_json::json!({
                        "pdu": self.written,
                        "type": pdu.data.type_name(),
                        "items": pdu.data.len(),
                        "offset": self.offset,
                        "meta": meta,
                    });
                    writeln!(records, "{record}").map_err(|e| failed(&self.path, e))?;
                    self.written += 1;
                    self.offset += bytes.len() as u64;
                }
                Recv::Empty => return Ok(self.inp.need()),
                Recv::Ended => {
                    records.flush().map_err(|e| failed(&self.path, e))?;
                    data.flush().map_err(|e| failed(&self.data_path, e))?;
                    return Ok(Work::Done);
                }
            }
        }
    }
}

fn key_text(k: &TagValue) -> String {
    match k {
        TagValue::Str(s) => s.to_string(),
        other => sluice_runtime::message::message_text(other),
    }
}

/// A message value as JSON.
pub fn json(v: &TagValue) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        TagValue::Null => J::Null,
        TagValue::Bool(b) => J::Bool(*b),
        TagValue::I64(i) => J::from(*i),
        TagValue::U64(u) => J::from(*u),
        TagValue::F64(x) => J::from(*x),
        TagValue::Complex(c) => J::from(vec![c.re, c.im]),
        TagValue::Str(s) => J::from(s.to_string()),
        TagValue::Pair(p) => J::from(vec![json(&p.0), json(&p.1)]),
        TagValue::Tuple(items) | TagValue::Vector(items) => {
            J::from(items.iter().map(json).collect::<Vec<_>>())
        }
        TagValue::Dict(entries) => J::Object(
            entries
                .iter()
                .map(|(k, v)| (key_text(k), json(v)))
                .collect(),
        ),
        TagValue::Uniform(u) => J::from(sluice_runtime::message::message_text(&TagValue::Uniform(
            u.clone(),
        ))),
    }
}

/// The elements of `u`, little-endian.
fn uniform_bytes(u: &Uniform) -> Vec<u8> {
    fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    match u {
        Uniform::U8(v) => v.to_vec(),
        Uniform::I8(v) => le(v, i8::to_le_bytes),
        Uniform::U16(v) => le(v, u16::to_le_bytes),
        Uniform::I16(v) => le(v, i16::to_le_bytes),
        Uniform::U32(v) => le(v, u32::to_le_bytes),
        Uniform::I32(v) => le(v, i32::to_le_bytes),
        Uniform::U64(v) => le(v, u64::to_le_bytes),
        Uniform::I64(v) => le(v, i64::to_le_bytes),
        Uniform::F32(v) => le(v, f32::to_le_bytes),
        Uniform::F64(v) => le(v, f64::to_le_bytes),
        Uniform::C32(v) => v
            .iter()
            .flat_map(|c| [c.re.to_le_bytes(), c.im.to_le_bytes()].concat())
            .collect(),
        Uniform::C64(v) => v
            .iter()
            .flat_map(|c| [c.re.to_le_bytes(), c.im.to_le_bytes()].concat())
            .collect(),
    }
}
