#!/usr/bin/env python3
"""Include hygiene of the C sources: no include cycle between modules and
no include that points up the layers (docs/testing.md, "Layers").

A module is a file's path without its extension (core/cct.c and core/cct.h
are one module); module A depends on B when a file of A includes B's
header. Layers, bottom first, from docs/architecture.md: src/core; then
src/backend, src/io, src/instrument (siblings: one may include another
only where ALLOWED_SIDEWAYS says so); then src/session; then the Python
extension and the tools. The public headers (include/cproton) are the API
every layer may use. Exits 1 naming every violation, 0 when clean.
Usage: check-layers.py [repository root]
"""
import os
import re
import sys

# (folder prefix, layer): the first prefix that matches a path wins.
LAYERS = [
    ("include/", -1),  # the public API: below everything
    ("src/core/", 0),
    ("src/backend/", 1),
    ("src/io/", 1),
    ("src/instrument/", 1),
    ("src/session/", 2),
    ("python/", 3),
    ("tools/", 3),
]

# Same-layer folders that may include one another, and why.
ALLOWED_SIDEWAYS = {
    # The decoder reads the profile-buffer layout the pass writes
    # (docs/architecture.md, "Deliberate departures").
    ("src/backend/", "src/instrument/"),
}

# Single includes that break the rule today, each with the change that
# removes it. Keep this empty but for entries with such a comment.
ALLOWED_UPWARD = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".c", ".h", ".cu", ".cpp")


def layer_of(path):
    for prefix, layer in LAYERS:
        if path.startswith(prefix):
            return prefix, layer
    return None, None


def files(root):
    for top in ("src", "include", "python/cproton", "tools"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(d, n), root)


def resolve(root, src, name):
    """The repository path an include names, or None (system, generated)."""
    for base in ("src", os.path.dirname(src), "include"):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def edges(root):
    out = []
    for f in files(root):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            target = resolve(root, f, name)
            if target and target != f:
                out.append((f, target))
    return out


def upward(edge_list):
    bad = []
    for src, dst in edge_list:
        sp, sl = layer_of(src)
        dp, dl = layer_of(dst)
        if sl is None or dl is None or (src, dst) in ALLOWED_UPWARD:
            continue
        if dl > sl:
            bad.append("%s includes %s: layer %d above %d" % (src, dst, dl, sl))
        elif dl == sl and sp != dp and (sp, dp) not in ALLOWED_SIDEWAYS:
            bad.append("%s includes %s: sibling folders %s -> %s not in ALLOWED_SIDEWAYS"
                       % (src, dst, sp, dp))
    return bad


def cycles(edge_list):
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {}
    for src, dst in edge_list:
        a, b = os.path.splitext(src)[0], os.path.splitext(dst)[0]
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return ["include cycle: " + " <-> ".join(c) for c in found]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    e = edges(root)
    problems = upward(e) + cycles(e)
    for p in problems:
        print("check-layers: " + p)
    print("check-layers: %d includes checked, %d problems" % (len(e), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
