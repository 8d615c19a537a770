#!/usr/bin/env python3
"""Every environment read goes through the configuration table
(docs/configuration.md): in C only src/core/config_table.c calls getenv
(everything else calls cp_config_get / cp_config_bool, or the public
cproton_config_get in the Python extension and the tools), in the Python
package only python/cproton/_config.py reads os.environ (writes, and a copy
handed to a child process, are not reads). Exits 1 naming every other read,
0 when clean.
Usage: check-env-reads.py [repository root]
"""
import os
import re
import sys

# (folders, file suffixes, pattern of a read, the one file allowed to read)
RULES = [
    (("src", "tools", "python/cproton"), (".c", ".h"),
     re.compile(r"\b(secure_)?getenv\s*\("), "src/core/config_table.c"),
    (("python/cproton",), (".py",),
     re.compile(r"os\.getenv\(|os\.environ\.(get|setdefault|pop)\(|os\.environ\[[^\]]*\](?!\s*=[^=])"
                r"|\bin\s+os\.environ\b"),
     "python/cproton/_config.py"),
]


def code_of(line: str, suffix: str) -> str:
    """The line without its comment (a C // or /* ... */ on one line, a
    Python #), so that comments naming getenv do not count."""
    if suffix == ".py":
        return line.split("#", 1)[0]
    line = re.sub(r"/\*.*?\*/", "", line)
    return line.split("//", 1)[0] if not line.lstrip().startswith("*") else ""


def violations(root: str):
    for folders, suffixes, pattern, allowed in RULES:
        for folder in folders:
            for base, _dirs, files in os.walk(os.path.join(root, folder)):
                for name in sorted(files):
                    path = os.path.join(base, name)
                    rel = os.path.relpath(path, root)
                    suffix = os.path.splitext(name)[1]
                    if suffix not in suffixes or rel == allowed:
                        continue
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for n, line in enumerate(f, 1):
                            if pattern.search(code_of(line, suffix)):
                                yield f"{rel}:{n}: reads the environment outside {allowed}: {line.strip()}"


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    found = list(violations(root))
    for v in found:
        print(v)
    print(f"check-env-reads: {len(found)} environment reads outside the configuration table")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
