"""Hashes of what grading trusts: sha256 of a file's bytes, of a package's tree, and of every
instructor source (the chapters as read at the start or as they are on disk now, blrlib and
coursework), compared before and after a grading run."""

from __future__ import annotations

import hashlib
import pathlib

from . import sandbox


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def tree_hash(path):
    """sha256 over the relative names and contents of every file under ``path`` (no caches)."""
    h = hashlib.sha256()
    path = pathlib.Path(path)
    for f in sorted(p for p in path.rglob("*") if "__pycache__" not in p.parts):
        if f.is_file() and not f.is_symlink():
            h.update(str(f.relative_to(path)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def source_hashes(chapters, reread=False):
    """Hashes of everything the grading trusts: the chapters (as read at the start, or as they
    are on disk now), blrlib and coursework."""
    out = {}
    for c in chapters.values():
        if not reread:
            out[f"chapter {c.name}"] = c.sha256
        else:
            out[f"chapter {c.name}"] = sha256(c.path.read_bytes()) if c.path.is_file() else "missing"
    for name in ("blrlib", "coursework"):
        out[f"package {name}"] = tree_hash(sandbox._package_dir(name))
    return out
