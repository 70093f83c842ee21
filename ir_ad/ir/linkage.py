"""Which module's definition of a symbol is the one: rewrites of a module's text before it is
linked or read for differentiation (specs/cxx.md, "Link model").

- Aliases (C++'s complete constructors and destructors, `C1`/`D1`, are aliases of the base
  object ones, `C2`/`D2`, where clang can make them so; C's `__attribute__((alias))`) resolved:
  their uses name what they alias, and they are gone. The code differentiated then calls
  functions it can read, and the derivative object, which keeps only the derived functions
  visible, has no alias to export.
- A stub file's definitions other than its derived functions made declarations: what it
  defines besides comes from the user's headers it includes (a function or variable that is
  not inline), which the source including them defines as well, and initializes (the stub
  file's constructors of the variables, `@llvm.global_ctors`, are dropped).
- `adgen build`'s derivative object reads and writes the program's variables (`shared_variables`):
  a variable of the sources with external linkage that the program may change is a weak
  definition, which the program's own (the user's object of the source) takes the place of, not
  an internal copy; the constructors that initialize such variables are left to the program's."""

from __future__ import annotations

import re

from adgen.ir_ad.ir.reach import bare
from adgen.ir_ad.ir.split import LINKAGES, Piece, declaration, global_declaration

_NAME = r'@(?:"[^"]*"|[-a-zA-Z$._0-9]+)'
# `@A = [linkage, visibility, unnamed_addr...] alias TYPE, ptr @B`: an alias of a global by name
_ALIAS = re.compile(r"^(" + _NAME + r") = [^\"\n]*?\balias [^\n]*?, ptr (" + _NAME + r")$", re.M)
_INDIRECT = re.compile(r"^" + _NAME + r" = [^\"\n]*?\b(?:alias|ifunc) [^\n]*$", re.M)
_REFERENCE = re.compile(_NAME)
_GLOBAL = re.compile(r'^(' + _NAME + r') = ((?:[a-z_]+(?:\([^)]*\))? )*?)(global|constant) (.*)$')
# linkages LLVM lets two modules' definitions of one name have (or none is strong): not made declarations
_NOT_STRONG = {"private", "internal", "available_externally", "linkonce", "linkonce_odr", "weak", "weak_odr",
               "appending", "extern_weak", "external"}


def without_aliases(text: str) -> str:
    """The text with each alias of a global by name gone, its uses naming that global (through
    aliases of aliases) instead; the same text where it has none."""
    if " alias " not in text:  # (`noalias` and `!alias.scope` have no space before)
        return text
    aliases = {m.group(1): m.group(2) for m in _ALIAS.finditer(text)}
    if not aliases:
        return text
    target = {}
    for alias in aliases:
        seen, name = {alias}, aliases[alias]
        while name in aliases and name not in seen:
            seen.add(name)
            name = aliases[name]
        target[alias] = name
    text = _ALIAS.sub("", text)
    return _REFERENCE.sub(lambda m: target.get(m.group(), m.group()), text)


def declarations_but(text: str, own: set[str]) -> str:
    """The text (aliases resolved) with its strong definitions of functions and variables other
    than `own` (bare names, as llvmlite gives them) made declarations, and without constructors
    and destructors of its variables (`@llvm.global_ctors`), so that it links with the module
    whose definitions they are; the same text where there is nothing to change."""
    text = without_aliases(text)
    # what an alias left (of an expression) or an ifunc names stays defined, as they need
    own = own | {bare(name) for line in _INDIRECT.findall(text) for name in re.findall(_NAME, line)}
    out, changed, skipping = [], False, False
    for line in text.split("\n"):
        if skipping:
            skipping = line != "}"
            continue
        if line.startswith("define ") and _strong(line[len("define "):line.index("@")].split()) and \
                _bare(line[line.index("@"):]) not in own:
            out.append(declaration(line, False))
            changed = skipping = True
            continue
        if line.startswith(("@llvm.global_ctors = ", "@llvm.global_dtors = ")):
            changed = True  # (what they initialize, the header's variables, the source initializes)
            continue
        m = _GLOBAL.match(line) if line.startswith("@") else None
        if m and _strong(m.group(2).split()) and not m.group(1).startswith("@llvm.") and _bare(m.group(1)) not in own:
            out.append(global_declaration(Piece("global", m.group(1), [line])))
            changed = True
            continue
        out.append(line)
    return "\n".join(out) if changed else text


def _strong(words: list[str]) -> bool:
    return not _NOT_STRONG & set(words)


def _bare(named: str) -> str:
    """`@f(...` or `@"f g" = ...` -> `f`, `f g`."""
    return bare(re.match(_NAME, named).group())


_CTORS = re.compile(r"^@llvm\.global_(?:c|d)tors = appending global \[(\d+) x ([^\]]*)\] \[(.*)\]$", re.M)


def shared_variables(text: str) -> str:
    """The text (a module of the sources, with the stubs) with each variable the sources define
    with external linkage and may write (`global`, not `constant`; not adgen's own) made weak:
    the derivative object then reads and writes the program's, which the user's object of the
    source defines, rather than a copy of its initial value (which LLVM would also have folded
    into the derivative); linked without that object, its own. Static variables (internal) stay
    copies: nothing else can reach them. The initializers of shared variables (C++'s
    `__cxx_global_var_init` functions called from the module's constructors, and constructors
    touching them) are left to the program's object: their calls are dropped, as are
    constructor and destructor entries naming such variables."""
    shared = set()
    out = []
    for line in text.split("\n"):
        m = _GLOBAL.match(line) if line.startswith("@") else None
        words = m.group(2).split() if m else []
        if m and m.group(3) == "global" and _strong(words) and not _own(m.group(1)) and "common" not in words:
            shared.add(m.group(1))
            kept = " ".join(w for w in words if w not in ("dso_local", "dso_preemptable"))
            line = f"{m.group(1)} = weak {kept + ' ' if kept else ''}global {m.group(4)}"
        out.append(line)
    if not shared:
        return text
    text = "\n".join(out)
    return _without_initializers(text, shared) if "@llvm.global_" in text else text


def _own(name: str) -> bool:
    """adgen's own variables (the runtime's, the lowering's arrays) and LLVM's."""
    return bare(name).startswith(("llvm.", "adgen", "__adgen"))


def _without_initializers(text: str, shared: set[str]) -> str:
    """Constructor and destructor entries (and calls in them) that touch a shared variable,
    dropped (see `shared_variables`)."""
    bodies = _bodies(text)
    touching = {name for name, body in bodies.items()
                if any(m.group() in shared for m in _REFERENCE.finditer(body))}
    entries = _entries(text)
    dropped = shared | {name for name in touching if not name.startswith("@_GLOBAL__sub_I_")}
    lines, inside = [], None
    for line in text.split("\n"):
        if inside is None and line.startswith("define ") and "@" in line:
            name = re.match(_NAME, line[line.index("@"):]).group()
            inside = name if name in entries else None
        elif inside is not None and line == "}":
            inside = None
        if inside is not None and " call " in f" {line.strip()} " and not line.lstrip().startswith("define"):
            callee = re.search(r"call [^@]*(" + _NAME + r")\(", line)
            if callee and callee.group(1) in touching:
                continue  # (a variable's initializer: the program's object runs it)
        m = _CTORS.match(line)
        if m:
            kept = [e for e in re.findall(r"\{[^{}]*\} \{[^{}]*\}", m.group(3))  # (each its type, then its value)
                    if not set(_REFERENCE.findall(e)) & dropped]
            if not kept:
                continue
            line = line[:m.start(1)] + str(len(kept)) + line[m.end(1):m.start(3)] + ", ".join(kept) + "]"
        lines.append(line)
    return "\n".join(lines)


def _entries(text: str) -> set[str]:
    """The functions the constructor and destructor lists name."""
    return {n for m in _CTORS.finditer(text) for n in _REFERENCE.findall(m.group(3))}


def _bodies(text: str) -> dict[str, str]:
    out, name, lines = {}, None, []
    for line in text.split("\n"):
        if line.startswith("define ") and "@" in line:
            name, lines = re.match(_NAME, line[line.index("@"):]).group(), []
        elif line == "}" and name is not None:
            out[name] = "\n".join(lines)
            name = None
        elif name is not None:
            lines.append(line)
    return out


# What a definition made internal keeps of its head: not its linkage, preemption, visibility or
# DLL storage (a local symbol has default visibility; it is the module's own)
_NOT_LOCAL = LINKAGES | {"dso_local", "dso_preemptable", "default", "hidden", "protected", "dllexport", "dllimport"}
_TRIPLE = re.compile(r'^target triple = "[^"]*"$', re.M)
# a global's name quoted where it need not be (`@"__adgen_omp_team"`, as adgen's templates write
# some): spelled as LLVM prints it, `@__adgen_omp_team`, which the cut into parts (split.py) takes
# for the same name
_QUOTED_PLAIN = re.compile(r'@"([-a-zA-Z$._][-a-zA-Z$._0-9]*)"')


def internalized(text: str, exported: set[str], shared: set[str], triple: str) -> str:
    """The text of the derivative module as its object is compiled from it: only the functions
    `exported` visible; `shared` (external functions of the sources that the program calls through
    pointers) weak, so that the program's own definitions win; every variable it defines
    internal but LLVM's and weak ones; compiled for `triple`. What optimize._internalize does to a
    module llvmlite holds, done to the text, so that a module split into parts for clang is not
    read and printed again by llvmlite (bare names, as llvmlite gives them); names quoted where they
    need not be are spelled as LLVM prints them."""
    out = []
    for line in text.split("\n"):
        if line.startswith("define "):
            at = line.index("@")
            name, words = _bare(line[at:]), line[len("define "):at].split()
            if name in shared:
                if not _NOT_STRONG & set(words):  # (external, unspelled)
                    line = "define weak_odr " + line[len("define "):]
            elif name not in exported:
                line = " ".join(["define", "internal", *(w for w in words if w not in _NOT_LOCAL)]) + " " + line[at:]
        elif line.startswith("@"):
            m = _GLOBAL.match(line)
            words = m.group(2).split() if m else []
            if m and not m.group(1).startswith(("@llvm.", '@"llvm.')) and \
                    not {"external", "extern_weak", "weak"} & set(words):
                kept = [w for w in words if w not in _NOT_LOCAL]
                line = f"{m.group(1)} = internal {' '.join(kept) + ' ' if kept else ''}{m.group(3)} {m.group(4)}"
        out.append(line)
    text = _QUOTED_PLAIN.sub(r"@\1", "\n".join(out))
    if _TRIPLE.search(text):
        return _TRIPLE.sub(f'target triple = "{triple}"', text, count=1)
    return f'target triple = "{triple}"\n{text}'
