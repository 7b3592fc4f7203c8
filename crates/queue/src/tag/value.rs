//! The values stream tags carry: the data model of GNU Radio's PMTs (polymorphic types) that
//! radios put in tags, so that a tag from a GNU Radio flowgraph has a faithful sluice value.

use num_complex::{Complex32, Complex64};
use std::sync::Arc;

/// The value of a stream tag: what GNU Radio's PMTs can hold in a tag.
///
/// Each variant maps to one PMT type (see [`crate::pmt`] for the byte encoding):
///
/// | variant | PMT |
/// |---|---|
/// | [`Null`](TagValue::Null) | `PMT_NIL` (also the empty list and the empty dict) |
/// | [`Bool`](TagValue::Bool) | `PMT_T` / `PMT_F` |
/// | [`I64`](TagValue::I64) | integer (`from_long`) |
/// | [`U64`](TagValue::U64) | `from_uint64` |
/// | [`F64`](TagValue::F64) | real (`from_double`) |
/// | [`Complex`](TagValue::Complex) | complex (`from_complex`) |
/// | [`Str`](TagValue::Str) | symbol (`intern`, `string_to_symbol`) |
/// | [`Pair`](TagValue::Pair) | pair (`cons`); a list is a chain of pairs ending in `Null` |
/// | [`Tuple`](TagValue::Tuple) | tuple (`make_tuple`) |
/// | [`Vector`](TagValue::Vector) | vector (`make_vector`) |
/// | [`Dict`](TagValue::Dict) | dict (`make_dict`, `dict_add`), entries in order |
/// | [`Uniform`](TagValue::Uniform) | uniform vector (`init_u8vector` … `init_c64vector`) |
#[derive(Debug, Clone, PartialEq)]
pub enum TagValue {
    /// No value (`PMT_NIL`): the end of a list, an empty dict.
    Null,
    /// A flag.
    Bool(bool),
    /// A signed integer (sequence numbers, counts).
    I64(i64),
    /// An unsigned integer.
    U64(u64),
    /// A real number (frequencies, gains, time stamps in seconds).
    F64(f64),
    /// A complex number.
    Complex(Complex64),
    /// Text (a PMT symbol).
    Str(Arc<str>),
    /// A pair `(first . second)`; a list `(a b)` is `Pair(a, Pair(b, Null))`.
    Pair(Box<(TagValue, TagValue)>),
    /// A fixed group of values, e.g. `rx_time` = (whole seconds as `U64`, fraction as `F64`).
    Tuple(Vec<TagValue>),
    /// A vector of values of any types.
    Vector(Vec<TagValue>),
    /// A dictionary as ordered (key, value) entries, in the order they travel on the wire.
    Dict(Vec<(TagValue, TagValue)>),
    /// A vector of numbers of one type (bytes, samples).
    Uniform(Uniform),
}

/// A vector of numbers of one type: PMT's uniform vectors (`u8vector` … `c64vector`).
/// The elements are shared, so cloning a tag does not copy them.
#[derive(Debug, Clone, PartialEq)]
pub enum Uniform {
    /// Bytes (PMT `u8vector`).
    U8(Arc<[u8]>),
    /// Signed bytes (PMT `s8vector`).
    I8(Arc<[i8]>),
    /// PMT `u16vector`.
    U16(Arc<[u16]>),
    /// PMT `s16vector`.
    I16(Arc<[i16]>),
    /// PMT `u32vector`.
    U32(Arc<[u32]>),
    /// PMT `s32vector`.
    I32(Arc<[i32]>),
    /// PMT `u64vector`.
    U64(Arc<[u64]>),
    /// PMT `s64vector`.
    I64(Arc<[i64]>),
    /// PMT `f32vector`.
    F32(Arc<[f32]>),
    /// PMT `f64vector`.
    F64(Arc<[f64]>),
    /// PMT `c32vector`.
    C32(Arc<[Complex32]>),
    /// PMT `c64vector`.
    C64(Arc<[Complex64]>),
}

impl Uniform {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Uniform::U8(v) => v.len(),
            Uniform::I8(v) => v.len(),
            Uniform::U16(v) => v.len(),
            Uniform::I16(v) => v.len(),
            Uniform::U32(v) => v.len(),
            Uniform::I32(v) => v.len(),
            Uniform::U64(v) => v.len(),
            Uniform::I64(v) => v.len(),
            Uniform::F32(v) => v.len(),
            Uniform::F64(v) => v.len(),
            Uniform::C32(v) => v.len(),
            Uniform::C64(v) => v.len(),
        }
    }

    /// Whether the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per element (a complex element counts both parts).
    pub fn element_size(&self) -> usize {
        match self {
            Uniform::U8(_) | Uniform::I8(_) => 1,
            Uniform::U16(_) | Uniform::I16(_) => 2,
            Uniform::U32(_) | Uniform::I32(_) | Uniform::F32(_) => 4,
            Uniform::U64(_) | Uniform::I64(_) | Uniform::F64(_) | Uniform::C32(_) => 8,
            Uniform::C64(_) => 16,
        }
    }

    /// GNU Radio's name of the element type: `"u8"`, `"s8"`, … `"c64"`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Uniform::U8(_) => "u8",
            Uniform::I8(_) => "s8",
            Uniform::U16(_) => "u16",
            Uniform::I16(_) => "s16",
            Uniform::U32(_) => "u32",
            Uniform::I32(_) => "s32",
            Uniform::U64(_) => "u64",
            Uniform::I64(_) => "s64",
            Uniform::F32(_) => "f32",
            Uniform::F64(_) => "f64",
            Uniform::C32(_) => "c32",
            Uniform::C64(_) => "c64",
        }
    }
}

impl TagValue {
    /// GNU Radio's `rx_time` value: a tuple of whole seconds (`U64`) and the fraction of a
    /// second (`F64`), as USRP sources and `gr-uhd` write it.
    pub fn rx_time(secs: u64, frac: f64) -> TagValue {
        TagValue::Tuple(vec![TagValue::U64(secs), TagValue::F64(frac)])
    }

    /// The pair `(first . second)`.
    pub fn pair(first: impl Into<TagValue>, second: impl Into<TagValue>) -> TagValue {
        TagValue::Pair(Box::new((first.into(), second.into())))
    }

    /// The list `(a b c …)`: pairs chained through their second element, ending in `Null`.
    pub fn list<I: IntoIterator<Item = TagValue>>(items: I) -> TagValue
    where
        I::IntoIter: DoubleEndedIterator,
    {
        items
            .into_iter()
            .rev()
            .fold(TagValue::Null, |rest, item| TagValue::pair(item, rest))
    }

    /// A dict with string keys, entries in the order given.
    pub fn dict<K: Into<TagValue>, V: Into<TagValue>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> TagValue {
        TagValue::Dict(
            entries
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// Bytes as a `u8` uniform vector (GNU Radio's usual carrier of raw data).
    pub fn bytes(data: &[u8]) -> TagValue {
        TagValue::Uniform(Uniform::U8(data.into()))
    }

    /// Whether this is `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, TagValue::Null)
    }

    /// The flag, if this is a `Bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            TagValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The integer, if this is an `I64`, or a `U64` that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            TagValue::I64(v) => Some(*v),
            TagValue::U64(v) => i64::try_from(*v).ok(),
            _ => None,
        }
    }

    /// The integer, if this is a `U64`, or a non-negative `I64`.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            TagValue::U64(v) => Some(*v),
            TagValue::I64(v) => u64::try_from(*v).ok(),
            _ => None,
        }
    }

    /// The number as a real, if this is an `F64`, `I64` or `U64` (integers are converted, as
    /// GNU Radio's `to_double` does).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            TagValue::F64(v) => Some(*v),
            TagValue::I64(v) => Some(*v as f64),
            TagValue::U64(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// The number as a complex, if this is a `Complex` or a real number (see [`Self::as_f64`]).
    pub fn as_complex(&self) -> Option<Complex64> {
        match self {
            TagValue::Complex(c) => Some(*c),
            other => other.as_f64().map(|re| Complex64::new(re, 0.0)),
        }
    }

    /// The text, if this is a `Str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            TagValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The two halves, if this is a `Pair`.
    pub fn as_pair(&self) -> Option<(&TagValue, &TagValue)> {
        match self {
            TagValue::Pair(p) => Some((&p.0, &p.1)),
            _ => None,
        }
    }

    /// The elements, if this is a `Tuple`.
    pub fn as_tuple(&self) -> Option<&[TagValue]> {
        match self {
            TagValue::Tuple(v) => Some(v),
            _ => None,
        }
    }

    /// The elements, if this is a `Vector`.
    pub fn as_vector(&self) -> Option<&[TagValue]> {
        match self {
            TagValue::Vector(v) => Some(v),
            _ => None,
        }
    }

    /// The entries, if this is a `Dict` (or `Null`, the empty dict).
    pub fn as_dict(&self) -> Option<&[(TagValue, TagValue)]> {
        match self {
            TagValue::Dict(v) => Some(v),
            TagValue::Null => Some(&[]),
            _ => None,
        }
    }

    /// The value of the first entry whose key is the symbol `key`, if this is a dict.
    pub fn dict_get(&self, key: &str) -> Option<&TagValue> {
        self.as_dict()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// The uniform vector, if this is one.
    pub fn as_uniform(&self) -> Option<&Uniform> {
        match self {
            TagValue::Uniform(u) => Some(u),
            _ => None,
        }
    }

    /// The bytes, if this is a `u8` uniform vector.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            TagValue::Uniform(Uniform::U8(b)) => Some(b),
            _ => None,
        }
    }

    /// `(whole seconds, fraction)`, if this is an `rx_time` tuple (see [`Self::rx_time`]).
    pub fn as_rx_time(&self) -> Option<(u64, f64)> {
        match self.as_tuple()? {
            [secs, frac] => Some((secs.as_u64()?, frac.as_f64()?)),
            _ => None,
        }
    }
}

macro_rules! from_scalar {
    ($($t:ty => $variant:ident as $as:ty),* $(,)?) => {$(
        impl From<$t> for TagValue {
            fn from(v: $t) -> Self {
                TagValue::$variant(<$as>::from(v))
            }
        }
    )*};
}

from_scalar!(
    bool => Bool as bool,
    i8 => I64 as i64, i16 => I64 as i64, i32 => I64 as i64, i64 => I64 as i64,
    u8 => U64 as u64, u16 => U64 as u64, u32 => U64 as u64, u64 => U64 as u64,
    f32 => F64 as f64, f64 => F64 as f64,
    Complex64 => Complex as Complex64,
);

impl From<Complex32> for TagValue {
    fn from(c: Complex32) -> Self {
        TagValue::Complex(Complex64::new(f64::from(c.re), f64::from(c.im)))
    }
}

impl From<&str> for TagValue {
    fn from(s: &str) -> Self {
        TagValue::Str(s.into())
    }
}

impl From<String> for TagValue {
    fn from(s: String) -> Self {
        TagValue::Str(s.into())
    }
}

impl From<Arc<str>> for TagValue {
    fn from(s: Arc<str>) -> Self {
        TagValue::Str(s)
    }
}

impl From<Uniform> for TagValue {
    fn from(u: Uniform) -> Self {
        TagValue::Uniform(u)
    }
}

impl From<Vec<TagValue>> for TagValue {
    /// A `Vector` of the values.
    fn from(v: Vec<TagValue>) -> Self {
        TagValue::Vector(v)
    }
}

macro_rules! from_uniform {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<Vec<$t>> for Uniform {
            fn from(v: Vec<$t>) -> Self {
                Uniform::$variant(v.into())
            }
        }
        impl From<&[$t]> for Uniform {
            fn from(v: &[$t]) -> Self {
                Uniform::$variant(v.into())
            }
        }
        impl From<Arc<[$t]>> for Uniform {
            fn from(v: Arc<[$t]>) -> Self {
                Uniform::$variant(v)
            }
        }
        impl From<Vec<$t>> for TagValue {
            /// A uniform vector of the elements.
            fn from(v: Vec<$t>) -> Self {
                TagValue::Uniform(v.into())
            }
        }
        impl From<&[$t]> for TagValue {
            /// A uniform vector of the elements.
            fn from(v: &[$t]) -> Self {
                TagValue::Uniform(v.into())
            }
        }
    )*};
}

from_uniform!(
    u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32,
    u64 => U64, i64 => I64, f32 => F32, f64 => F64, Complex32 => C32, Complex64 => C64,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_time_is_a_tuple_of_seconds_and_fraction() {
        let t = TagValue::rx_time(1_700_000_000, 0.25);
        assert_eq!(
            t,
            TagValue::Tuple(vec![TagValue::U64(1_700_000_000), TagValue::F64(0.25)])
        );
        assert_eq!(t.as_rx_time(), Some((1_700_000_000, 0.25)));
        assert_eq!(TagValue::F64(1.0).as_rx_time(), None);
    }

    #[test]
    fn conversions_and_accessors() {
        assert_eq!(TagValue::from(3i32), TagValue::I64(3));
        assert_eq!(TagValue::from(3u32).as_i64(), Some(3));
        assert_eq!(TagValue::from(-1i64).as_u64(), None);
        assert_eq!(TagValue::from(u64::MAX).as_i64(), None);
        assert_eq!(TagValue::from(2u8).as_f64(), Some(2.0));
        assert_eq!(TagValue::from("rx_freq").as_str(), Some("rx_freq"));
        assert_eq!(TagValue::from(vec![1u8, 2]).as_bytes(), Some(&[1u8, 2][..]));
        assert_eq!(
            TagValue::bytes(&[7]).as_uniform().map(Uniform::len),
            Some(1)
        );
        let d = TagValue::dict([("a", 1i64), ("b", 2i64)]);
        assert_eq!(d.dict_get("b"), Some(&TagValue::I64(2)));
        assert_eq!(d.dict_get("c"), None);
        assert_eq!(TagValue::Null.as_dict(), Some(&[][..]));
        let l = TagValue::list([TagValue::I64(1), TagValue::I64(2)]);
        let (first, rest) = l.as_pair().unwrap();
        assert_eq!(first, &TagValue::I64(1));
        assert_eq!(rest, &TagValue::pair(2i64, TagValue::Null));
        assert_eq!(
            TagValue::from(Complex32::new(1.0, -2.0)).as_complex(),
            Some(Complex64::new(1.0, -2.0))
        );
    }
}
