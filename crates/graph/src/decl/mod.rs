//! The block declaration: everything a graph file, `sluice blocks`, the validation of
//! parameters and the list of run-time controls need to know about a block type, written once.
//!
//! A declaration is a run-time value built with a few chained calls, not a macro: blocks defined
//! at run time (in Python, in a user's crate) declare themselves the same way, and the
//! declaration of a block reads top to bottom as its documentation does:
//!
//! ```
//! use sluice_graph::{BlockType, Family, ItemDecl, Param};
//! # use sluice_runtime::Node;
//! # fn make(gain: f64) -> Box<dyn Node> { unimplemented!() }
//! let gain = BlockType::new("gain", Family::Math, "Multiplies every sample by `gain`.")
//!     .input("in", ItemDecl::Param("item".into()))
//!     .output("out", ItemDecl::Param("item".into()))
//!     .param(Param::choice("item", &["c32", "f32"], "sample type").default("c32"))
//!     .param(Param::number("gain", "the factor").default(1.0).settable())
//!     .example(r#"item = "f32", gain = 0.5"#)
//!     .build(|p| Ok(make(p.f64("gain")?)));
//! assert_eq!(gain.settable().collect::<Vec<_>>(), ["gain"]);
//! ```

pub mod memory;
pub mod param;
pub mod port;
pub mod rate;

use crate::params::{ParamError, Params};
use memory::Memory;
use param::{FileAccess, ParamDecl};
use port::{Direction, ItemDecl, PortDecl, ResolvedPort};
use rate::Rate;
use serde::Serialize;
use sluice_runtime::Node;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Declared text: static in Rust declarations, owned when built at run time.
pub type Text = Cow<'static, str>;

/// Builds a node from its validated parameters (read through [`Params`]' getters, which give
/// declared defaults for parameters the node leaves out).
pub type BuildFn = Arc<dyn Fn(&mut Params) -> Result<Box<dyn Node>, ParamError> + Send + Sync>;

/// Computes a block's [`Memory`] from its parameters (for warm standbys).
pub type MemoryFn = Arc<dyn Fn(&mut Params) -> Result<Memory, ParamError> + Send + Sync>;

/// The family a block belongs to: `sluice blocks` groups by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Signal generators and test sources.
    Sources,
    /// Sinks that end a stream.
    Sinks,
    /// Moving, cutting, pacing and reshaping streams.
    Plumbing,
    /// Arithmetic and type conversion.
    Math,
    /// FIR, FFT and IIR filters.
    Filters,
    /// Rate changes.
    Resampling,
    /// Channelizers and channel banks.
    Channelizers,
    /// Mixers, demodulators, squelch, AGC.
    Radio,
    /// Beamformers and array signals.
    Beamforming,
    /// Spectra, probes and pictures.
    Analysis,
    /// Files: raw, WAV, SigMF.
    Files,
    /// Sound cards and audio servers.
    Audio,
    /// Streams between processes and machines.
    Network,
    /// Blocks of a user's own crate.
    Other,
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Family::Sources => "sources",
            Family::Sinks => "sinks",
            Family::Plumbing => "plumbing",
            Family::Math => "math",
            Family::Filters => "filters",
            Family::Resampling => "resampling",
            Family::Channelizers => "channelizers",
            Family::Radio => "radio",
            Family::Beamforming => "beamforming",
            Family::Analysis => "analysis",
            Family::Files => "files",
            Family::Audio => "audio",
            Family::Network => "network",
            Family::Other => "other",
        };
        f.write_str(name)
    }
}

/// A block type: its declaration and its constructor.
#[derive(Clone, Serialize)]
pub struct BlockType {
    /// Its `type = "…"` name in graph files.
    pub name: Text,
    /// Its family.
    pub family: Family,
    /// One line of help (a second paragraph may follow after a blank line).
    pub help: Text,
    /// Its ports.
    pub ports: Vec<PortDecl>,
    /// Its parameters.
    pub params: Vec<ParamDecl>,
    /// The parameters of an example node, as the inside of a TOML inline table
    /// (`item = "f32", gain = 0.5`).
    pub example: Text,
    /// GNU Radio's names for the same block (`quadrature_demod`), for hints to its users.
    pub gnuradio: Vec<Text>,
    #[serde(skip)]
    build: BuildFn,
    #[serde(skip)]
    memory: Option<MemoryFn>,
    #[serde(skip)]
    rate: Option<Rate>,
}

impl fmt::Debug for BlockType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockType")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl BlockType {
    /// A block type with no ports or parameters yet, whose build refuses (give it one with
    /// [`BlockType::build`]).
    pub fn new(name: impl Into<Text>, family: Family, help: impl Into<Text>) -> Self {
        let name = name.into();
        let missing = format!("block type '{name}' declares no constructor");
        BlockType {
            name,
            family,
            help: help.into(),
            ports: Vec::new(),
            params: Vec::new(),
            example: Text::Borrowed(""),
            gnuradio: Vec::new(),
            build: Arc::new(move |_| Err(ParamError::new("", missing.clone()))),
            memory: None,
            rate: None,
        }
    }
    /// Adds an input port.
    pub fn input(self, name: impl Into<Text>, item: ItemDecl) -> Self {
        self.port(PortDecl::input(name, item))
    }
    /// Adds an output port.
    pub fn output(self, name: impl Into<Text>, item: ItemDecl) -> Self {
        self.port(PortDecl::output(name, item))
    }
    /// Adds a port (or a numbered family of ports).
    pub fn port(mut self, port: PortDecl) -> Self {
        self.ports.push(port);
        self
    }
    /// Adds a parameter.
    pub fn param(mut self, param: ParamDecl) -> Self {
        self.params.push(param);
        self
    }
    /// Adds parameters.
    pub fn params(mut self, params: impl IntoIterator<Item = ParamDecl>) -> Self {
        self.params.extend(params);
        self
    }
    /// An example node's parameters (`item = "f32", gain = 0.5`).
    pub fn example(mut self, params: impl Into<Text>) -> Self {
        self.example = params.into();
        self
    }
    /// How the block is built from its parameters.
    pub fn build(
        mut self,
        build: impl Fn(&mut Params) -> Result<Box<dyn Node>, ParamError> + Send + Sync + 'static,
    ) -> Self {
        self.build = Arc::new(build);
        self
    }
    /// What the block remembers of its input (see [`Memory`]); undeclared means infinite.
    pub fn memory(
        mut self,
        memory: impl Fn(&mut Params) -> Result<Memory, ParamError> + Send + Sync + 'static,
    ) -> Self {
        self.memory = Some(Arc::new(memory));
        self
    }

    /// How its output rate follows from its input's (see [`Rate`]); undeclared means the
    /// input's rate for a block with inputs, unknown for a source.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }
    /// GNU Radio's names for this block (`quadrature_demod`, `analog.quadrature_demod_cf`):
    /// a graph that writes one is told this block's name.
    pub fn gnuradio(mut self, names: &[&'static str]) -> Self {
        self.gnuradio
            .extend(names.iter().map(|n| Text::Borrowed(*n)));
        self
    }
    /// Its rate rule, declared or by default.
    pub fn rate_rule(&self) -> Rate {
        match &self.rate {
            Some(rate) => rate.clone(),
            None if self.ports.iter().any(|p| p.direction == Direction::Input) => Rate::Same,
            None => Rate::Unknown,
        }
    }

    /// The declared parameter `name`.
    pub fn find_param(&self, name: &str) -> Option<&ParamDecl> {
        self.params.iter().find(|p| p.name == name)
    }
    /// The parameters that can change while the graph runs.
    pub fn settable(&self) -> impl Iterator<Item = &str> {
        self.params
            .iter()
            .filter(|p| p.settable)
            .map(|p| p.name.as_ref())
    }
    /// The parameters that name files, and what the block does with them.
    pub fn files(&self) -> impl Iterator<Item = (&str, FileAccess)> {
        self.params
            .iter()
            .filter_map(|p| Some((p.name.as_ref(), p.file?)))
    }
    /// Whether its memory is declared.
    pub fn declares_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// Checks `params` against the declaration: unknown parameters first (with the likely
    /// one), then the kind and range of each given one, then missing required ones. Every
    /// problem is reported.
    pub fn check(&self, params: &Params) -> Vec<ParamError> {
        let mut errors = Vec::new();
        for name in params.names() {
            if self.find_param(name).is_none() {
                errors.push(self.unknown(name, params));
            }
        }
        for decl in &self.params {
            match params.given(&decl.name) {
                Some(value) => {
                    if let Some(message) = decl.check(value) {
                        errors.push(ParamError::new(&decl.name, message));
                    }
                }
                None if decl.default == param::Default::Required => {
                    errors.push(ParamError::new(&decl.name, "is required"))
                }
                None => {}
            }
        }
        errors
    }

    fn unknown(&self, name: &str, params: &Params) -> ParamError {
        // Only a parameter the node does not give already can be what was meant.
        let close: Vec<&str> = self
            .params
            .iter()
            .map(|p| p.name.as_ref())
            .filter(|k| params.given(k).is_none() && crate::registry::close_enough(name, k))
            .collect();
        let kind = &self.name;
        let hint = match close.first() {
            Some(k) => format!("did you mean '{k}'?"),
            None if self.params.is_empty() => format!("{kind} takes no parameters"),
            None => {
                let all: Vec<&str> = self.params.iter().map(|p| p.name.as_ref()).collect();
                format!("{kind} takes: {}", all.join(", "))
            }
        };
        ParamError::unknown(name, format!("is unknown for {kind} ({hint})"))
    }

    /// Builds the node. `params` should have passed [`BlockType::check`]; they get the
    /// declared defaults.
    pub fn instantiate(&self, params: &mut Params) -> Result<Box<dyn Node>, ParamError> {
        params.declare(&self.params);
        (self.build)(params)
    }

    /// Its memory for `params`, if declared (computed on a copy, since it may read parameters
    /// the build does not).
    pub fn memory_of(&self, params: &Params) -> Option<Result<Memory, ParamError>> {
        let memory = self.memory.as_ref()?;
        let mut copy = params.clone();
        copy.declare(&self.params);
        Some(memory(&mut copy))
    }

    /// The ports a node built from `params` has, by the declaration; `None` when a parameter
    /// they depend on has no value.
    pub fn resolve_ports(&self, params: &Params) -> Option<Vec<ResolvedPort>> {
        let mut copy = params.clone();
        copy.declare(&self.params);
        let value = |name: &str| copy.value(name).cloned();
        let mut all = Vec::new();
        for port in &self.ports {
            all.extend(port.resolve(&value)?);
        }
        Some(all)
    }

    /// The parameters of its example node.
    pub fn example_params(&self) -> Result<Params, toml::de::Error> {
        let doc: toml::Table = toml::from_str(&format!("p = {{ {} }}", self.example))?;
        let values = match doc.get("p") {
            Some(toml::Value::Table(t)) => t.clone(),
            _ => toml::Table::new(),
        };
        Ok(Params::from_values(values))
    }

    /// Its example as a `[[node]]` entry.
    pub fn example_node(&self) -> String {
        let mut out = format!("[[node]]\nname = \"{0}\"\ntype = \"{0}\"", self.name);
        if !self.example.is_empty() {
            out.push_str(&format!("\nparams = {{ {} }}", self.example));
        }
        out
    }
}

/// A block a crate defines, registered by type: `registry.register::<MyBlock>()`.
pub trait Block {
    /// Its declaration and constructor.
    fn block_type() -> BlockType;
}
