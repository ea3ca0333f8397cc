#!/usr/bin/env python3
"""Reports `Result<_, String>` in the crates' non-test sources.

Library code says what failed with a typed error (a `thiserror` enum that
carries its sources); a bare `String` loses the cause and cannot be matched.
Every `Result<..., String>` (nested generics and line breaks included) in
`crates/*/src` outside tests (`*_tests.rs`, `tests.rs`, `#[cfg(test)]`
blocks) must be listed in `scripts/string_errors.allow` with its reason.
Each allow-list line reads `path | Result<...> | reason`; the type is written
without spaces. Exit status 1 on an unlisted use or a stale allow-list line; `--prune`
deletes the stale lines instead of failing on them.
"""
import os, re, sys

ALLOW = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'string_errors.allow')


def strip_tests(text):
    i = text.find('#[cfg(test)]')
    return text if i < 0 else text[:i]


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def results(text):
    """Yields (line, type) for each `Result<...>` whose last argument is `String`."""
    for m in re.finditer(r'\bResult\s*<', text):
        depth, args, cur, i = 1, [], '', m.end()
        while i < len(text) and depth:
            c = text[i]
            if c in '<([':
                depth += 1
            elif c in '>)]':
                depth -= 1
                if depth == 0:
                    break
            if c == ',' and depth == 1:
                args.append(cur)
                cur = ''
            else:
                cur += c
            i += 1
        args.append(cur)
        if len(args) >= 2 and re.sub(r'\s+', '', args[-1]) in ('String', 'std::string::String'):
            shown = 'Result<' + ','.join(re.sub(r'\s+', '', a) for a in args) + '>'
            yield text.count('\n', 0, m.start()) + 1, shown


def load_allow():
    allowed = {}
    if not os.path.exists(ALLOW):
        return allowed
    for n, line in enumerate(open(ALLOW), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        parts = [p.strip() for p in line.split('|')]
        if len(parts) != 3 or not parts[2]:
            print(f"{ALLOW}:{n}: expected `path | Result<...> | reason`")
            sys.exit(1)
        key = (parts[0], parts[1])
        allowed[key] = allowed.get(key, 0) + 1
    return allowed


def main():
    args = [a for a in sys.argv[1:] if a != '--prune']
    prune = len(args) != len(sys.argv) - 1
    root = args[0] if args else 'crates'
    allowed = load_allow()
    seen = {}
    bad = 0
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, 'src')
        for d, _, files in os.walk(src):
            for f in sorted(files):
                if not f.endswith('.rs') or f.endswith('_tests.rs') or f == 'tests.rs':
                    continue
                p = os.path.join(d, f)
                text = strip_comments(strip_tests(open(p).read()))
                for line, ty in results(text):
                    key = (p, ty)
                    seen[key] = seen.get(key, 0) + 1
                    if seen[key] > allowed.get(key, 0):
                        bad += 1
                        print(f"{p}:{line}: {ty}: use a typed error (or list it with a reason in scripts/string_errors.allow)")
    stale = {k: c - seen.get(k, 0) for k, c in allowed.items() if seen.get(k, 0) < c}
    if prune and stale:
        kept = []
        for line in open(ALLOW):
            parts = [p.strip() for p in line.split('|')]
            key = tuple(parts[:2]) if len(parts) == 3 else None
            if key in stale and stale[key] > 0:
                stale[key] -= 1
                continue
            kept.append(line)
        open(ALLOW, 'w').write(''.join(kept))
        stale = {}
    for key in stale:
        bad += 1
        print(f"scripts/string_errors.allow: `{key[0]} | {key[1]}` is no longer used; remove it")
    sys.exit(1 if bad else 0)


main()
