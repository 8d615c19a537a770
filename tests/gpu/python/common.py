"""Helpers shared by the GPU tests of the Python package."""
import json


def load(path):
    with open(path) as f:
        return json.load(f)


def find(node, name):
    """All nodes named `name` under `node` (Hatchet literal)."""
    out = []
    if node["frame"]["name"] == name:
        out.append(node)
    for c in node["children"]:
        out += find(c, name)
    return out


def names(node):
    out = {node["frame"]["name"]}
    for c in node["children"]:
        out |= names(c)
    return out


def shape(node):
    """(name, sorted child shapes) ignoring metric values."""
    return (node["frame"]["name"], tuple(sorted(shape(c) for c in node["children"])))
