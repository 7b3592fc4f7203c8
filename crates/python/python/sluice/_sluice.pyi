"""Type stubs of sluice's native module (re-exported by `sluice`)."""

from os import PathLike
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

DONE: int
"""Returned by a general block's `work` when it has finished."""

Tag = Tuple[int, str, Any]
"""A stream tag: (absolute item index, key, value)."""

class SluiceError(Exception):
    """Base class of every error sluice raises. `node`, `port` and `param` name what the
    error concerns (None where it does not apply)."""
    node: Optional[str]
    port: Optional[str]
    param: Optional[str]

class GraphFileError(SluiceError):
    """A graph file (or text) that could not be loaded; `errors` lists every mistake as dicts
    of origin, line, column, node and message; `line` is the first mistake's line."""
    errors: List[Dict[str, Any]]
    line: Optional[int]

class UnknownBlockError(SluiceError):
    """A block type no registry declares (`sluice.blocks()` lists them)."""

class ParameterError(SluiceError):
    """A parameter the block does not declare, of the wrong kind, out of range, or missing."""

class PortError(SluiceError):
    """A port a node does not have, or an end that does not name one."""

class ItemTypeError(SluiceError):
    """Ports of different item types or vector lengths, or an array of another dtype."""

class EdgeError(SluiceError):
    """An edge that cannot be made: an input already fed, a capacity of 0."""

class GraphError(SluiceError):
    """A graph that cannot run: a name used twice, an unconnected port, a cycle, a graph
    already run, a node that does not exist."""

class NodeError(SluiceError):
    """A node failed while the graph ran; `node` names it. For a Python block the message
    holds the traceback and `__cause__` is the exception."""

class ControlError(SluiceError):
    """A run-time change refused: no such node or parameter, a bad value, a graph that ended."""

class NodeRef:
    """A node of a graph, as `Graph.add` returns it; `node["port"]` is `"node.port"`."""
    name: str
    def __getitem__(self, port: str) -> str: ...

End = Union[NodeRef, str]

class Graph:
    """A sluice graph: nodes (blocks) and the edges between their ports. A graph runs once."""
    def __init__(self) -> None: ...
    @staticmethod
    def from_file(path: Union[str, PathLike[str]], set: Optional[Dict[str, Any]] = None) -> Graph:
        """Loads a graph file; `set` overrides parameters (`{"src.frequency": 440}`)."""
    @staticmethod
    def from_str(text: str, origin: str = "<string>", set: Optional[Dict[str, Any]] = None) -> Graph:
        """Loads a graph from a graph file's text; `origin` names it in errors."""
    def add(self, block: Union[str, Any], name: Optional[str] = None, **params: Any) -> NodeRef:
        """Adds a block type by name (parameters as keywords), a `sluice.Block`, an
        `ArraySource` or an `ArraySink`. A block type's parameters that follow the stream (a
        filter's `sample_rate`) take its rate as in a graph file; one that cannot be built
        without it is built by the `connect` that brings it."""
    def connect(self, source: End, destination: End, capacity: Optional[int] = None) -> None:
        """Connects `"node.port"` (or a node's only output) to `"node.port"` (or a node's
        only input), following rates through the graph so far: a given rate that disagrees
        with the stream's raises `ParameterError`, inputs at different rates `GraphError`."""
    def collect(self, port: End) -> ArraySink:
        """Adds an `ArraySink` fed by output `port` and returns it."""
    def tap(self, port: End, max_items: int = 65536) -> None:
        """Lets `Handle.read(port)` read output `port` while the graph runs."""
    def run(self, scheduler: Union[None, str, int] = None) -> List[Dict[str, Any]]:
        """Runs to the end and returns per-node statistics; Ctrl-C stops gracefully and
        raises KeyboardInterrupt. `scheduler`: "auto", "thread_per_node" or a thread count."""
    def start(self, scheduler: Union[None, str, int] = None, read: Optional[Sequence[End]] = None, http: Optional[str] = None) -> Handle:
        """Starts in the background; `read` taps outputs for `Handle.read`; `http`
        ("127.0.0.1:0") serves the web console, whose address is `Handle.console_url`."""
    def check(self) -> None:
        """Checks the graph (rates included) without running it (consumes it)."""
    @property
    def nodes(self) -> List[str]:
        """The nodes' names."""

class Handle:
    """A graph running in the background."""
    def stop(self) -> None:
        """Asks the graph to stop gracefully."""
    def wait(self, timeout: Optional[float] = None) -> Optional[List[Dict[str, Any]]]:
        """Waits for the end (None if still running after `timeout` seconds); returns the
        statistics or raises the run's error."""
    @property
    def console_url(self) -> Optional[str]:
        """The web console's address (token in the fragment), or None without `http=`."""
    @property
    def running(self) -> bool:
        """Whether the graph still runs."""
    def stats(self) -> List[Dict[str, Any]]:
        """Per-node counts (full statistics once ended)."""
    @property
    def progress(self) -> Optional[float]:
        """0 to 1 by the furthest bounded node; None for a graph without one."""
    def set(self, target: str, value: Any) -> int:
        """Changes `"node.param"` while running; returns the item offset where it took
        effect."""
    def read(self, port: str, items: int = 4096) -> Reader:
        """Iterates over a tapped output in chunks of `items`: (read-only view, tags)."""

class Reader(Iterator[Tuple[npt.NDArray[Any], List[Tag]]]):
    """Chunks of a tapped output: each a read-only numpy view of queue memory (no copy),
    valid until the next iteration, with the tags in it."""
    port: str
    def __iter__(self) -> Reader: ...
    def __next__(self) -> Tuple[npt.NDArray[Any], List[Tag]]: ...

class QueueMemory:
    """The base object of a view of queue memory: holds the mapping alive."""
    address: int
    queue: Optional[Tuple[int, int]]
    @property
    def __array_interface__(self) -> Dict[str, Any]: ...

class ArraySource:
    """Streams a numpy array (or an iterator of arrays) into a graph."""
    dtype: str
    def __init__(
        self,
        data: Any,
        dtype: Any = None,
        vlen: int = 1,
        tags: Optional[Sequence[Tag]] = None,
    ) -> None: ...

class ArraySink:
    """Collects a stream into a numpy array (`data`) and its tags (`tags`)."""
    dtype: str
    def __init__(self, dtype: Any, vlen: int = 1) -> None: ...
    @property
    def data(self) -> npt.NDArray[Any]: ...
    @property
    def tags(self) -> List[Tag]: ...
    def __len__(self) -> int: ...

class Convolver:
    """Streaming partitioned convolution: push samples, get as many convolved samples."""
    def __init__(self, ir: npt.ArrayLike, channels: int = 1, block: int = 1024) -> None: ...
    def process(self, x: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Convolves the next samples."""
    def finish(self) -> npt.NDArray[np.float32]:
        """Ends the input and returns the tail."""

def convolve(x: npt.ArrayLike, ir: npt.ArrayLike, mode: str = "full", threads: Optional[int] = None) -> npt.NDArray[np.float32]:
    """Convolution as numpy/scipy define it ("full", "same", "valid"), several channels at
    once (on `threads` threads, default one per core), with few large FFTs (overlap-add), in
    float32."""

def resample_poly(
    x: npt.ArrayLike,
    up: int,
    down: int,
    window: Union[None, str, Tuple[str, float]] = None,
) -> npt.NDArray[Any]:
    """Resamples by up/down along the last axis as scipy.signal.resample_poly does (same
    filter, alignment and length), on sluice's polyphase resampler; real input gives float32,
    complex input complex64."""

def channelize(
    x: npt.ArrayLike,
    channels: int,
    decimation: Optional[int] = None,
    taps: Optional[npt.ArrayLike] = None,
) -> npt.NDArray[np.complex64]:
    """Splits a complex signal into `channels` channels (a polyphase filter bank): shape
    (channels, frames), channel k shifted to 0 Hz, low-passed by `taps` and decimated by
    `decimation` (default: channels)."""

def firwin(
    numtaps: int,
    cutoff: Union[float, Sequence[float]],
    window: Union[None, str, Tuple[str, float]] = None,
    pass_zero: Optional[bool] = None,
    fs: float = 2.0,
) -> npt.NDArray[np.float32]:
    """Windowed-sinc low-pass or band-pass in scipy.signal.firwin's conventions."""

def blocks_json() -> str:
    """Every block type's declaration as JSON."""

def describe_block(name: str) -> Optional[str]:
    """One block type described in full, or None."""
