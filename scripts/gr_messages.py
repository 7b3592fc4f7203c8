#!/usr/bin/env python3
"""GNU Radio 3.10's PDU chain, the peer of `sluice bench messages`.

Flowgraph (GNU Radio's default thread-per-block scheduler):

    vector_source_c(one packet of --size samples, repeat=True)
      -> stream_to_tagged_stream(--size, "packet_len") -> pdu.tagged_stream_to_pdu(c32)
      -> pdu.add_system_time("system_time") -> 3 x pdu.pdu_set(k_i, i)
      -> pdu.time_delta("time_delta_ms", "system_time") -> blocks.message_debug (store port)

The main thread polls message_debug's num_messages() every 0.5 ms; the rate is `--pdus` over
the time from tb.start() until that many were stored. Afterwards (outside the timing) it reads
each stored PDU's `time_delta_ms` (the milliseconds time_delta measured since add_system_time
stamped it) for the latency p50 and p99. message_debug keeps every PDU, so a run holds
`--pdus` x `--size` x 8 bytes. (A Python message sink in its place halves GNU Radio's rate at
64 samples: it is the GIL, not the chain, so the C++ sink it is.) GNU Radio's message queues
are unbounded: when a stage is slower than the one before it, the queue in front of it grows
and the latency with it; the figures are the latency under full load.

Prints one JSON document: {"size", "pdus", "pdus_per_s": [...], "p50_ms": [...],
"p99_ms": [...], "version"} with one figure per run.

Installs nothing: without GNU Radio it says which Debian package to install and exits 2.
GNU Radio's Python modules live in Debian's python3 (/usr/bin/python3), not in other
interpreters.
"""

import argparse
import json
import os
import sys
import time


def percentile(sorted_values, q):
    """The q-quantile (0..1) of sorted values, nearest rank."""
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[k]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="samples per PDU")
    parser.add_argument("--pdus", type=int, default=100_000, help="PDUs to count per run")
    parser.add_argument("--runs", type=int, default=1, help="runs to time")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run at most")
    args = parser.parse_args()
    # Debian's /etc/gnuradio/conf.d/gnuradio-runtime.conf sets log_level = debug, at which
    # time_delta writes a line for every PDU; a benchmark measures the blocks, not the logger.
    os.environ.setdefault("GR_CONF_LOG_LOG_LEVEL", "info")
    try:
        import pmt
        from gnuradio import blocks, gr, pdu
    except ImportError as e:
        print(
            f"GNU Radio is not importable ({e}); install it with `apt-get install gnuradio` "
            "and run this script with /usr/bin/python3",
            file=sys.stderr,
        )
        sys.exit(2)

    delta_key = pmt.intern("time_delta_ms")

    rates, p50s, p99s = [], [], []
    for _ in range(args.runs):
        tb = gr.top_block()
        src = blocks.vector_source_c([complex(i, -i) for i in range(args.size)], True)
        tag = blocks.stream_to_tagged_stream(gr.sizeof_gr_complex, 1, args.size, "packet_len")
        to_pdu = pdu.tagged_stream_to_pdu(gr.types.complex_t, "packet_len")
        stamp = pdu.add_system_time(pmt.intern("system_time"))
        sets = [pdu.pdu_set(pmt.intern(f"k{i}"), pmt.from_long(i)) for i in range(3)]
        delta = pdu.time_delta(delta_key, pmt.intern("system_time"))
        delta.set_log_level("info")
        tb.connect(src, tag, to_pdu)
        # GNU Radio 3.10 names these ports "pdus" (tagged_stream_to_pdu, pdu_set) or "pdu"
        # (add_system_time, time_delta).
        tb.msg_connect((to_pdu, "pdus"), (stamp, "pdu"))
        tb.msg_connect((stamp, "pdu"), (sets[0], "pdus"))
        for a, b in zip(sets, sets[1:]):
            tb.msg_connect((a, "pdus"), (b, "pdus"))
        tb.msg_connect((sets[-1], "pdus"), (delta, "pdu"))
        sink = blocks.message_debug(False)
        tb.msg_connect((delta, "pdu"), (sink, "store"))
        start = time.perf_counter()
        tb.start()
        deadline = start + args.timeout
        while sink.num_messages() < args.pdus and time.perf_counter() < deadline:
            time.sleep(0.0005)
        end = time.perf_counter()
        counted = sink.num_messages()
        tb.stop()
        tb.wait()
        if counted < args.pdus:
            print(f"only {counted} of {args.pdus} PDUs came within {args.timeout} s",
                  file=sys.stderr)
            sys.exit(1)
        rates.append(args.pdus / (end - start))
        # Read after the clock stopped: each stored PDU's time_delta_ms.
        d = sorted(
            pmt.to_double(pmt.dict_ref(pmt.car(sink.get_message(i)), delta_key, pmt.PMT_NIL))
            for i in range(args.pdus)
        )
        p50s.append(percentile(d, 0.50))
        p99s.append(percentile(d, 0.99))
        del tb, sink
    print(json.dumps({
        "size": args.size,
        "pdus": args.pdus,
        "pdus_per_s": rates,
        "p50_ms": p50s,
        "p99_ms": p99s,
        "version": gr.version(),
    }))


if __name__ == "__main__":
    main()
