//! Vector source and sink: streams from and into memory, mainly for tests and examples.

use crate::graph_blocks::param_item;
use num_complex::Complex32;
use sluice_graph::{BlockType, Family, ItemDecl, Param, ParamError, Params, Rate};
use sluice_runtime::{metadata, Item, Node, NodeError, Ports, Tag, TagValue, Work, WorkIo};
use std::sync::{Arc, Mutex, PoisonError};

/// Streams the items of a vector (optionally repeated), with optional tags, then ends.
#[derive(Debug)]
pub struct VectorSource<T> {
    data: Vec<T>,
    tags: Vec<Tag>,
    repeat: u64,
    /// Items emitted so far.
    sent: u64,
    /// The most items handed out per `work` call (to exercise chunking in tests).
    max_chunk: usize,
    /// Tags mark items of `data` and come again with every repetition (else they are marks
    /// on the stream, at their absolute index).
    tags_per_pass: bool,
}

impl<T: Item> VectorSource<T> {
    /// Streams `data` once.
    pub fn new(data: Vec<T>) -> Self {
        VectorSource {
            data,
            tags: Vec::new(),
            repeat: 1,
            sent: 0,
            max_chunk: usize::MAX,
            tags_per_pass: false,
        }
    }

    /// Streams `data` `times` times in a row.
    pub fn repeat(mut self, times: u64) -> Self {
        self.repeat = times;
        self
    }

    /// Attaches `key` = `value` to item `index` of the stream.
    pub fn with_tag(mut self, index: u64, key: &str, value: TagValue) -> Self {
        self.tags.push(Tag::new(index, key, value));
        self
    }

    /// Attaches `tags` as given (with their sources) to the stream.
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = Tag>) -> Self {
        self.tags.extend(tags);
        self
    }

    /// Repeats the tags with the data: a tag at index `i < data.len()` marks item `i` of every
    /// pass (as GNU Radio's `vector_source` repeats its tags).
    pub fn tags_every_pass(mut self) -> Self {
        self.tags_per_pass = true;
        self
    }

    /// Hands out at most `items` per work call.
    pub fn max_chunk(mut self, items: usize) -> Self {
        self.max_chunk = items.max(1);
        self
    }

    fn total(&self) -> u64 {
        (self.data.len() as u64).saturating_mul(self.repeat)
    }
}

impl<T: Item> Node for VectorSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let total = self.total();
        if self.sent >= total {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<T>(0)?;
        let Some(space) = out.reserve(1)? else {
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        // As many passes of the data as fit (GNU Radio's repeating vector_source fills its
        // whole output too): a short vector repeated must not cost a work call per pass.
        let len = self.data.len() as u64;
        let start = self.sent;
        let n = space
            .len()
            .min(self.max_chunk)
            .min((total - start) as usize);
        let mut done = 0;
        while done < n {
            let offset = ((start + done as u64) % len) as usize;
            let k = (n - done).min(self.data.len() - offset);
            space[done..done + k].copy_from_slice(&self.data[offset..offset + k]);
            done += k;
        }
        let end = start + n as u64;
        if self.tags_per_pass {
            // Each pass that the chunk overlaps, in order.
            let mut pass = start - start % len;
            while pass < end {
                for tag in self
                    .tags
                    .iter()
                    .filter(|t| (start..end).contains(&(pass + t.index)))
                {
                    out.push_tag(Tag {
                        index: pass + tag.index,
                        ..tag.clone()
                    });
                }
                pass += len;
            }
        } else {
            for tag in self
                .tags
                .iter()
                .filter(|t| t.index >= start && t.index < end)
            {
                out.push_tag(tag.clone());
            }
        }
        out.commit(n);
        self.sent = end;
        Ok(if self.sent >= total {
            Work::Done
        } else {
            Work::Progress
        })
    }
}

/// What a [`VectorSink`] collected; readable after (or during) the run.
#[derive(Debug, Clone)]
pub struct VectorSinkData<T> {
    items: Arc<Mutex<Vec<T>>>,
    tags: Arc<Mutex<Vec<Tag>>>,
}

impl<T: Clone> VectorSinkData<T> {
    /// A copy of every item received so far.
    pub fn items(&self) -> Vec<T> {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every tag received so far, with absolute item indices.
    pub fn tags(&self) -> Vec<Tag> {
        self.tags
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Collects every item (and tag) it receives into memory.
#[derive(Debug)]
pub struct VectorSink<T> {
    data: VectorSinkData<T>,
    max_chunk: usize,
}

impl<T: Item> VectorSink<T> {
    /// A sink and the handle to read what it collects.
    pub fn new() -> (Self, VectorSinkData<T>) {
        let data = VectorSinkData {
            items: Arc::new(Mutex::new(Vec::new())),
            tags: Arc::new(Mutex::new(Vec::new())),
        };
        (
            VectorSink {
                data: data.clone(),
                max_chunk: usize::MAX,
            },
            data,
        )
    }

    /// Consumes at most `items` per work call (to exercise chunking in tests).
    pub fn max_chunk(mut self, items: usize) -> Self {
        self.max_chunk = items.max(1);
        self
    }
}

impl<T: Item> Node for VectorSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let input = io.inputs.get::<T>(0)?;
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            return Ok(Work::Done);
        }
        let n = window.len().min(self.max_chunk);
        self.data
            .items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(&window[..n]);
        input.consume(n);
        let mut tags = self
            .data
            .tags
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        input.take_tags(input.items_read(), &mut tags);
        Ok(Work::Progress)
    }

    /// A sink keeps the tags it receives instead of passing them on.
    fn tag_policy(&self) -> sluice_runtime::TagPolicy {
        sluice_runtime::TagPolicy::Drop
    }
}

/// The `vector_source` block: literal values from the graph file, once or endlessly, with tags
/// on chosen items (GNU Radio's `vector_source`).
pub fn vector_source() -> BlockType {
    BlockType::new("vector_source", Family::Sources, "The values written in the graph file, once or repeated endlessly, with tags on chosen items.")
        .gnuradio(&["vector_source"])
        .output("out", ItemDecl::item())
        .param(param_item())
        .param(Param::numbers("values", "the items (the real parts, for c32)"))
        .param(Param::numbers("imag", "c32: the imaginary parts, one per value").derived("zeros"))
        .param(Param::bool("repeat", "start over at the end, endlessly (tags come again with every pass)").default(false))
        .param(Param::table("tags", "tags by item index: { 0 = { burst = true }, 100 = { gain = 2.5 } } (numbers, whole numbers, text, true/false)").derived("none"))
        .param(Param::number("sample_rate", "the stream's rate, tagged (rx_rate) on the first item").unit("Hz").derived("not known"))
        .rate(Rate::param("sample_rate"))
        .example(r#"item = "f32", values = [0.0, 0.5, 1.0, 0.5], repeat = true, tags = { 0 = { period = true } }"#)
        .build(|p| {
            let values = p.opt_f64_list("values")?.unwrap_or_default();
            if values.is_empty() {
                return Err(ParamError::new("values", "is empty (give at least one value)"));
            }
            let mut tags = literal_tags(p)?;
            if let Some(hz) = p.opt_f64("sample_rate")? {
                tags.push(Tag::new(0, metadata::SAMPLE_RATE, metadata::sample_rate(hz)));
            }
            if tags.iter().any(|t| t.index >= values.len() as u64) {
                return Err(ParamError::new("tags", format!("an index is past the last value (item {})", values.len() - 1)));
            }
            let repeat = if p.bool_or("repeat", false)? { u64::MAX } else { 1 };
            let item = p.str("item")?;
            let whole = |kind: &str, lo: f64, hi: f64| {
                values.iter().enumerate().map(|(i, &v)| {
                    if v.fract() == 0.0 && (lo..=hi).contains(&v) {
                        Ok(v)
                    } else {
                        Err(ParamError::new("values", format!("element {i} must be a whole number from {lo} to {hi} for {kind}, not {v}")))
                    }
                }).collect::<Result<Vec<f64>, _>>()
            };
            fn node<T: Item>(data: Vec<T>, tags: Vec<Tag>, repeat: u64) -> Box<dyn Node> {
                Box::new(VectorSource::new(data).repeat(repeat).with_tags(tags).tags_every_pass())
            }
            Ok(match item.as_str() {
                "f32" => node(values.iter().map(|&v| v as f32).collect(), tags, repeat),
                "i16" => node(whole("i16", -32768.0, 32767.0)?.iter().map(|&v| v as i16).collect(), tags, repeat),
                "u8" => node(whole("u8", 0.0, 255.0)?.iter().map(|&v| v as u8).collect(), tags, repeat),
                _ => {
                    let imag = p.opt_f64_list("imag")?.unwrap_or_else(|| vec![0.0; values.len()]);
                    if imag.len() != values.len() {
                        return Err(ParamError::new("imag", format!("has {} parts for {} values", imag.len(), values.len())));
                    }
                    let data = values.iter().zip(&imag).map(|(&re, &im)| Complex32::new(re as f32, im as f32)).collect();
                    node::<Complex32>(data, tags, repeat)
                }
            })
        })
}

/// The `tags` table of a `vector_source`: `{ INDEX = { KEY = VALUE, … }, … }`.
fn literal_tags(p: &mut Params) -> Result<Vec<Tag>, ParamError> {
    let Some(toml::Value::Table(table)) = p.value("tags").cloned() else {
        return Ok(Vec::new());
    };
    let mut tags = Vec::new();
    for (index, keys) in &table {
        let at: u64 = index.parse().map_err(|_| {
            ParamError::new(
                "tags",
                format!("'{index}' must be an item index (a whole number)"),
            )
        })?;
        let toml::Value::Table(keys) = keys else {
            return Err(ParamError::new(
                "tags",
                format!("item {at}: must be a table of key = value"),
            ));
        };
        for (key, value) in keys {
            let value = match value {
                toml::Value::Float(x) => TagValue::F64(*x),
                toml::Value::Integer(i) => TagValue::I64(*i),
                toml::Value::Boolean(b) => TagValue::Bool(*b),
                toml::Value::String(s) => TagValue::Str(s.as_str().into()),
                other => {
                    return Err(ParamError::new(
                        "tags",
                        format!("item {at}, key '{key}': a tag is a number, whole number, text or true/false, not {}", other.type_str()),
                    ))
                }
            };
            tags.push(Tag::new(at, key, value));
        }
    }
    tags.sort_by_key(|t| t.index);
    Ok(tags)
}

#[cfg(test)]
mod declared_tests {
    use super::*;
    use sluice_runtime::Graph;

    fn run(params: &str) -> Result<(Vec<f32>, Vec<Tag>), String> {
        let doc: toml::Table = toml::from_str(&format!("p = {{ {params} }}")).unwrap();
        let Some(toml::Value::Table(t)) = doc.get("p") else {
            panic!()
        };
        let mut p = Params::from_values(t.clone());
        let block = vector_source();
        if let Some(e) = block.check(&p).into_iter().next() {
            return Err(format!("{}: {}", e.param, e.message));
        }
        let node = block
            .instantiate(&mut p)
            .map_err(|e| format!("{}: {}", e.param, e.message))?;
        let mut g = Graph::new();
        let src = g.add_boxed("src", node).unwrap();
        let head = g.add("head", crate::blocks::Head::<f32>::new(10)).unwrap();
        let (sink, data) = VectorSink::<f32>::new();
        let s = g.add("snk", sink).unwrap();
        g.connect(src, "out", head, "in").unwrap();
        g.connect(head, "out", s, "in").unwrap();
        g.run_stepped().unwrap();
        Ok((data.items(), data.tags()))
    }

    #[test]
    fn values_repeat_with_their_tags() {
        let (items, tags) = run(
            r#"item = "f32", values = [1, 2.5, -3], repeat = true, tags = { 0 = { start = true }, 2 = { gain = 2 } }, sample_rate = 8000"#,
        )
        .unwrap();
        assert_eq!(items, [1.0, 2.5, -3.0, 1.0, 2.5, -3.0, 1.0, 2.5, -3.0, 1.0]);
        let marks: Vec<(u64, &str)> = tags.iter().map(|t| (t.index, &*t.key)).collect();
        assert_eq!(
            marks,
            [
                (0, "start"),
                (0, "rx_rate"),
                (2, "gain"),
                (3, "start"),
                (3, "rx_rate"),
                (5, "gain"),
                (6, "start"),
                (6, "rx_rate"),
                (8, "gain"),
                (9, "start"),
                (9, "rx_rate"),
            ]
        );
        assert_eq!(tags[2].value, TagValue::I64(2));
    }

    #[test]
    fn many_passes_per_call_give_what_one_pass_per_call_gives() {
        let collect = |max_chunk: usize| {
            let src = VectorSource::new(vec![1u8, 2, 3])
                .with_tag(0, "first", TagValue::Bool(true))
                .with_tag(2, "last", TagValue::Bool(true))
                .tags_every_pass()
                .repeat(5)
                .max_chunk(max_chunk);
            let mut g = Graph::new();
            let s = g.add("src", src).unwrap();
            let (sink, data) = VectorSink::<u8>::new();
            let k = g.add("snk", sink).unwrap();
            g.connect(s, "out", k, "in").unwrap();
            g.run_stepped().unwrap();
            let tags: Vec<(u64, String)> = data
                .tags()
                .iter()
                .map(|t| (t.index, t.key.to_string()))
                .collect();
            (data.items(), tags)
        };
        let whole = collect(usize::MAX);
        assert_eq!(whole.0, [1, 2, 3].repeat(5));
        assert_eq!(whole.1.len(), 10);
        for chunk in [1, 2, 3, 4, 7] {
            assert_eq!(collect(chunk), whole, "max_chunk {chunk}");
        }
    }

    #[test]
    fn mistakes_name_the_parameter() {
        assert_eq!(
            run(r#"item = "u8", values = [1, 300]"#).unwrap_err(),
            "values: element 1 must be a whole number from 0 to 255 for u8, not 300"
        );
        assert_eq!(
            run(r#"item = "f32", values = [1], tags = { 5 = { x = 1 } }"#).unwrap_err(),
            "tags: an index is past the last value (item 0)"
        );
        assert_eq!(
            run(r#"item = "f32", values = [1], tags = { x = { y = 1 } }"#).unwrap_err(),
            "tags: 'x' must be an item index (a whole number)"
        );
    }
}
