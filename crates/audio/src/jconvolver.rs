//! jconvolver's configuration files, so existing setups move to `sluice live convolve`
//! unchanged.
//!
//! The format (Debian's `jconvolver` package, `/usr/share/doc/jconvolver/README.CONFIG.gz`):
//! one command per line, `#` starts a comment line, commands run in order and build the
//! convolution matrix.
//!
//! | command | sluice |
//! |---|---|
//! | `/jack/client NAME`, `/jack/server NAME` | client and server names (before `/convolver/new`) |
//! | `/convolver/new INPUTS OUTPUTS PARTITION MAXLEN [DENSITY]` | the matrix size and the longest IR; the partition size and density are hints jconvolver needs and sluice does not: it plans its own partitioning and runs at zero latency at any power-of-two period |
//! | `/cd PATH` | directory for relative IR file names (initially the config file's) |
//! | `/input/name N NAME [PORT…]`, `/output/name N NAME [PORT…]` | port names (default `in-N`, `out-N` as jconvolver) and connections |
//! | `/impulse/read IN OUT GAIN DELAY OFFSET LENGTH CHANNEL FILE` | read from a WAV file (jconvolver reads any libsndfile format; convert others to WAV); IRs at another rate than the server's are resampled (jconvolver only warns) |
//! | `/impulse/dirac IN OUT GAIN DELAY` | a single sample |
//! | `/impulse/copy IN OUT FROM_IN FROM_OUT` | the same IR on another pair (shared, later additions included) |
//! | `/impulse/hilbert …` | **not supported**: rejected with an error naming the line |
//!
//! Several `/impulse/…` commands on one pair add up. Data beyond MAXLEN is cut (with a note),
//! as jconvolver does. jconvolver's latency compensation (when PARTITION is larger than the
//! period, it removes the first frames of each IR) has no counterpart: sluice's latency is zero,
//! so IRs are used whole and the output is aligned as jconvolver's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sluice_conv::IrMatrix;

use crate::{AudioError, LiveSpec, MAX_PORTS};

/// Commands of the format that sluice refuses, with the reason given to the user.
pub const UNSUPPORTED: &[(&str, &str)] = &[(
    "/impulse/hilbert",
    "sluice does not synthesise Hilbert transformers; design one offline and load it with \
     /impulse/read",
)];

/// A parsed configuration: the matrix and everything around it.
#[derive(Clone, Debug)]
pub struct Config {
    /// The file it was read from.
    pub file: PathBuf,
    /// `/jack/client`, if given.
    pub client: Option<String>,
    /// `/jack/server`, if given.
    pub server: Option<String>,
    /// Inputs of the matrix.
    pub inputs: usize,
    /// Outputs of the matrix.
    pub outputs: usize,
    /// The partition size given (a hint; see the module docs).
    pub partition: usize,
    /// The longest impulse response, in frames.
    pub max_len: usize,
    /// Input port names (default `in-1`, …).
    pub input_names: Vec<String>,
    /// Output port names (default `out-1`, …).
    pub output_names: Vec<String>,
    /// Ports to connect each input from.
    pub connect_inputs: Vec<Vec<String>>,
    /// Ports to connect each output to.
    pub connect_outputs: Vec<Vec<String>>,
    /// The impulse responses (sums of everything loaded on each pair).
    pub irs: IrMatrix,
    /// Sample rate of the IR files (`None` when only Dirac pulses were given).
    pub rate: Option<u32>,
    /// Remarks as jconvolver prints them (data truncated, …), each naming its line.
    pub notes: Vec<String>,
}

struct Parser {
    file: PathBuf,
    line: usize,
    cdir: PathBuf,
    client: Option<String>,
    server: Option<String>,
    size: Option<(usize, usize, usize, usize)>,
    input_names: Vec<String>,
    output_names: Vec<String>,
    connect_inputs: Vec<Vec<String>>,
    connect_outputs: Vec<Vec<String>>,
    /// Accumulated IR per root cell.
    data: HashMap<(usize, usize), Vec<f32>>,
    /// `/impulse/copy` links: cell -> the cell whose data it shares.
    links: HashMap<(usize, usize), (usize, usize)>,
    rate: Option<(u32, usize)>,
    notes: Vec<String>,
}

/// Splits a line into words; double quotes group words with spaces (as jconvolver's file names).
fn words(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut w = String::new();
        if c == '"' {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(c) => w.push(c),
                    None => return Err("a quoted name is not closed".into()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        out.push(w);
    }
    Ok(out)
}

impl Parser {
    fn err(&self, message: impl Into<String>) -> AudioError {
        AudioError::Config {
            file: self.file.clone(),
            line: self.line,
            message: message.into(),
        }
    }

    fn num<T: std::str::FromStr>(
        &self,
        args: &[String],
        i: usize,
        what: &str,
    ) -> Result<T, AudioError> {
        let s = args
            .get(i)
            .ok_or_else(|| self.err(format!("missing parameter {} ({what})", i + 1)))?;
        s.parse().map_err(|_| {
            self.err(format!(
                "parameter {} ({what}) is '{s}', not a valid number",
                i + 1
            ))
        })
    }

    fn size(&self) -> Result<(usize, usize, usize, usize), AudioError> {
        self.size
            .ok_or_else(|| self.err("no convolver defined yet: /convolver/new must come first"))
    }

    /// A 1-based input/output pair, checked, as 0-based.
    fn pair(&self, args: &[String], at: usize) -> Result<(usize, usize), AudioError> {
        let (ni, no, _, _) = self.size()?;
        let i: usize = self.num(args, at, "input")?;
        let o: usize = self.num(args, at + 1, "output")?;
        if i < 1 || i > ni {
            return Err(self.err(format!("input {i} does not exist (inputs are 1..={ni})")));
        }
        if o < 1 || o > no {
            return Err(self.err(format!("output {o} does not exist (outputs are 1..={no})")));
        }
        Ok((i - 1, o - 1))
    }

    fn root(&self, mut cell: (usize, usize)) -> (usize, usize) {
        while let Some(&next) = self.links.get(&cell) {
            cell = next;
        }
        cell
    }

    /// Adds `samples * gain` at `delay` to the pair's IR, cut at the convolver's size.
    fn add(&mut self, cell: (usize, usize), delay: usize, gain: f32, samples: &[f32]) {
        let max = self.size.map_or(0, |s| s.3);
        let room = max.saturating_sub(delay);
        if samples.len() > room {
            self.notes.push(format!(
                "{}:{}: data truncated to the convolver's maximum length of {max} frames",
                self.file.display(),
                self.line
            ));
        }
        let take = samples.len().min(room);
        if take == 0 {
            return;
        }
        let root = self.root(cell);
        let ir = self.data.entry(root).or_default();
        if ir.len() < delay + take {
            ir.resize(delay + take, 0.0);
        }
        for (y, x) in ir[delay..delay + take].iter_mut().zip(samples) {
            *y += gain * x;
        }
    }

    fn port_name(&mut self, args: &[String], input: bool) -> Result<(), AudioError> {
        let (ni, no, _, _) = self.size()?;
        let n: usize = self.num(
            args,
            0,
            if input {
                "input number"
            } else {
                "output number"
            },
        )?;
        let count = if input { ni } else { no };
        if n < 1 || n > count {
            return Err(self.err(format!("port {n} does not exist (1..={count})")));
        }
        let name = args
            .get(1)
            .ok_or_else(|| self.err("missing parameter 2 (port name)"))?
            .clone();
        let ports = args[2..].to_vec();
        if input {
            self.input_names[n - 1] = name;
            self.connect_inputs[n - 1] = ports;
        } else {
            self.output_names[n - 1] = name;
            self.connect_outputs[n - 1] = ports;
        }
        Ok(())
    }

    fn command(&mut self, cmd: &str, args: &[String]) -> Result<(), AudioError> {
        if let Some((_, why)) = UNSUPPORTED.iter().find(|(c, _)| *c == cmd) {
            return Err(self.err(format!("{cmd} is not supported: {why}")));
        }
        if self.size.is_none()
            && !matches!(
                cmd,
                "/convolver/new" | "/jack/client" | "/jack/server" | "/cd"
            )
        {
            self.size()?;
        }
        match cmd {
            "/jack/client" | "/jack/server" => {
                if self.size.is_some() {
                    return Err(self.err(format!("{cmd} must come before /convolver/new")));
                }
                let name = args
                    .first()
                    .ok_or_else(|| self.err("missing parameter 1 (name)"))?
                    .clone();
                if cmd == "/jack/client" {
                    self.client = Some(name);
                } else {
                    self.server = Some(name);
                }
            }
            "/cd" => {
                let dir = args
                    .first()
                    .ok_or_else(|| self.err("missing parameter 1 (directory)"))?;
                self.cdir = self.cdir.join(dir);
            }
            "/convolver/new" => {
                if self.size.is_some() {
                    return Err(self.err("a second /convolver/new: one convolver per file"));
                }
                let ni: usize = self.num(args, 0, "inputs")?;
                let no: usize = self.num(args, 1, "outputs")?;
                let part: usize = self.num(args, 2, "partition size")?;
                let max: usize = self.num(args, 3, "maximum impulse length")?;
                if let Some(d) = args.get(4) {
                    match d.parse::<f32>() {
                        Ok(d) if (0.0..=1.0).contains(&d) => {}
                        _ => return Err(self.err(format!("density '{d}' must be between 0 and 1"))),
                    }
                }
                if !(1..=MAX_PORTS).contains(&ni) || !(1..=MAX_PORTS).contains(&no) {
                    return Err(self.err(format!(
                        "{ni} inputs and {no} outputs: each must be between 1 and {MAX_PORTS}"
                    )));
                }
                if !part.is_power_of_two() || !(16..=8192).contains(&part) {
                    return Err(self.err(format!(
                        "partition size {part} must be a power of two from 16 to 8192"
                    )));
                }
                if !(1..=sluice_conv::MAX_IR_LEN_LIMIT).contains(&max) {
                    return Err(self.err(format!(
                        "maximum impulse length {max} must be between 1 and {}",
                        sluice_conv::MAX_IR_LEN_LIMIT
                    )));
                }
                self.size = Some((ni, no, part, max));
                self.input_names = (1..=ni).map(|i| format!("in-{i}")).collect();
                self.output_names = (1..=no).map(|o| format!("out-{o}")).collect();
                self.connect_inputs = vec![Vec::new(); ni];
                self.connect_outputs = vec![Vec::new(); no];
            }
            "/input/name" => self.port_name(args, true)?,
            "/output/name" => self.port_name(args, false)?,
            "/impulse/dirac" => {
                let cell = self.pair(args, 0)?;
                let gain: f32 = self.num(args, 2, "gain")?;
                let delay: usize = self.num(args, 3, "delay")?;
                self.add(cell, delay, gain, &[1.0]);
            }
            "/impulse/copy" => {
                let to = self.pair(args, 0)?;
                let from = self.pair(args, 2)?;
                if to == from {
                    return Err(self.err("a pair cannot be a copy of itself"));
                }
                if self.data.contains_key(&to) || self.links.contains_key(&to) {
                    return Err(self.err(format!(
                        "input {} output {} already has an impulse response; copy onto an empty pair",
                        to.0 + 1,
                        to.1 + 1
                    )));
                }
                if self.root(from) == to {
                    return Err(self.err("this copy would make a cycle"));
                }
                self.links.insert(to, from);
            }
            "/impulse/read" => self.read(args)?,
            other => {
                return Err(self.err(format!(
                    "unknown command '{other}' (known: /cd, /jack/client, /jack/server, \
                     /convolver/new, /input/name, /output/name, /impulse/read, /impulse/dirac, \
                     /impulse/copy)"
                )))
            }
        }
        Ok(())
    }

    fn read(&mut self, args: &[String]) -> Result<(), AudioError> {
        let cell = self.pair(args, 0)?;
        let gain: f32 = self.num(args, 2, "gain")?;
        let delay: usize = self.num(args, 3, "delay")?;
        let offset: usize = self.num(args, 4, "offset")?;
        let length: usize = self.num(args, 5, "length")?;
        let channel: usize = self.num(args, 6, "channel")?;
        let name = args
            .get(7)
            .ok_or_else(|| self.err("missing parameter 8 (file)"))?;
        let path = self.cdir.join(name);
        let audio = crate::offline::read_wav(&path).map_err(|e| self.err(e.to_string()))?;
        let channels = audio.channels;
        if channel < 1 || channel > channels.len() {
            return Err(self.err(format!(
                "{}: channel {channel} does not exist (the file has {})",
                path.display(),
                channels.len()
            )));
        }
        match self.rate {
            Some((r, line)) if r != audio.rate => {
                return Err(self.err(format!(
                    "{} is {} Hz but the file on line {line} is {r} Hz; all impulse files must \
                     have one rate",
                    path.display(),
                    audio.rate
                )))
            }
            Some(_) => {}
            None => self.rate = Some((audio.rate, self.line)),
        }
        let data = &channels[channel - 1];
        if offset > data.len() {
            return Err(self.err(format!(
                "{}: offset {offset} is beyond its {} frames",
                path.display(),
                data.len()
            )));
        }
        let end = if length == 0 {
            data.len()
        } else {
            (offset + length).min(data.len())
        };
        self.add(cell, delay, gain, &data[offset..end]);
        Ok(())
    }
}

impl Config {
    /// Reads and checks a configuration file; errors name the file and line.
    pub fn load(file: &Path) -> Result<Config, AudioError> {
        let text = std::fs::read_to_string(file).map_err(|e| AudioError::Config {
            file: file.to_path_buf(),
            line: 0,
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(file, &text)
    }

    /// Parses `text` as the contents of `file` (relative IR names start from its directory).
    pub fn parse(file: &Path, text: &str) -> Result<Config, AudioError> {
        let mut p = Parser {
            file: file.to_path_buf(),
            line: 0,
            cdir: file.parent().map(Path::to_path_buf).unwrap_or_default(),
            client: None,
            server: None,
            size: None,
            input_names: Vec::new(),
            output_names: Vec::new(),
            connect_inputs: Vec::new(),
            connect_outputs: Vec::new(),
            data: HashMap::new(),
            links: HashMap::new(),
            rate: None,
            notes: Vec::new(),
        };
        for (n, line) in text.lines().enumerate() {
            p.line = n + 1;
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if !t.starts_with('/') {
                return Err(p.err(format!(
                    "'{t}' is not a command (commands start with '/', comments with '#')"
                )));
            }
            let w = words(t).map_err(|e| p.err(e))?;
            p.command(&w[0], &w[1..])?;
        }
        p.line = text.lines().count();
        let (ni, no, part, max) = p.size()?;
        let mut irs = IrMatrix::new(ni, no);
        let mut any = false;
        for i in 0..ni {
            for o in 0..no {
                let root = p.root((i, o));
                if let Some(ir) = p.data.get(&root) {
                    if ir.iter().any(|&x| x != 0.0) {
                        irs.set(i, o, ir.clone())
                            .map_err(|e| p.err(e.to_string()))?;
                        any = true;
                    }
                }
            }
        }
        if !any {
            return Err(p.err("no impulse response was loaded (all pairs are empty or silent)"));
        }
        Ok(Config {
            file: p.file,
            client: p.client,
            server: p.server,
            inputs: ni,
            outputs: no,
            partition: part,
            max_len: max,
            input_names: p.input_names,
            output_names: p.output_names,
            connect_inputs: p.connect_inputs,
            connect_outputs: p.connect_outputs,
            irs,
            rate: p.rate.map(|r| r.0),
            notes: p.notes,
        })
    }

    /// The live convolver this configuration describes (client `jconvolver` unless
    /// `/jack/client` says otherwise, as jconvolver).
    pub fn to_spec(&self) -> Result<LiveSpec, AudioError> {
        let mut spec = LiveSpec::new(
            self.client.as_deref().unwrap_or("jconvolver"),
            self.irs.clone(),
        );
        spec.server = self.server.clone();
        spec.ir_rate = self.rate;
        spec.input_names = self.input_names.clone();
        spec.output_names = self.output_names.clone();
        spec.connect_inputs = self.connect_inputs.clone();
        spec.connect_outputs = self.connect_outputs.clone();
        spec.max_ir_len = self.max_len.max(self.irs.max_len());
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_formats::wav::{Encoding, WavWriter};

    fn wav(path: &Path, rate: u32, channels: &[Vec<f32>]) {
        let mut w =
            WavWriter::create(path, channels.len(), Some(rate), Encoding::Float(32)).unwrap();
        let mut inter = Vec::new();
        for n in 0..channels[0].len() {
            inter.extend(channels.iter().map(|c| c[n]));
        }
        w.write(&inter).unwrap();
        w.finish().unwrap();
    }

    fn err(dir: &Path, text: &str) -> String {
        Config::parse(&dir.join("test.conf"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_full_config_builds_the_matrix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("irs dir")).unwrap();
        let a: Vec<f32> = (0..10).map(|i| i as f32 + 1.0).collect();
        let b: Vec<f32> = (0..10).map(|i| -(i as f32) - 1.0).collect();
        wav(
            &dir.path().join("irs dir/st.wav"),
            44100,
            &[a.clone(), b.clone()],
        );
        let text = "# a comment\n\
            /jack/client  myconv\n\
            /convolver/new 2 3 256 16 0.5\n\
            /cd \"irs dir\"\n\
            \n\
            /input/name 1 left system:capture_1\n\
            /output/name 3 rear system:playback_1 system:playback_2\n\
            /impulse/read 1 1 0.5 2 1 4 1 st.wav\n\
            /impulse/dirac 1 1 3.0 0\n\
            /impulse/copy 2 2 1 1\n\
            /impulse/dirac 1 1 1.0 5\n\
            /impulse/read 2 3 1 10 0 0 2 \"st.wav\"\n";
        let c = Config::parse(&dir.path().join("test.conf"), text).unwrap();
        assert_eq!(
            (c.inputs, c.outputs, c.partition, c.max_len),
            (2, 3, 256, 16)
        );
        assert_eq!(c.client.as_deref(), Some("myconv"));
        assert_eq!(c.rate, Some(44100));
        assert_eq!(c.input_names, ["left", "in-2"]);
        assert_eq!(c.output_names, ["out-1", "out-2", "rear"]);
        assert_eq!(c.connect_inputs[0], ["system:capture_1"]);
        assert_eq!(
            c.connect_outputs[2],
            ["system:playback_1", "system:playback_2"]
        );
        // 3 at 0 (dirac), 0.5 * a[1..5] from 2, 1 at 5 (dirac added after the copy).
        let want11 = [3.0, 0.0, 1.0, 1.5, 2.0, 3.5];
        assert_eq!(c.irs.get(0, 0).unwrap(), &want11);
        // The copy shares the data, later additions included.
        assert_eq!(c.irs.get(1, 1).unwrap(), &want11);
        // Delay 10 in a 16-frame convolver: 6 frames of channel 2 fit, with a note.
        let ir23 = c.irs.get(1, 2).unwrap();
        assert_eq!(ir23.len(), 16);
        assert_eq!(&ir23[10..], &b[..6]);
        assert!(ir23[..10].iter().all(|&x| x == 0.0));
        assert_eq!(c.notes.len(), 1);
        assert!(c.notes[0].contains("test.conf:12") && c.notes[0].contains("truncated"));
        assert!(c.irs.get(0, 1).is_none());
        let spec = c.to_spec().unwrap();
        assert_eq!(spec.client_name, "myconv");
        assert_eq!(spec.ir_rate, Some(44100));
    }

    #[test]
    fn errors_name_the_file_the_line_and_what_was_expected() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let new = "/convolver/new 1 1 64 1000\n";
        let e = err(d, "/impulse/dirac 1 1 1 0\n");
        assert!(
            e.contains("test.conf:1") && e.contains("/convolver/new must come first"),
            "{e}"
        );
        let e = err(d, &format!("{new}/impulse/hilbert 1 1 1 100 64\n"));
        assert!(
            e.contains("test.conf:2") && e.contains("/impulse/hilbert is not supported"),
            "{e}"
        );
        let e = err(d, &format!("{new}\n/reverb/new 1\n"));
        assert!(
            e.contains("test.conf:3") && e.contains("unknown command '/reverb/new'"),
            "{e}"
        );
        let e = err(d, &format!("{new}/impulse/dirac 2 1 1 0\n"));
        assert!(
            e.contains(":2:") && e.contains("input 2 does not exist (inputs are 1..=1)"),
            "{e}"
        );
        let e = err(d, &format!("{new}/impulse/dirac 1 1 x 0\n"));
        assert!(e.contains("parameter 3 (gain) is 'x'"), "{e}");
        let e = err(
            d,
            &format!("{new}/impulse/read 1 1 1 0 0 0 1 missing.wav\n"),
        );
        assert!(
            e.contains("test.conf:2") && e.contains("missing.wav"),
            "{e}"
        );
        let e = err(d, &format!("{new}impulse/dirac 1 1 1 0\n"));
        assert!(e.contains(":2:") && e.contains("is not a command"), "{e}");
        let e = err(d, "/convolver/new 1 1 100 1000\n");
        assert!(
            e.contains("partition size 100 must be a power of two"),
            "{e}"
        );
        let e = err(d, &format!("{new}/jack/client late\n"));
        assert!(e.contains("must come before /convolver/new"), "{e}");
        let e = err(d, &format!("{new}/impulse/dirac 1 1 0 0\n"));
        assert!(e.contains("no impulse response was loaded"), "{e}");
        let e = err(d, &format!("{new}/impulse/read 1 1 1 0 0 0 1 \"open.wav\n"));
        assert!(e.contains("quoted name is not closed"), "{e}");
        wav(&d.join("a.wav"), 48000, &[vec![1.0; 4]]);
        wav(&d.join("b.wav"), 44100, &[vec![1.0; 4]]);
        let e = err(
            d,
            &format!("{new}/impulse/read 1 1 1 0 0 0 1 a.wav\n/impulse/read 1 1 1 0 0 0 2 a.wav\n"),
        );
        assert!(
            e.contains(":3:") && e.contains("channel 2 does not exist (the file has 1)"),
            "{e}"
        );
        let e = err(
            d,
            &format!("{new}/impulse/read 1 1 1 0 0 0 1 a.wav\n/impulse/read 1 1 1 0 0 0 1 b.wav\n"),
        );
        assert!(
            e.contains(":3:") && e.contains("44100 Hz") && e.contains("line 2 is 48000 Hz"),
            "{e}"
        );
        let e = Config::load(&d.join("none.conf")).unwrap_err().to_string();
        assert!(e.contains("none.conf:0: cannot read"), "{e}");
    }
}
