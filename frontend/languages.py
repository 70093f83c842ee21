"""The language of a source, by its name, decided here for all of adgen: Rust (`.rs`), C++
(`.cpp`, `.cc`, `.cxx` and the others clang and gcc name so), a language adgen does not read yet
(Objective-C, CUDA), or C (`.c`, and whatever else clang reads as C: `.h`, `.i`). A source in a language adgen does
not read is an error naming the file before anything is read, rather than C errors about it."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from adgen.base.diagnostics import AdgenError, display_path, error


class Language(Enum):
    C = "C"
    RUST = "Rust"
    CXX = "C++"
    OBJC = "Objective-C"
    OBJCXX = "Objective-C++"
    CUDA = "CUDA"


READ = (Language.C, Language.RUST, Language.CXX)

# Case matters: `.C` and `.H` are C++, `.c` and `.h` C.
_BY_SUFFIX = {".rs": Language.RUST, ".m": Language.OBJC, ".mm": Language.OBJCXX, ".M": Language.OBJCXX,
              ".cu": Language.CUDA, **{s: Language.CXX for s in (
                  ".cc", ".cp", ".cpp", ".CPP", ".cxx", ".c++", ".C", ".ii", ".cppm", ".ixx",
                  ".hh", ".hpp", ".hxx", ".h++", ".H", ".tcc", ".ipp", ".inl")}}


def language(path: Path) -> Language:
    return _BY_SUFFIX.get(Path(path).suffix, Language.C)


def is_rust(path: Path) -> bool:
    return language(path) is Language.RUST


def is_cxx(path: Path) -> bool:
    return language(path) is Language.CXX


def refuse_unread(paths: list[Path]) -> None:
    """An error for each source in a language adgen does not read yet."""
    unread = [(p, language(p)) for p in paths if language(p) not in READ]
    if unread:
        raise AdgenError([error(f"{display_path(p)}: {lang.value} sources are not supported yet: adgen reads C, "
                                f"C++ and Rust sources (.c, .cpp, .rs)") for p, lang in unread])


__all__ = ["Language", "language", "is_rust", "is_cxx", "refuse_unread"]
