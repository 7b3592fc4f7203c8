//! Raw items through a file descriptor: [`FdSource`] (`stdin_source`) and [`FdSink`]
//! (`stdout_sink`), so that a graph sits in a shell pipeline:
//! `rtl_sdr -f 100e6 -s 2.048e6 - | sluice run fm.toml` or `sluice run g.toml | sox …`.
//!
//! Items are little-endian, back to back (GNU Radio's raw format, as `file_source` reads). The
//! node never blocks in a read or write: it waits for the descriptor with `poll` for at most
//! [`WAIT`] at a time, so a stop request (Ctrl-C) and the other nodes of its thread are served
//! while a pipe is quiet.
//!
//! **Real time.** By default the source is as slow as the graph: when the output queue is full
//! it stops reading and the pipe pushes back on the program writing it. A program like
//! `rtl_sdr` cannot wait (its USB buffers overflow and it drops samples where nobody sees it),
//! so `realtime = true` keeps reading: what finds no room in the queue is dropped here,
//! counted, and the first item after each gap carries the tag [`OVERFLOW`] with the number of
//! items dropped just before it. The count is reported when the node ends.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use sluice_kernels::GapCounter;
use sluice_runtime::{Item, Node, NodeError, Ports, TagPolicy, TagValue, Work, WorkIo};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::marker::PhantomData;
use std::os::fd::AsFd;
use std::time::Duration;

/// The tag a real-time source puts on the first item after items were lost (value: `U64`,
/// the number of items lost just before it).
pub const OVERFLOW: &str = "rt_overflow";

/// The longest a node waits for its descriptor in one `work` call.
pub const WAIT: Duration = Duration::from_millis(10);

/// Bytes dropped per read while the queue is full (real-time source).
const DROP_CHUNK: usize = 1 << 16;

/// Bytes written per call to a pipe: at most what `poll` promised room for, so that the
/// write does not block.
const PIPE_CHUNK: usize = 4096;

/// Whether `file` is ready to read (`readable`) or write within [`WAIT`].
fn ready(file: &File, readable: bool) -> Result<bool, NodeError> {
    let flags = if readable {
        PollFlags::IN
    } else {
        PollFlags::OUT
    };
    let mut fds = [PollFd::new(file, flags)];
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: WAIT.as_nanos() as _,
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(NodeError::caused("waiting for a descriptor", e)),
    }
}

/// Reads raw items from a descriptor (see the module docs).
#[derive(Debug)]
pub struct FdSource<T> {
    file: File,
    name: String,
    realtime: bool,
    /// Bytes of an item cut by a read, carried to the next.
    carry: Vec<u8>,
    scratch: Vec<u8>,
    gaps: GapCounter,
    _items: PhantomData<T>,
}

impl<T: Item> FdSource<T> {
    /// Reads `file` (any readable descriptor: a pipe, a socket, a file), called `name` in
    /// messages; `realtime` drops what finds no room instead of waiting.
    pub fn new(file: File, name: &str, realtime: bool) -> Self {
        FdSource {
            file,
            name: name.to_string(),
            realtime,
            carry: Vec::with_capacity(std::mem::size_of::<T>()),
            scratch: if realtime {
                vec![0; DROP_CHUNK]
            } else {
                Vec::new()
            },
            gaps: GapCounter::new(),
            _items: PhantomData,
        }
    }

    /// Reads this process's standard input.
    pub fn stdin(realtime: bool) -> Result<Self, NodeError> {
        let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
        Ok(FdSource::new(File::from(fd), "standard input", realtime))
    }

    /// Items dropped so far (real-time mode).
    pub fn dropped(&self) -> u64 {
        self.gaps.items()
    }

    fn read_error(&self, e: std::io::Error) -> NodeError {
        NodeError::caused(format!("reading {}", self.name), e)
    }

    /// Reads into the scratch buffer and drops the whole items read.
    fn drop_some(&mut self) -> Result<Work, NodeError> {
        if !ready(&self.file, true)? {
            return Ok(Work::Progress);
        }
        let size = std::mem::size_of::<T>();
        let partial = self.carry.len();
        match self.file.read(&mut self.scratch[..DROP_CHUNK - size]) {
            Ok(0) => Ok(Work::Progress), // the end is seen once there is room again
            Ok(got) => {
                let total = partial + got;
                self.gaps.lose((total / size) as u64);
                sluice_runtime::count(sluice_runtime::Trouble::Dropped, (total / size) as u64);
                let rest = total % size;
                // The new partial item is the last `rest` bytes of carry + what came in.
                if rest <= got {
                    self.carry.clear();
                    self.carry.extend_from_slice(&self.scratch[got - rest..got]);
                } else {
                    self.carry.extend_from_slice(&self.scratch[..got]);
                }
                Ok(Work::Progress)
            }
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {
                Ok(Work::Progress)
            }
            Err(e) => Err(self.read_error(e)),
        }
    }
}

impl<T: Item> Node for FdSource<T> {
    fn ports(&self) -> Ports {
        Ports::new().output::<T>("out")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        if io.stop_requested() {
            return Ok(Work::Done);
        }
        let out = io.outputs.get::<T>(0)?;
        let written = out.items_written();
        let Some(space) = out.reserve(1)? else {
            if self.realtime {
                return self.drop_some();
            }
            return Ok(Work::NeedOutput { port: 0, items: 1 });
        };
        if !ready(&self.file, true)? {
            return Ok(Work::Progress);
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(space);
        let partial = self.carry.len();
        bytes[..partial].copy_from_slice(&self.carry);
        let got = match self.file.read(&mut bytes[partial..]) {
            Ok(got) => got,
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {
                return Ok(Work::Progress)
            }
            Err(e) => return Err(self.read_error(e)),
        };
        if got == 0 {
            if partial != 0 {
                return Err(NodeError::msg(format!(
                    "{} ended inside an item ({partial} of {} bytes)",
                    self.name,
                    std::mem::size_of::<T>()
                )));
            }
            return Ok(Work::Done);
        }
        let size = std::mem::size_of::<T>();
        let filled = partial + got;
        self.carry.clear();
        self.carry
            .extend_from_slice(&bytes[filled / size * size..filled]);
        if filled >= size {
            if let Some(lost) = self.gaps.take_pending() {
                out.add_tag(written, OVERFLOW, TagValue::U64(lost));
            }
        }
        out.commit(filled / size);
        Ok(Work::Progress)
    }

    fn warnings(&mut self) -> Vec<String> {
        let lost = self
            .gaps
            .summary("overflow", "dropped: the graph fell behind");
        lost.map(|s| format!("{}: {s}", self.name))
            .into_iter()
            .collect()
    }
}

/// Writes raw items to a descriptor (see the module docs). A reader that goes away (a broken
/// pipe, as `… | head -c 1000` does) ends the node and is reported as a warning.
#[derive(Debug)]
pub struct FdSink<T> {
    file: File,
    name: String,
    pipe: bool,
    /// Bytes of the first item in the window already written.
    offset: usize,
    items: u64,
    warnings: Vec<String>,
    _items: PhantomData<T>,
}

impl<T: Item> FdSink<T> {
    /// Writes to `file`, called `name` in messages.
    pub fn new(file: File, name: &str) -> Self {
        let pipe = file.metadata().map_or(true, |m| !m.is_file());
        FdSink {
            file,
            name: name.to_string(),
            pipe,
            offset: 0,
            items: 0,
            warnings: Vec::new(),
            _items: PhantomData,
        }
    }

    /// Writes this process's standard output.
    pub fn stdout() -> Result<Self, NodeError> {
        let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
        Ok(FdSink::new(File::from(fd), "standard output"))
    }
}

impl<T: Item> Node for FdSink<T> {
    fn ports(&self) -> Ports {
        Ports::new().input::<T>("in")
    }

    fn work(&mut self, io: &mut WorkIo<'_>) -> Result<Work, NodeError> {
        let stopping = io.stop_requested();
        let input = io.inputs.get::<T>(0)?;
        let Some(window) = input.window(1)? else {
            return Ok(Work::NeedInput { port: 0, items: 1 });
        };
        if window.is_empty() {
            return Ok(Work::Done);
        }
        if self.pipe && !ready(&self.file, false)? {
            // A reader that stopped reading must not hold a stopping graph forever.
            return Ok(if stopping { Work::Done } else { Work::Progress });
        }
        let bytes: &[u8] = bytemuck::cast_slice(window);
        let end = if self.pipe {
            (self.offset + PIPE_CHUNK).min(bytes.len())
        } else {
            bytes.len()
        };
        match self.file.write(&bytes[self.offset..end]) {
            Ok(n) => {
                let size = std::mem::size_of::<T>();
                let total = self.offset + n;
                self.offset = total % size;
                input.consume(total / size);
                self.items += (total / size) as u64;
                Ok(Work::Progress)
            }
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                self.warnings.push(format!(
                    "the reader of {} went away after {} items",
                    self.name, self.items
                ));
                Ok(Work::Done)
            }
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {
                Ok(Work::Progress)
            }
            Err(e) => Err(NodeError::caused(format!("writing {}", self.name), e)),
        }
    }

    fn tag_policy(&self) -> TagPolicy {
        TagPolicy::Drop
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests;
