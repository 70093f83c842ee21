"""Lark parsers built once per grammar and kept in the user's cache (`~/.cache/adgen/parsers`):
building the LALR tables took 40 to 60 ms of every build. The cache holds pickles, which a
process loads, so it lives in a folder of the user's alone (base/user_cache.py), written whole
(a file of this process's, then renamed) so that builds running at once never read half of one;
where that folder cannot be had, the parser is built each time."""

from __future__ import annotations

import hashlib
import os

import lark

from adgen.base.user_cache import optional_private_folder


def cached_lark(grammar: str, **options) -> lark.Lark:
    """`lark.Lark(grammar, **options)` (an LALR parser), from the cache where it is there."""
    folder = optional_private_folder("parsers")
    if folder is None:
        return lark.Lark(grammar, **options)
    key = hashlib.sha256(f"{lark.__version__}\n{sorted(options.items())!r}\n{grammar}".encode()).hexdigest()[:24]
    kept = folder / f"{key}.lark"
    if kept.is_file():
        return lark.Lark(grammar, cache=str(kept), **options)  # (lark checks the grammar's hash in it)
    own = folder / f"{key}.{os.getpid()}.tmp"
    parser = lark.Lark(grammar, cache=str(own), **options)
    try:
        os.replace(own, kept)
    except OSError:
        pass
    return parser
