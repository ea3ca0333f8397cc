#!/usr/bin/env python3
"""Which code of a running process is resident, by crate.

Reads /proc/PID/maps and /proc/PID/pagemap (root) for the mappings of the
process's own executable, maps every resident page back to the symbols of
the binary (`nm`, so build without stripping symbols) and sums the resident
bytes per crate, per mapping and per name pattern. This is the profile
behind the file-backed part of the agent server's idle RSS in the
benchmarks chapter: a page is resident because start-up touched it or a
neighbour within the kernel's fault-around window.

    python3 scripts/resident_code.py PID [--top 25] [--grep utoipa ...]
"""

import argparse
import bisect
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def mappings(pid, exe):
    """(start, end, file offset, perms) of every mapping of `exe`."""
    out = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) < 6 or parts[5] != exe:
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            out.append((start, end, int(parts[2], 16), parts[1]))
    return out


def resident_pages(pid, start, end):
    """Runtime addresses of the resident pages in [start, end)."""
    pages = []
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        pagemap.seek(start // PAGE * 8)
        data = pagemap.read((end - start) // PAGE * 8)
    for i in range(len(data) // 8):
        (entry,) = struct.unpack_from("<Q", data, i * 8)
        if entry >> 63:
            pages.append(start + i * PAGE)
    return pages


def load_segments(exe):
    """(file offset, file size, virtual address) of every PT_LOAD."""
    out = subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True, check=True)
    segments = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            segments.append((int(parts[1], 16), int(parts[4], 16), int(parts[2], 16)))
    return segments


def symbols(exe, demangle=True, types=None):
    """Sorted (address, size, name) of the binary's sized symbols, names
    demangled or not, of the `nm` types in `types` (all when None)."""
    out = subprocess.run(
        ["nm", *(["-C"] if demangle else []), "-S", "--defined-only", exe],
        capture_output=True, text=True, check=True,
    )
    syms = []
    for line in out.stdout.splitlines():
        parts = line.split(" ", 3)
        if (
            len(parts) == 4
            and len(parts[1]) == len(parts[0])
            and len(parts[2]) == 1
            and (types is None or parts[2] in types)
        ):
            syms.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    syms.sort()
    return syms


def crate_of(name):
    """The crate a demangled symbol belongs to: the first path segment of
    the implementing type, or of the function."""
    name = name.lstrip("<&*").removeprefix("mut ").removeprefix("dyn ")
    head = re.split(r"::|<| as |\[|\(", name, maxsplit=1)[0]
    return head or "(other)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("--top", type=int, default=25, help="rows of crates and symbols to show")
    parser.add_argument(
        "--grep", action="append", default=[], help="also sum the symbols whose name contains this"
    )
    args = parser.parse_args()

    exe = os.readlink(f"/proc/{args.pid}/exe")
    segments = load_segments(exe)
    syms = symbols(exe)
    if not syms:
        sys.exit(f"{exe} has no symbols: build with CARGO_PROFILE_RELEASE_STRIP=none")
    starts = [s[0] for s in syms]

    by_crate = collections.Counter()
    by_symbol = collections.Counter()
    by_pattern = collections.Counter()
    print(f"{exe}")
    for start, end, offset, perms in mappings(args.pid, exe):
        pages = resident_pages(args.pid, start, end)
        print(
            f"  {perms} {(end - start) / 1e6:7.1f} MB mapped, "
            f"{len(pages) * PAGE / 1e6:6.1f} MB resident"
        )
        for page in pages:
            file_offset = page - start + offset
            vaddr = next(
                (v + file_offset - o for o, size, v in segments if o <= file_offset < o + size),
                None,
            )
            if vaddr is None:
                by_crate["(outside any segment)"] += PAGE
                continue
            covered = 0
            i = max(bisect.bisect_right(starts, vaddr) - 1, 0)
            # Symbols starting before the page may reach into it; walk back a little.
            while i > 0 and syms[i][0] + syms[i][1] > vaddr and syms[i - 1][0] + syms[i - 1][1] > vaddr:
                i -= 1
            while i < len(syms) and syms[i][0] < vaddr + PAGE:
                address, size, name = syms[i]
                overlap = min(address + size, vaddr + PAGE) - max(address, vaddr)
                if overlap > 0:
                    covered += overlap
                    by_crate[crate_of(name)] += overlap
                    by_symbol[name] += overlap
                    for pattern in args.grep:
                        if pattern in name:
                            by_pattern[pattern] += overlap
                i += 1
            if covered < PAGE:
                by_crate["(no symbol)"] += PAGE - min(covered, PAGE)

    total = sum(by_crate.values())
    print(f"resident bytes attributed: {total / 1e6:.1f} MB")
    print("by crate:")
    for crate, size in by_crate.most_common(args.top):
        print(f"  {size / 1e6:7.2f} MB {100 * size / total:5.1f}%  {crate}")
    for pattern in args.grep:
        size = by_pattern[pattern]
        print(f"symbols containing {pattern!r}: {size / 1e6:.2f} MB ({100 * size / total:.1f}%)")
    print("largest symbols:")
    for name, size in by_symbol.most_common(args.top):
        print(f"  {size / 1e3:8.1f} kB  {name[:140]}")


if __name__ == "__main__":
    main()
