"""sluice: streaming signal processing graphs, run natively, built and extended from Python.

Load a graph file and run it::

    import sluice
    sluice.Graph.from_file("examples/default.toml", set={"src.frequency": 440}).run()

Build one in code, feed it numpy and collect the result::

    g = sluice.Graph()
    src = g.add(sluice.ArraySource(x))                     # x: a complex64 array
    lp = g.add("fir", name="lp", design="lowpass", num_taps=63, cutoff=0.1, item="c32")
    g.connect(src, lp)
    y = g.collect("lp.out")
    g.run()
    y.data                                                 # the filtered stream, as numpy

Write a block in Python by subclassing `Block`; read a running graph's output without copies
with `Graph.start(read=["lp.out"])` and `Handle.read`. `sluice.blocks()` describes every
block type.
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._sluice import (  # noqa: F401  (re-exported)
    DONE,
    ArraySink,
    ArraySource,
    Convolver,
    ControlError,
    EdgeError,
    Graph,
    GraphError,
    GraphFileError,
    Handle,
    ItemTypeError,
    NodeError,
    NodeRef,
    ParameterError,
    PortError,
    QueueMemory,
    Reader,
    SluiceError,
    UnknownBlockError,
    convolve,
    firwin,
)
from . import _sluice

__all__ = [
    "DONE",
    "ArraySink",
    "ArraySource",
    "Block",
    "Convolver",
    "ControlError",
    "EdgeError",
    "Graph",
    "GraphError",
    "GraphFileError",
    "Handle",
    "ItemTypeError",
    "NodeError",
    "NodeRef",
    "ParameterError",
    "PortError",
    "QueueMemory",
    "Reader",
    "SluiceError",
    "UnknownBlockError",
    "blocks",
    "convolve",
    "describe",
    "firwin",
]

Port = Union[Tuple[str, str], Tuple[str, str, int]]
"""A port declaration: (name, dtype) or (name, dtype, vlen)."""


def blocks() -> List[Dict[str, Any]]:
    """Every block type a graph can use, from the blocks' declarations: a list of dicts with
    `name`, `family`, `help`, `ports`, `params` (name, kind, default, range, unit, settable,
    help) and `example`, as `sluice blocks --json` prints them."""
    return _json.loads(_sluice.blocks_json())


def describe(name: str) -> str:
    """One block type in full (ports, parameters, an example), as `sluice blocks NAME`.
    Raises `UnknownBlockError` for a name no block has."""
    text = _sluice.describe_block(name)
    if text is None:
        raise UnknownBlockError(f"unknown block type '{name}' (sluice.blocks() lists them)")
    return text


class Block:
    """Base class of blocks written in Python.

    Declare the ports and the rate as class attributes and write `work`::

        class Double(sluice.Block):
            inputs = [("in", "f32")]
            outputs = [("out", "f32")]
            def work(self, inputs, outputs):
                outputs[0][:] = inputs[0] * 2

    - `inputs`, `outputs`: lists of `(name, dtype)` or `(name, dtype, vlen)`; dtype is one of
      complex64/c32, float32/f32, int16/i16, uint8/u8. A port of vlen > 1 is a 2-D array
      (vectors × vlen).
    - `rate`: "sync" (one output per input, the default), ("decimate", n) (one output per n
      inputs), ("interpolate", n) (n outputs per input) or "general". For the first three the
      arrays handed to `work` hold exactly that ratio and `work` must fill every output item;
      its return value is ignored. A "general" block gets whatever is available and returns
      `(consumed, produced)` (an int for every port, or a list per port) or `sluice.DONE`.
    - `items_per_call`: the most items (vectors) one call gets per port (None: no limit).
    - `settable`: `{name: help}` of attributes `Handle.set("node.name", value)` may change
      while the graph runs (between two calls of `work`).
    - `propagate_tags`: for the fixed-rate kinds, input tags go to every output at the
      corresponding item (scaled by the rate), as GNU Radio does (default True).

    `work(self, inputs, outputs)` gets numpy views straight into the queues' memory: inputs are
    read-only, outputs are written in place. They are lent for the call only: keeping a view of
    an output (or a slice of one) after `work` returns is an error naming the node (copy what
    you keep). The GIL is
    held only during `work`; an exception in `work` stops the graph and is raised by `run()` /
    `wait()` as `NodeError`, with the traceback and the node's name.
    """

    _sluice_block = True
    inputs: Sequence[Port] = [("in", "f32")]
    outputs: Sequence[Port] = [("out", "f32")]
    rate: Union[str, Tuple[str, int]] = "sync"
    items_per_call: Optional[int] = None
    settable: Dict[str, str] = {}
    propagate_tags: bool = True

    _sluice_in_tags: Any = None
    _sluice_out_tags: Any = None

    def work(self, inputs: List[Any], outputs: List[Any]) -> Any:
        """Process one call's items; see the class docs."""
        raise NotImplementedError(f"{type(self).__name__} must define work(inputs, outputs)")

    def tags(self, port: int = 0) -> List[Tuple[int, str, Any]]:
        """The tags on input `port` within this call's array, as `(offset, key, value)`, the
        offset counted from the array's first item (vector)."""
        if self._sluice_in_tags is None:
            raise RuntimeError("tags() is only available inside work()")
        return self._sluice_in_tags[port]

    def add_tag(self, port: int, offset: int, key: str, value: Any) -> None:
        """Tags item (vector) `offset` of output `port`'s array in this call with `key` =
        `value` (None, bool, int, float, complex, str, tuple or list)."""
        if self._sluice_out_tags is None:
            raise RuntimeError("add_tag() is only available inside work()")
        self._sluice_out_tags.append((port, offset, key, value))
