"""A module's static constructors and destructors (`@llvm.global_ctors`, `@llvm.global_dtors`:
C++'s initialization of globals, `std::ios_base::Init` of libstdc++'s `<iostream>`,
`__attribute__((constructor))`) as entries of ELF's `.init_array` and `.fini_array`.

llvmlite's code generator writes them into `.ctors` and `.dtors` (LLVM's TargetOptions leave
UseInitArray off: clang turns it on), which GNU ld folds into `.init_array` but lld, the linker
of the bundled clang, does not: a program linked by it would never run them (std::cout used
before it is constructed)."""

from __future__ import annotations

import re

_LIST = re.compile(r"^@llvm\.global_(ctors|dtors) = appending global \[\d+ x \{[^}]*\}\] \[(.*)\]\s*$", re.M)
_ENTRY = re.compile(r"\{ i32 (\d+), ptr (@\"[^\"]*\"|@[-\w.$]+), ptr [^}]* \}")


def init_arrays(text: str) -> str:
    """`text` with its constructor and destructor lists made globals in `.init_array` and
    `.fini_array` sections (`.init_array.NNNNN` for a priority: the order LLVM gives them)."""
    count = [0]

    def entries(m: re.Match) -> str:
        section = ".init_array" if m[1] == "ctors" else ".fini_array"
        lines = []
        for priority, function in _ENTRY.findall(m[2]):
            name = section if int(priority) == 65535 else f"{section}.{int(priority):05d}"
            lines.append(f'@"adgen{section}.{count[0]}" = internal global ptr {function}, section "{name}", align 8')
            count[0] += 1
        return "\n".join(lines)

    return _LIST.sub(entries, text)


def without_constructors(text: str) -> str:
    """`text` without constructor and destructor lists: a module of derivatives whose copies of a
    program's globals are the program's own (their initializers are the program's to run, once)."""
    return _LIST.sub("", text)


__all__ = ["init_arrays", "without_constructors"]
