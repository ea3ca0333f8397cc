#!/usr/bin/env python3
"""Reports import circles between the modules of each crate.

A module is one source file; `use crate::a::b`, `crate::a::b::f()` and
`super::x` references make edges. Test modules (`*_tests.rs`, `tests.rs`,
`#[cfg(test)]` blocks) are ignored. Exit status 1 when a circle exists.
"""
import os, re, sys

def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ('mod', 'lib', 'main'):
        rel = rel[:-1]
    return tuple(rel)

def strip_tests(text):
    i = text.find('#[cfg(test)]')
    return text if i < 0 else text[:i]

def crate_modules(src):
    mods = {}
    for d, _, files in os.walk(src):
        for f in files:
            if f.endswith('.rs') and not f.endswith('_tests.rs') and f != 'tests.rs':
                p = os.path.join(d, f)
                mods[module_of(src, p)] = p
    return mods

def resolve(mods, parts):
    for n in range(len(parts), -1, -1):
        if tuple(parts[:n]) in mods:
            return tuple(parts[:n])
    return None

def edges(mods, src):
    out = {m: set() for m in mods}
    for m, p in mods.items():
        text = strip_tests(open(p).read())
        text = re.sub(r'//[^\n]*', '', text)
        children = set(re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;', text, re.M))
        own_dir = os.path.basename(p) in ('mod.rs', 'lib.rs', 'main.rs')
        if children:
            body = re.sub(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+[^;]*;', '', text, flags=re.M)
            for c in children:
                if re.search(r'(?<![:\w])(?:self::)?' + c + r'::', body):
                    child = m + (c,) if own_dir else m[:-1] + (c,)
                    if child in mods:
                        out[m].add(child)
        for path in re.findall(r'\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)', text):
            parts = path.split('::')
            if parts[0] == 'crate':
                target = parts[1:]
            else:
                base = list(m) if os.path.basename(p) in ('mod.rs', 'lib.rs') else list(m[:-1])
                while parts and parts[0] == 'super':
                    parts = parts[1:]
                    base = base[:-1] if parts and parts[0] == 'super' else base
                target = base + parts
            t = resolve(mods, target)
            if t is not None and t != m and t != ():
                # a reference to a parent module's item counts as the parent
                out[m].add(t)
    return out

def cycles(graph):
    index, low, stack, on, res = {}, {}, [], set(), []
    counter = [0]
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1:
                res.append(comp)
    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            strong(v)
    return res

def main():
    root = sys.argv[1] if len(sys.argv) > 1 else 'crates'
    bad = 0
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, 'src')
        if not os.path.isdir(src):
            continue
        mods = crate_modules(src)
        g = edges(mods, src)
        for comp in cycles(g):
            bad += 1
            print(f"{crate}: circle between " + ", ".join('::'.join(c) or 'lib' for c in sorted(comp)))
    sys.exit(1 if bad else 0)

main()
