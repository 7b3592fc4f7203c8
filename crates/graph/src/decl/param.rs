//! A block's parameters, declared once: name, kind, default, range, unit, help, whether it can
//! change while the graph runs and whether it names a file. The loader validates a node's
//! parameters against these before the block sees them; `sluice blocks` documents them.

use super::Text;
use serde::Serialize;
use toml::Value;

/// What values a parameter takes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "values")]
pub enum ParamKind {
    /// A number (an integer is accepted too).
    Number,
    /// A whole number.
    Integer,
    /// Text.
    Text,
    /// `true` or `false`.
    Bool,
    /// A list of numbers.
    Numbers,
    /// A list of whole numbers.
    Integers,
    /// A list of text.
    Texts,
    /// One of these words.
    Choice(Vec<Text>),
    /// A table (`{ key = value, … }`), checked by the block.
    Table,
}

impl ParamKind {
    /// The kind in words, for errors and `sluice blocks`.
    pub fn describe(&self) -> String {
        match self {
            ParamKind::Number => "a number".into(),
            ParamKind::Integer => "a whole number".into(),
            ParamKind::Text => "a string".into(),
            ParamKind::Bool => "true or false".into(),
            ParamKind::Numbers => "a list of numbers".into(),
            ParamKind::Integers => "a list of whole numbers".into(),
            ParamKind::Texts => "a list of strings".into(),
            ParamKind::Choice(words) => format!("one of {}", words.join(", ")),
            ParamKind::Table => "a table".into(),
        }
    }
}

/// What a node that does not give the parameter gets.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Default {
    /// The node must give it.
    Required,
    /// This value.
    Value(Value),
    /// Nothing: the block decides from the other parameters or the stream; the words say what
    /// (`"the stream's rate"`, `"endless"`).
    Derived(Text),
}

/// Whether a block reads or writes the file a parameter names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileAccess {
    /// The block reads the file (a source).
    Read,
    /// The block writes the file (a sink): loading refuses a graph in which it would write a
    /// file that another node reads or writes.
    Write,
    /// The block writes several files named by a pattern, its first `{}` replaced by each
    /// file's label ([`pattern_file`]): confined on a cluster's workers as a written file is
    /// (its directory checked and rebased, its file name kept as the pattern); when the
    /// declaration says where the labels come from ([`ParamDecl::labelled_by`]), loading
    /// compares each labelled file with the other nodes' files (and the node's own).
    #[serde(rename = "write_pattern")]
    WritePattern,
}

/// The file a file name pattern names for `label`: its first `{}` replaced by the label,
/// zero-padded to three digits (`ch{}.wav`, 7 → `ch007.wav`).
pub fn pattern_file(pattern: &str, label: u64) -> String {
    pattern.replacen("{}", &format!("{label:03}"), 1)
}

/// The label under which `pattern` names the file name `name`, if it names it (the inverse of
/// [`pattern_file`], for file names).
pub fn pattern_label(pattern: &str, name: &str) -> Option<u64> {
    let (before, after) = pattern.split_once("{}")?;
    let digits = name.strip_prefix(before)?.strip_suffix(after)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let label: u64 = digits.parse().ok()?;
    (format!("{label:03}") == digits).then_some(label)
}

/// Where a file name pattern's labels come from: a parameter that lists them, or, when the
/// node leaves the list out, one that says how many files there are (labelled 0, 1, …).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternLabels {
    /// The parameter listing the labels (whole numbers).
    pub list: Text,
    /// The parameter giving how many files there are when the list is left out.
    pub count: Text,
}

/// One parameter of a block type. Built with [`Param`]'s constructors and the methods below.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamDecl {
    /// Its name in the graph file.
    pub name: Text,
    /// The values it takes.
    #[serde(flatten)]
    pub kind: ParamKind,
    /// What a node that leaves it out gets.
    pub default: Default,
    /// The smallest value allowed (numbers, whole numbers and their lists).
    pub min: Option<f64>,
    /// The largest value allowed.
    pub max: Option<f64>,
    /// Its unit (`Hz`, `dB`, `s`, `samples`), if it has one.
    pub unit: Option<Text>,
    /// One line of help.
    pub help: Text,
    /// Whether it can also be changed while the graph runs (`sluice ctl … set`).
    pub settable: bool,
    /// Whether it names a file the block reads or writes.
    pub file: Option<FileAccess>,
    /// A file name pattern's labels ([`ParamDecl::labelled_by`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<PatternLabels>,
    /// Whether it is the rate of the block's input stream: left out, the loader gives the
    /// stream's rate; given, it must agree with the stream's (see [`super::rate`]).
    pub follows_stream: bool,
}

/// Constructors of [`ParamDecl`], one per [`ParamKind`]: `Param::number("gain", "the factor")`.
pub struct Param;

impl Param {
    fn of(name: impl Into<Text>, kind: ParamKind, help: impl Into<Text>) -> ParamDecl {
        ParamDecl {
            name: name.into(),
            kind,
            default: Default::Required,
            min: None,
            max: None,
            unit: None,
            help: help.into(),
            settable: false,
            file: None,
            labels: None,
            follows_stream: false,
        }
    }
    /// A number.
    pub fn number(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Number, help)
    }
    /// A whole number, at least 0 unless [`ParamDecl::range`] says otherwise.
    pub fn integer(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Integer, help).min(0.0)
    }
    /// Text.
    pub fn text(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Text, help)
    }
    /// A flag.
    pub fn bool(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Bool, help)
    }
    /// A list of numbers.
    pub fn numbers(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Numbers, help)
    }
    /// A list of whole numbers (at least 0 unless a range says otherwise).
    pub fn integers(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Integers, help).min(0.0)
    }
    /// A list of strings.
    pub fn texts(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Texts, help)
    }
    /// A table the block checks itself.
    pub fn table(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        Param::of(name, ParamKind::Table, help)
    }
    /// One of `words`.
    pub fn choice(
        name: impl Into<Text>,
        words: &[&'static str],
        help: impl Into<Text>,
    ) -> ParamDecl {
        let words = words.iter().map(|w| Text::Borrowed(*w)).collect();
        Param::of(name, ParamKind::Choice(words), help)
    }
    /// A file the block reads, named by text.
    pub fn reads(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        ParamDecl {
            file: Some(FileAccess::Read),
            ..Param::text(name, help)
        }
    }
    /// A file the block writes, named by text.
    pub fn writes(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        ParamDecl {
            file: Some(FileAccess::Write),
            ..Param::text(name, help)
        }
    }
    /// Files the block writes, named by a pattern whose first `{}` each file's label replaces
    /// ([`pattern_file`]); say where the labels come from with [`ParamDecl::labelled_by`].
    pub fn writes_pattern(name: impl Into<Text>, help: impl Into<Text>) -> ParamDecl {
        ParamDecl {
            file: Some(FileAccess::WritePattern),
            ..Param::text(name, help)
        }
    }
}

impl ParamDecl {
    /// Its default value.
    pub fn default(mut self, value: impl Into<Value>) -> Self {
        self.default = Default::Value(value.into());
        self
    }
    /// No default value: the block derives it, as `words` say.
    pub fn derived(mut self, words: impl Into<Text>) -> Self {
        self.default = Default::Derived(words.into());
        self
    }
    /// The smallest value allowed.
    pub fn min(mut self, min: f64) -> Self {
        self.min = Some(min);
        self
    }
    /// The largest value allowed.
    pub fn max(mut self, max: f64) -> Self {
        self.max = Some(max);
        self
    }
    /// The values allowed, both ends included.
    pub fn range(self, min: f64, max: f64) -> Self {
        self.min(min).max(max)
    }
    /// Its unit.
    pub fn unit(mut self, unit: impl Into<Text>) -> Self {
        self.unit = Some(unit.into());
        self
    }
    /// A file name pattern's labels are the whole numbers parameter `list` gives or, when the
    /// node leaves it out, 0 to `count` − 1 (parameter `count`, or its default): loading then
    /// compares each file the pattern names with the graph's other files.
    pub fn labelled_by(mut self, list: impl Into<Text>, count: impl Into<Text>) -> Self {
        self.labels = Some(PatternLabels {
            list: list.into(),
            count: count.into(),
        });
        self
    }

    /// It can also be changed while the graph runs.
    pub fn settable(mut self) -> Self {
        self.settable = true;
        self
    }

    /// It is the rate of the block's input stream, in Hz: a node that leaves it out gets the
    /// stream's rate (followed from the sources when the graph loads), and one that gives a
    /// different rate is refused, naming both.
    pub fn follows_stream(mut self) -> Self {
        self.follows_stream = true;
        self.unit = Some("Hz".into());
        self.derived("the stream's rate")
    }

    /// The default as a graph file would write it, or `required`, or the words of a derived one.
    pub fn default_text(&self) -> String {
        match &self.default {
            Default::Required => "required".into(),
            Default::Value(Value::String(s)) => s.clone(),
            Default::Value(v) => v.to_string(),
            Default::Derived(words) => words.to_string(),
        }
    }

    /// The error in `value` for this parameter, in words that read on from "parameter 'x' ",
    /// or `None` when it is good.
    pub fn check(&self, value: &Value) -> Option<String> {
        let wrong = || format!("must be {}, not {}", self.kind.describe(), kind_of(value));
        let in_range = |x: f64| self.range_error(x);
        match (&self.kind, value) {
            (ParamKind::Number, Value::Float(x)) => in_range(*x),
            (ParamKind::Number | ParamKind::Integer, Value::Integer(i)) => in_range(*i as f64),
            (ParamKind::Integer, Value::Float(x)) => {
                Some(format!("must be a whole number, not {x}"))
            }
            (ParamKind::Text, Value::String(_)) | (ParamKind::Bool, Value::Boolean(_)) => None,
            (ParamKind::Table, Value::Table(_)) => None,
            (ParamKind::Choice(words), Value::String(s)) => {
                if words.iter().any(|w| w == s) {
                    None
                } else {
                    Some(format!("must be {}, not '{s}'", self.kind.describe()))
                }
            }
            (ParamKind::Numbers | ParamKind::Integers | ParamKind::Texts, Value::Array(items)) => {
                items.iter().enumerate().find_map(|(i, item)| {
                    let element = match (&self.kind, item) {
                        (ParamKind::Numbers, Value::Float(x)) => in_range(*x),
                        (ParamKind::Numbers | ParamKind::Integers, Value::Integer(n)) => {
                            in_range(*n as f64)
                        }
                        (ParamKind::Texts, Value::String(_)) => None,
                        (kind, other) => Some(format!(
                            "must be {}, not {}",
                            element_kind(kind),
                            kind_of(other)
                        )),
                    };
                    element.map(|e| format!("element {i} {e}"))
                })
            }
            _ => Some(wrong()),
        }
    }

    fn range_error(&self, x: f64) -> Option<String> {
        let unit = self
            .unit
            .as_deref()
            .map_or(String::new(), |u| format!(" {u}"));
        if !x.is_finite() {
            return Some(format!("must be a finite number, not {x}"));
        }
        match (self.min, self.max) {
            (Some(lo), Some(hi)) if !(lo..=hi).contains(&x) => {
                Some(format!("must be between {lo} and {hi}{unit}, not {x}"))
            }
            (Some(lo), _) if x < lo => Some(format!("must be at least {lo}{unit}, not {x}")),
            (_, Some(hi)) if x > hi => Some(format!("must be at most {hi}{unit}, not {x}")),
            _ => None,
        }
    }
}

fn element_kind(kind: &ParamKind) -> &'static str {
    match kind {
        ParamKind::Numbers => "a number",
        ParamKind::Integers => "a whole number",
        _ => "a string",
    }
}

/// A TOML value's kind in words.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "a list",
        Value::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_against_kind_and_range() {
        let gain = Param::number("gain", "g").range(0.0, 2.0);
        assert_eq!(gain.check(&Value::Float(1.5)), None);
        assert_eq!(gain.check(&Value::Integer(1)), None);
        assert_eq!(
            gain.check(&Value::Float(3.0)).unwrap(),
            "must be between 0 and 2, not 3"
        );
        assert_eq!(
            gain.check(&Value::String("x".into())).unwrap(),
            "must be a number, not a string"
        );
        let taps = Param::integer("taps", "t");
        assert_eq!(
            taps.check(&Value::Integer(-1)).unwrap(),
            "must be at least 0, not -1"
        );
        assert_eq!(
            taps.check(&Value::Float(1.5)).unwrap(),
            "must be a whole number, not 1.5"
        );
        let item = Param::choice("item", &["c32", "f32"], "i");
        assert_eq!(item.check(&Value::String("f32".into())), None);
        assert_eq!(
            item.check(&Value::String("f64".into())).unwrap(),
            "must be one of c32, f32, not 'f64'"
        );
        let list = Param::numbers("taps", "t");
        assert_eq!(
            list.check(&Value::Array(vec![Value::Float(1.0), Value::Boolean(true)]))
                .unwrap(),
            "element 1 must be a number, not a boolean"
        );
        let hz = Param::number("f", "").min(0.0).unit("Hz");
        assert_eq!(
            hz.check(&Value::Float(-1.0)).unwrap(),
            "must be at least 0 Hz, not -1"
        );
    }

    #[test]
    fn a_pattern_names_a_file_per_label_and_back() {
        assert_eq!(pattern_file("rec/ch{}.wav", 7), "rec/ch007.wav");
        assert_eq!(pattern_file("ch{}_{}.wav", 1234), "ch1234_{}.wav");
        assert_eq!(pattern_label("ch{}.wav", "ch007.wav"), Some(7));
        assert_eq!(pattern_label("ch{}.wav", "ch1234.wav"), Some(1234));
        assert_eq!(pattern_label("ch{}_{}.wav", "ch001_{}.wav"), Some(1));
        for other in [
            "ch7.wav",
            "ch0007.wav",
            "ch.wav",
            "ch00x.wav",
            "cx007.wav",
            "ch007.wa",
        ] {
            assert_eq!(pattern_label("ch{}.wav", other), None, "{other}");
        }
        assert_eq!(pattern_label("no_label.wav", "no_label.wav"), None);
    }

    #[test]
    fn defaults_read_as_a_graph_file_writes_them() {
        assert_eq!(Param::number("g", "").default(1.0).default_text(), "1.0");
        assert_eq!(Param::text("p", "").default("c32").default_text(), "c32");
        assert_eq!(Param::text("p", "").default_text(), "required");
        assert_eq!(
            Param::number("r", "")
                .derived("the stream's")
                .default_text(),
            "the stream's"
        );
    }
}
