//! Block parameters from a graph file: typed getters that remember what was used, so that an
//! unknown (misspelt) parameter is an error instead of being silently ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use toml::{Spanned, Value};

/// A parameter that is missing, has the wrong type, or is out of range.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    /// The parameter's name (empty when the error concerns the block as a whole).
    pub param: String,
    /// What is wrong.
    pub message: String,
}

impl ParamError {
    /// An error about `param`.
    pub fn new(param: &str, message: impl Into<String>) -> Self {
        ParamError {
            param: param.to_string(),
            message: message.into(),
        }
    }
}

/// The parameters of one node.
#[derive(Debug, Default, Clone)]
pub struct Params {
    values: BTreeMap<String, Spanned<Value>>,
    used: BTreeSet<String>,
}

impl Params {
    /// Parameters from a parsed table.
    pub fn new(values: BTreeMap<String, Spanned<Value>>) -> Self {
        Params {
            values,
            used: BTreeSet::new(),
        }
    }

    /// Byte range of `param` in the file, if it was given.
    pub fn span(&self, param: &str) -> Option<Range<usize>> {
        self.values.get(param).map(|v| v.span())
    }

    fn get(&mut self, name: &str) -> Option<&Value> {
        self.used.insert(name.to_string());
        self.values.get(name).map(|v| v.get_ref())
    }

    /// Names given but never asked for: unknown parameters.
    pub fn unused(&self) -> Vec<&str> {
        self.values
            .keys()
            .filter(|k| !self.used.contains(*k))
            .map(String::as_str)
            .collect()
    }

    /// A number (integers are accepted too), or `default` when absent.
    pub fn f64_or(&mut self, name: &str, default: f64) -> Result<f64, ParamError> {
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

fn kind(v: &Value) -> &'static str {
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
