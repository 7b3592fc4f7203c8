//! Block parameters from a graph file: typed getters that remember what was used, so that an
//! unknown (misspelt) parameter is an error instead of being silently ignored.

use crate::decl::param::kind_of as kind;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use toml::{Spanned, Value};

/// A parameter that is missing, has the wrong type, or is out of range.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    /// The parameter's name (empty when the error concerns the block as a whole).
    pub param: String,
    /// What is wrong, in words that read on from "parameter 'x'" where they can ("must be …",
    /// "is required").
    pub message: String,
    /// The block declares no parameter of this name.
    pub unknown: bool,
}

impl ParamError {
    /// An error about `param`.
    pub fn new(param: &str, message: impl Into<String>) -> Self {
        ParamError {
            param: param.to_string(),
            message: message.into(),
            unknown: false,
        }
    }

    /// `param` is not a parameter of the block.
    pub fn unknown(param: &str, message: impl Into<String>) -> Self {
        ParamError {
            unknown: true,
            ..ParamError::new(param, message)
        }
    }
}

/// The parameters of one node: those its graph file gives, and the defaults its block type
/// declares (see [`Params::declare`]).
#[derive(Debug, Default, Clone)]
pub struct Params {
    values: BTreeMap<String, Spanned<Value>>,
    defaults: BTreeMap<String, Value>,
    used: BTreeSet<String>,
}

impl Params {
    /// Parameters from a parsed table.
    pub fn new(values: BTreeMap<String, Spanned<Value>>) -> Self {
        Params {
            values,
            defaults: BTreeMap::new(),
            used: BTreeSet::new(),
        }
    }

    /// Parameters from `(name, value)` pairs, without places in a file (for blocks built in
    /// code, e.g. from Python).
    pub fn from_values(values: impl IntoIterator<Item = (String, Value)>) -> Self {
        Params::new(
            values
                .into_iter()
                .map(|(k, v)| (k, Spanned::new(0..0, v)))
                .collect(),
        )
    }

    /// Takes the declared parameters' defaults: a getter then returns the default of a
    /// parameter the node leaves out, and every declared name counts as known.
    pub fn declare(&mut self, decls: &[crate::ParamDecl]) {
        for decl in decls {
            self.used.insert(decl.name.to_string());
            if let crate::decl::param::Default::Value(v) = &decl.default {
                self.defaults.insert(decl.name.to_string(), v.clone());
            }
        }
    }

    /// Gives `param` a value the loader derived (a stream's rate) when the file gives none: it
    /// reads as a default does.
    pub fn derive(&mut self, param: &str, value: Value) {
        self.defaults.insert(param.to_string(), value);
    }

    /// The value the graph file gives for `param`.
    pub fn given(&self, param: &str) -> Option<&Value> {
        self.values.get(param).map(|v| v.get_ref())
    }

    /// A block that passes its own default to a getter must pass the declared one: the
    /// declaration is what users read (checked in tests, where debug assertions are on).
    fn agrees(&self, name: &str, default: &Value) {
        if let Some(declared) = self.defaults.get(name) {
            // Numbers agree to f32 precision (a block may keep its defaults as f32).
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs());
            let same = match (declared, default) {
                (Value::Integer(a), Value::Float(b)) | (Value::Float(b), Value::Integer(a)) => {
                    close(*a as f64, *b)
                }
                (Value::Float(a), Value::Float(b)) => close(*a, *b),
                (a, b) => a == b,
            };
            debug_assert!(
                same,
                "parameter '{name}': the block's default {default} differs from the declared {declared}"
            );
        }
    }

    /// The names of the parameters the graph file gives.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// The value given for `param`, or its declared default.
    pub fn value(&self, param: &str) -> Option<&Value> {
        self.given(param).or_else(|| self.defaults.get(param))
    }

    /// Byte range of `param` in the file, if it was given.
    pub fn span(&self, param: &str) -> Option<Range<usize>> {
        self.values.get(param).map(|v| v.span())
    }

    fn get(&mut self, name: &str) -> Option<&Value> {
        self.used.insert(name.to_string());
        self.value(name)
    }

    /// Names given but neither declared nor asked for: unknown parameters.
    pub fn unused(&self) -> Vec<&str> {
        self.values
            .keys()
            .filter(|k| !self.used.contains(*k))
            .map(String::as_str)
            .collect()
    }

    /// A number (integers are accepted too), or `default` when absent.
    pub fn f64_or(&mut self, name: &str, default: f64) -> Result<f64, ParamError> {
        self.agrees(name, &Value::Float(default));
        Ok(self.opt_f64(name)?.unwrap_or(default))
    }

    /// A number if given.
    pub fn opt_f64(&mut self, name: &str) -> Result<Option<f64>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Float(f)) => Ok(Some(*f)),
            Some(Value::Integer(i)) => Ok(Some(*i as f64)),
            Some(other) => Err(ParamError::new(
                name,
                format!("must be a number, not {}", kind(other)),
            )),
        }
    }

    /// A number (given or declared default) as f32.
    pub fn f32(&mut self, name: &str) -> Result<f32, ParamError> {
        Ok(self.f64(name)? as f32)
    }

    /// A required number.
    pub fn f64(&mut self, name: &str) -> Result<f64, ParamError> {
        self.opt_f64(name)?
            .ok_or_else(|| ParamError::new(name, "is required"))
    }

    /// A non-negative integer if given.
    pub fn opt_u64(&mut self, name: &str) -> Result<Option<u64>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(Value::Integer(i)) => {
                Err(ParamError::new(name, format!("must not be negative ({i})")))
            }
            Some(Value::Float(f)) => Err(ParamError::new(
                name,
                format!("must be a whole number, not {f}"),
            )),
            Some(other) => Err(ParamError::new(
                name,
                format!("must be a whole number, not {}", kind(other)),
            )),
        }
    }

    /// A non-negative integer, or `default` when absent.
    pub fn u64_or(&mut self, name: &str, default: u64) -> Result<u64, ParamError> {
        self.agrees(name, &Value::Integer(default as i64));
        Ok(self.opt_u64(name)?.unwrap_or(default))
    }

    /// A required non-negative integer.
    pub fn u64(&mut self, name: &str) -> Result<u64, ParamError> {
        self.opt_u64(name)?
            .ok_or_else(|| ParamError::new(name, "is required"))
    }

    /// Text if given.
    pub fn opt_str(&mut self, name: &str) -> Result<Option<String>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ParamError::new(
                name,
                format!("must be a string, not {}", kind(other)),
            )),
        }
    }

    /// Required text.
    pub fn str(&mut self, name: &str) -> Result<String, ParamError> {
        self.opt_str(name)?
            .ok_or_else(|| ParamError::new(name, "is required"))
    }

    /// A flag, or `default` when absent.
    pub fn bool_or(&mut self, name: &str, default: bool) -> Result<bool, ParamError> {
        self.agrees(name, &Value::Boolean(default));
        match self.get(name) {
            None => Ok(default),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(ParamError::new(
                name,
                format!("must be true or false, not {}", kind(other)),
            )),
        }
    }

    /// A list of numbers if given.
    pub fn opt_f64_list(&mut self, name: &str) -> Result<Option<Vec<f64>>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::Float(f) => Ok(*f),
                    Value::Integer(n) => Ok(*n as f64),
                    other => Err(ParamError::new(
                        name,
                        format!("element {i} must be a number, not {}", kind(other)),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(ParamError::new(
                name,
                format!("must be a list of numbers, not {}", kind(other)),
            )),
        }
    }
}
