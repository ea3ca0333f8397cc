#!/usr/bin/env python3
"""What the agent server's heap holds, by allocation site.

Reads a jemalloc heap profile (`heap_v2`, written by `prof.dump`) and the
unstripped server binary it came from, names every sampled stack's frames
from the binary's symbols (`nm`) and sums the live bytes by the first frame
outside the allocator and the standard containers, and by the first frames
of the stack. This is the profile behind "RSS at the end" in the
benchmarks chapter. To take one:

    # a release server with symbols and jemalloc's profiler (not committed)
    sed -i 's/features = \\["background_threads"\\]/features = ["background_threads", "profiling"]/' Cargo.toml
    CARGO_PROFILE_RELEASE_STRIP=none cargo build --release -p openhands-agent-server
    # run it with the profiler on (a wrapper script for openhands-bench --ours):
    _RJEM_MALLOC_CONF=prof:true,lg_prof_sample:10,prof_prefix:/tmp/heap <server> ...
    # at the moment of interest:
    gdb -p PID -batch -ex 'call (int)_rjem_mallctl("prof.dump", 0, 0, 0, 0)'
    python3 scripts/live_heap.py /tmp/heap.PID.0.m0.heap <server> [--top 25]

The byte counts are jemalloc's estimates from its samples (one per 2^10
bytes allocated on average with `lg_prof_sample:10`).
"""

import argparse
import bisect
import collections
import re

from resident_code import symbols

# Frames that say how memory was allocated rather than who wanted it.
ALLOCATOR_FRAME = re.compile(
    r"^(_rjem|je_|prof_|imalloc|malloc|realloc|calloc|do_rallocx|__rust|tikv_jemalloc|<tikv"
    r"|alloc::|<alloc::|core::|<core::|std::alloc|hashbrown::raw|<hashbrown|bytes::bytes_mut"
    r"|<bytes::bytes_mut)"
)


def load_base(profile_text, binary_name):
    """The load address of the binary, from the profile's mappings."""
    base = None
    for line in profile_text.split("MAPPED_LIBRARIES:")[-1].splitlines():
        m = re.match(r"([0-9a-f]+)-[0-9a-f]+ \S+ ([0-9a-f]+) \S+ \S+\s+(.*)", line)
        if m and m[3].endswith(binary_name):
            start = int(m[1], 16) - int(m[2], 16)
            base = start if base is None else min(base, start)
    if base is None:
        raise SystemExit(f"the profile maps no file named {binary_name}")
    return base


def load_symbols(binary):
    """(addresses, names) of the binary's functions, sorted by address."""
    functions = symbols(binary, types="tTwW")
    if not functions:
        raise SystemExit(f"{binary} has no symbols: build it with CARGO_PROFILE_RELEASE_STRIP=none")
    return [a for a, _, _ in functions], [n for _, _, n in functions]


def stacks(profile_text):
    """(return addresses, live bytes) of every sampled stack."""
    current = None
    for line in profile_text.split("MAPPED_LIBRARIES:")[0].splitlines():
        if line.startswith("@"):
            current = [int(x, 16) for x in line[1:].split()]
        elif line.startswith("  t*:") and current is not None:
            m = re.match(r"\s+t\*: \d+: (\d+)", line)
            if m:
                yield current, int(m[1])
            current = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="a jemalloc heap profile (prof.dump)")
    parser.add_argument("binary", help="the unstripped binary the profile was taken of")
    parser.add_argument("--top", type=int, default=25, help="rows per listing")
    parser.add_argument("--depth", type=int, default=5, help="frames per stack in the second listing")
    args = parser.parse_args()
    with open(args.profile) as f:
        text = f.read()
    base = load_base(text, args.binary.rsplit("/", 1)[-1])
    addresses, names = load_symbols(args.binary)

    def name(address):
        i = bisect.bisect_right(addresses, address - 1 - base) - 1
        return names[i] if i >= 0 else hex(address)

    by_site, by_stack, total = collections.Counter(), collections.Counter(), 0
    for frames, live in stacks(text):
        total += live
        named = [name(a) for a in frames]
        callers = [n for n in named if not ALLOCATOR_FRAME.match(n)] or named[:1]
        by_site[callers[0]] += live
        by_stack[" <- ".join(n[:80] for n in callers[: args.depth])] += live
    print(f"live bytes (estimated): {total}")
    print("\nby allocation site:")
    for site, live in by_site.most_common(args.top):
        print(f"{live:>12}  {site[:160]}")
    print("\nby stack:")
    for stack, live in by_stack.most_common(args.top):
        print(f"{live:>12}  {stack}")


if __name__ == "__main__":
    main()
