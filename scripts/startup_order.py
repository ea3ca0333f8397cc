#!/usr/bin/env python3
"""Writes the agent server's code order (for the linker).

Builds the release agent server as `cargo build --release` does (symbol
names carry hashes of the build's configuration), then, round after round,
links it from that build's objects, with symbols, laid out by the current
list, and runs a short `openhands-bench` workload against it under `perf record -e page-faults` (start, a second idle, conversations
created, run one at a time and five at once, a WebSocket fan-out, all
deleted), and adds the functions whose code pages faulted, in the order
first touched: start-up first, then idle, then what a conversation runs.
`crates/agent-server/build.rs` hands the list to the linker
(`--symbol-ordering-file`), which lays those functions out next to each
other at the front of `.text`: the code a server runs then fills a few
megabytes instead of being spread over the whole 50 MB of code, where
every touched function maps its 64 kB neighbourhood (the kernel's
fault-around) into the process.

A fault only names the first function touched in a neighbourhood, so one
round misses the functions a neighbour's fault had already mapped; each
round's server is laid out by the last round's list, so what it still
touches elsewhere faults and is added. Rounds relink the objects of one
build (`-C save-temps`), which takes a second. Run it again after a
toolchain or dependency upgrade (symbol names change; a stale list costs
memory, never correctness): the benchmark's idle RSS row shows when.

    python3 scripts/startup_order.py [--rounds 20] [--keep PATH]
"""

import argparse
import bisect
import json
import os
import shlex
import subprocess
import sys
import tempfile

from resident_code import symbols


def record(binary, bench, data):
    """Runs a short benchmark of the server `binary` (start, a second idle,
    conversations created, run one at a time and five at once, a WebSocket
    fan-out, all deleted) under perf, recording every page fault."""
    subprocess.run(
        ["perf", "record", "-q", "--no-buildid-cache", "-e", "page-faults", "-c", "1", "-d", "-o", data, "--",
         bench, "--ours", binary, "--no-reference", "--clean-home", "--conversations", "20",
         "--runs", "5", "--throughput-runs", "20", "--throughput-min-secs", "0", "--concurrency", "5",
         "--fanout-events", "10",
         "--fanout-burst", "20", "--settle-secs", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
    )


def faulting_addresses(binary, data):
    """Addresses (ELF virtual) in `binary` that faulted, in time order."""
    name = os.path.realpath(binary)
    out = subprocess.run(
        ["perf", "script", "-i", data, "--show-mmap-events", "-F", "addr,dso"],
        capture_output=True, text=True, check=True,
    ).stdout
    bias = None
    addresses = []
    for line in out.splitlines():
        if "PERF_RECORD_MMAP" in line and line.rstrip().endswith(name) and " @ 0 " in line:
            bias = int(line.split("[", 1)[1].split("(", 1)[0], 16)
        elif bias is not None and f"({name})" in line:
            addresses.append(int(line.split()[0], 16) - bias)
    return addresses


def text_symbols(binary):
    """Sorted (start, end, mangled name) of the functions in `binary`."""
    return [
        (address, address + size, name)
        for address, size, name in symbols(binary, demangle=False, types="tTW")
    ]


ORDER_FILE = os.path.join(os.path.dirname(__file__), "..", "crates", "agent-server", "startup-order.txt")


def link_command():
    """The release server's link command (argv, env) from a build that
    keeps its objects, and the path it writes."""
    # Symbol names carry hashes of the build's configuration: build exactly
    # as `cargo build --release` does (no RUSTFLAGS, the profile as it is),
    # and keep the symbols only in the relinked binaries, which are ours.
    env = {
        k: v for k, v in os.environ.items()
        if k not in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS") and not k.startswith("CARGO_PROFILE_")
    }
    # rustc prints the link command only when it runs: make the binary stale.
    main_rs = os.path.join(os.path.dirname(ORDER_FILE), "src", "main.rs")
    os.utime(main_rs)
    out = subprocess.run(
        ["cargo", "rustc", "--release", "-p", "openhands-agent-server",
         "--bin", "openhands-agent-server", "--", "--print", "link-args", "-C", "save-temps"],
        env=env, capture_output=True, text=True,
    )
    for line in (out.stdout + out.stderr).splitlines():
        if '"-o"' in line and "openhands_agent_server" in line:
            words = shlex.split(line)
            assignments = {}
            while words and "=" in words[0] and not words[0].startswith("-"):
                key, value = words.pop(0).split("=", 1)
                assignments[key] = value
            argv = [
                w for w in words
                if not w.startswith("-Wl,--symbol-ordering-file=")
                and w not in ("-s", "-Wl,-s", "-Wl,--strip-all", "-Wl,--strip-debug")
            ]
            if "-Wl,-z,pack-relative-relocs" not in argv:
                argv.append("-Wl,-z,pack-relative-relocs")
            argv.append("-Wl,--no-warn-symbol-ordering")
            return argv, dict(env, **assignments)
    sys.exit("no link command in the build's output:\n" + out.stderr[-2000:])


def build_bench(env):
    """The release benchmark driver (built if needed): the workload."""
    out = subprocess.run(
        ["cargo", "build", "--release", "-p", "openhands-bench", "--message-format", "json"],
        env=env, capture_output=True, text=True, check=True,
    )
    for line in out.stdout.splitlines():
        if '"executable"' in line and "openhands-bench" in line:
            executable = json.loads(line).get("executable")
            if executable:
                return executable
    sys.exit("cargo built no openhands-bench")


def relink(argv, env, output, order):
    """Links `output` from the kept objects, laid out by the list `order`."""
    argv = list(argv)
    argv[argv.index("-o") + 1] = output
    if order:
        argv.append(f"-Wl,--symbol-ordering-file={order}")
    subprocess.run(argv, env=env, check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=ORDER_FILE)
    parser.add_argument("--keep", help="also link the server laid out by the final list here")
    args = parser.parse_args()

    argv, env = link_command()
    bench = build_bench(env)
    order = []
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "openhands-agent-server")
        listed = os.path.join(tmp, "order.txt")
        for round in range(1, args.rounds + 1):
            relink(argv, env, binary, listed if order else None)
            syms = text_symbols(binary)
            starts = [s[0] for s in syms]
            data = os.path.join(tmp, "perf.data")
            record(binary, bench, data)
            addresses = faulting_addresses(binary, data)
            seen = set(order)
            added = 0
            code_faults = 0
            for address in addresses:
                i = bisect.bisect_right(starts, address) - 1
                if i >= 0 and syms[i][0] <= address < syms[i][1]:
                    code_faults += 1
                    if syms[i][2] not in seen:
                        seen.add(syms[i][2])
                        order.append(syms[i][2])
                        added += 1
            with open(listed, "w") as f:
                f.write("".join(name + "\n" for name in order))
            print(
                f"round {round}: {len(addresses)} faults in the binary, {code_faults} in its code, "
                f"{added} functions added"
            )
        if args.keep:
            relink(argv, env, args.keep, listed)
    with open(args.out, "w") as f:
        f.write(
            "# Functions the agent server runs from start through a short benchmark, in\n"
            "# the order first touched; written by scripts/startup_order.py, read by build.rs.\n"
        )
        f.write("".join(name + "\n" for name in order))
    print(f"{len(order)} functions listed in {args.out}")


if __name__ == "__main__":
    main()
