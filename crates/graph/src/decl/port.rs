//! A block's ports, declared once: their names, how many there are (a count may come from a
//! parameter: `in0, in1, …`), their item type (fixed, or chosen by a parameter) and vector
//! length. [`PortDecl::resolve`] gives the concrete ports for given parameter values, so the
//! declaration can be checked against the node a block builds and documented without one.

use super::Text;
use serde::Serialize;
use std::fmt;
use toml::Value;

/// Whether a port is an input or an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// It reads a stream.
    Input,
    /// It writes a stream.
    Output,
}

/// The item type of a port.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemDecl {
    /// Always this type (`c32`, `f32`, `i16`, `u8`).
    Fixed(Text),
    /// The value of this parameter (e.g. `item`).
    Param(Text),
    /// Chosen by a parameter's value: (value, type) pairs, e.g. `format`: `cu8` → `u8`.
    Mapped {
        /// The parameter.
        param: Text,
        /// Its values and the item type each gives.
        cases: Vec<(Text, Text)>,
    },
}

/// How many items make one item of the stream (a vector).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Vlen {
    /// Scalars.
    One,
    /// Always this many.
    Fixed(usize),
    /// The value of this parameter (e.g. `vlen`, `channels`).
    Param(Text),
}

/// How many ports a numbered family has.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Count {
    /// The value of this parameter.
    Param(Text),
    /// Known only when the block is built, as these words say (e.g. "one per channel of the
    /// file").
    Built(Text),
}

/// One port, or a numbered family of ports, of a block type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortDecl {
    /// Input or output.
    pub direction: Direction,
    /// Its name; with [`PortDecl::count`], the prefix of `name0`, `name1`, ….
    pub name: Text,
    /// How many ports of this name there are, if numbered.
    pub count: Option<Count>,
    /// Its item type.
    pub item: ItemDecl,
    /// Its vector length.
    pub vlen: Vlen,
    /// The port exists only when this parameter has this value (e.g. `layout = "vectors"`).
    pub when: Option<(Text, Text)>,
}

/// A port of a block built with given parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPort {
    /// Input or output.
    pub direction: Direction,
    /// Its name.
    pub name: String,
    /// Its item type, as graph files spell it.
    pub item: String,
    /// Items per vector.
    pub vlen: usize,
}

/// Whether `item` names a message port's kind (`message`, `pdu`) rather than a stream's
/// item type.
pub fn is_message_item(item: &str) -> bool {
    matches!(item, "message" | "pdu")
}

impl ResolvedPort {
    /// Whether this is a message port.
    pub fn is_message(&self) -> bool {
        is_message_item(&self.item)
    }
}

impl Vlen {
    /// The value of parameter `name`.
    pub fn param(name: &'static str) -> Self {
        Vlen::Param(name.into())
    }
}

impl ItemDecl {
    /// The type the `item` parameter names (the convention of blocks generic over items).
    pub fn item() -> Self {
        ItemDecl::Param("item".into())
    }
    /// Always `name`.
    pub fn fixed(name: &'static str) -> Self {
        ItemDecl::Fixed(name.into())
    }
}

impl PortDecl {
    /// An input named `name` of `item`.
    pub fn input(name: impl Into<Text>, item: ItemDecl) -> Self {
        PortDecl {
            direction: Direction::Input,
            name: name.into(),
            count: None,
            item,
            vlen: Vlen::One,
            when: None,
        }
    }
    /// An output named `name` of `item`.
    pub fn output(name: impl Into<Text>, item: ItemDecl) -> Self {
        PortDecl {
            direction: Direction::Output,
            ..PortDecl::input(name, item)
        }
    }
    /// A message input named `name` taking `kind`: `"message"` (any message) or `"pdu"`.
    pub fn message_input(name: impl Into<Text>, kind: &'static str) -> Self {
        PortDecl::input(name, ItemDecl::fixed(kind))
    }
    /// A message output named `name` sending `kind`: `"message"` or `"pdu"`.
    pub fn message_output(name: impl Into<Text>, kind: &'static str) -> Self {
        PortDecl::output(name, ItemDecl::fixed(kind))
    }
    /// Numbered ports `name0 … name{n-1}`, `n` the value of `param`.
    pub fn counted(mut self, param: impl Into<Text>) -> Self {
        self.count = Some(Count::Param(param.into()));
        self
    }
    /// Numbered ports `name0 …` whose number the block learns when it is built (from a file).
    pub fn counted_when_built(mut self, words: impl Into<Text>) -> Self {
        self.count = Some(Count::Built(words.into()));
        self
    }
    /// Vectors of `vlen` items.
    pub fn vlen(mut self, vlen: Vlen) -> Self {
        self.vlen = vlen;
        self
    }
    /// Only when `param` is `value`.
    pub fn when(mut self, param: impl Into<Text>, value: impl Into<Text>) -> Self {
        self.when = Some((param.into(), value.into()));
        self
    }

    /// The concrete ports for parameter values `value(name)` (given or default); `None` when a
    /// parameter they depend on has no usable value.
    pub fn resolve(&self, value: &dyn Fn(&str) -> Option<Value>) -> Option<Vec<ResolvedPort>> {
        if let Some((param, wanted)) = &self.when {
            if value(param)?.as_str()? != wanted.as_ref() {
                return Some(Vec::new());
            }
        }
        let item = match &self.item {
            ItemDecl::Fixed(t) => t.to_string(),
            ItemDecl::Param(p) => value(p)?.as_str()?.to_string(),
            ItemDecl::Mapped { param, cases } => {
                let v = value(param)?;
                let v = v.as_str()?;
                cases.iter().find(|(k, _)| k == v)?.1.to_string()
            }
        };
        // A count is a whole number, or the length of a list (one port per element).
        let count_of = |p: &str| match value(p)? {
            Value::Array(list) => Some(list.len()),
            v => v.as_integer().and_then(|n| usize::try_from(n).ok()),
        };
        let vlen = match &self.vlen {
            Vlen::One => 1,
            Vlen::Fixed(n) => *n,
            Vlen::Param(p) => count_of(p)?,
        };
        let port = |name: String| ResolvedPort {
            direction: self.direction,
            name,
            item: item.clone(),
            vlen,
        };
        Some(match &self.count {
            None => vec![port(self.name.to_string())],
            Some(Count::Built(_)) => return None,
            Some(Count::Param(p)) => (0..count_of(p)?)
                .map(|i| port(format!("{}{i}", self.name)))
                .collect(),
        })
    }
}

impl fmt::Display for ItemDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemDecl::Fixed(t) | ItemDecl::Param(t) => f.write_str(t),
            ItemDecl::Mapped { param, cases } => {
                let all: Vec<String> = cases.iter().map(|(k, t)| format!("{t} ({k})")).collect();
                write!(f, "{} by {param}", all.join(" or "))
            }
        }
    }
}

impl fmt::Display for PortDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.count {
            None => write!(f, "{}", self.name)?,
            Some(_) => write!(f, "{0}0, {0}1, …", self.name)?,
        }
        write!(f, ": {}", self.item)?;
        match &self.vlen {
            Vlen::One => {}
            Vlen::Fixed(n) => write!(f, "[{n}]")?,
            Vlen::Param(p) => write!(f, "[{p}]")?,
        }
        match &self.count {
            Some(Count::Built(words)) => write!(f, " ({words})")?,
            Some(Count::Param(p)) => write!(f, " ({p} of them)")?,
            None => {}
        }
        if let Some((p, v)) = &self.when {
            write!(f, " (when {p} = {v})")?;
        }
        Ok(())
    }
}

/// The ports in one line, as `sluice blocks` shows them: `in: item -> out: item`.
pub fn describe(ports: &[PortDecl]) -> String {
    let side = |d: Direction| {
        ports
            .iter()
            .filter(|p| p.direction == d)
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (inputs, outputs) = (side(Direction::Input), side(Direction::Output));
    match (inputs.is_empty(), outputs.is_empty()) {
        (true, true) => "none".into(),
        (false, true) => format!("{inputs} (a sink)"),
        (true, false) => format!("{outputs} (a source)"),
        (false, false) => format!("{inputs} -> {outputs}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(v: &str) -> Option<Value> {
        match v {
            "item" => Some(Value::String("f32".into())),
            "inputs" => Some(Value::Integer(3)),
            "layout" => Some(Value::String("streams".into())),
            "format" => Some(Value::String("ci16".into())),
            _ => None,
        }
    }

    #[test]
    fn ports_resolve_from_parameters() {
        let sum = PortDecl::input("in", ItemDecl::Param("item".into())).counted("inputs");
        let names: Vec<String> = sum
            .resolve(&values)
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["in0", "in1", "in2"]);
        let vec_out = PortDecl::output("out", ItemDecl::Fixed("c32".into()))
            .vlen(Vlen::Param("inputs".into()))
            .when("layout", "vectors");
        assert_eq!(vec_out.resolve(&values).unwrap(), vec![]);
        let iq = PortDecl::input(
            "in",
            ItemDecl::Mapped {
                param: "format".into(),
                cases: vec![("cu8".into(), "u8".into()), ("ci16".into(), "i16".into())],
            },
        )
        .vlen(Vlen::Fixed(2));
        let port = &iq.resolve(&values).unwrap()[0];
        assert_eq!((port.item.as_str(), port.vlen), ("i16", 2));
        assert_eq!(iq.to_string(), "in: u8 (cu8) or i16 (ci16) by format[2]");
        assert!(PortDecl::input("x", ItemDecl::Param("nope".into()))
            .resolve(&values)
            .is_none());
    }

    #[test]
    fn ports_describe_as_one_line() {
        let item = || ItemDecl::Param("item".into());
        let ports = [
            PortDecl::input("in", item()).counted("inputs"),
            PortDecl::output("out", item()),
        ];
        assert_eq!(
            describe(&ports),
            "in0, in1, …: item (inputs of them) -> out: item"
        );
        assert_eq!(describe(&ports[1..]), "out: item (a source)");
    }
}
