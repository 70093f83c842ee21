"""The cache plan in the user's terms, for `--explain` (explain.py): each key the plan stores
named by the source expression it is (`exp(x[i] - m)`, the value of `m`), at its file and line
as the user gave them, and why it is stored, in words; the loops by their lines. Read from the
debug information (lines, columns, inlining; the variables of debug records, where a module has
them: adgen lowers with line tables only) and the sources' text (base/c_expressions.py), which
names variables by the assignments and declarations at those lines; never an IR name."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, lru_cache

import adgen.ir_ad.ir.debuginfo as debuginfo
from adgen.base.c_expressions import Expression, declared_at, expression_at
from adgen.base.diagnostics import display_path
from adgen.base.units import human_size
from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.diagnose import called, in_library, source_name, user_chain
from adgen.ir_ad.ir import Instruction, Module, slot_size
from adgen.ir_ad.reverse.plan.cache_plan import INDEXED
from adgen.ir_ad.reverse.plan.keys import (BLOB, CAME, CHOICE, DESC, EXIT, GUARD, LOG, MASK, OLD, OVERWRITTEN, RETURNS,
                                          SHADOW, VALUE, Key)

# What a value is, where its expression cannot be read from the line: the line is shown with a caret.
_KINDS = {"fadd": "a sum", "add": "a sum", "fsub": "a difference", "sub": "a difference", "fmul": "a product",
          "mul": "a product", "fdiv": "a quotient", "sdiv": "a quotient", "udiv": "a quotient", "fneg": "a negation",
          "frem": "a remainder", "srem": "a remainder", "urem": "a remainder", "fcmp": "a comparison",
          "icmp": "a comparison", "load": "a value read from memory", "select": "a choice between two values"}


@dataclass(frozen=True)
class Place:
    """Where code stands in the user's source, and where the function it is in was called (inlined)."""

    path: str
    line: int
    column: int
    function: str | None = None  # the function the code is in, where it was inlined
    called_at: "Place | None" = None
    library: str | None = None  # the library function whose inlined code this line reaches (`allocate`)

    @property
    def file(self) -> str:
        """The file as the user reads it: relative to the working directory where that is shorter."""
        return display_path(self.path if os.path.isabs(self.path) else os.path.abspath(self.path))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def near(self, other: "Place") -> str:
        """This place as read beside `other`: its line alone in the same file."""
        return f"line {self.line}" if other.file == self.file else str(self)


@dataclass(frozen=True)
class Named:
    """A value as the user's source has it: where, its name in a phrase (`exp(x[i] - m)`, the
    value of `m`), the subject of other phrases (`m`), and whether the name quotes the source
    (else the line with a caret must show it)."""

    place: Place | None
    text: str
    subject: str
    quoted: bool = True


@dataclass
class Entry:
    """One stored thing: where, what, why, and the source line (with a caret under the column
    where `what` does not quote it)."""

    place: Place | None
    what: str
    why: str
    code: list[str]


class Places:
    """Where a plan's code stands in the user's source: its places, its loops, its lines."""

    def __init__(self, module: Module, plan):
        self.module, self.plan, self.keys = module, plan, plan.keys
        self.fn = plan.keys.fn  # (the function as planned: the module's may have changed since)
        self.blocks = {b.label: b for b in self.fn.blocks}
        self._places: dict[str | None, Place | None] = {}

    def place(self, dbg: str | None) -> Place | None:
        if dbg not in self._places:
            self._places[dbg] = self._place(dbg)
        return self._places[dbg]

    def _place(self, dbg: str | None) -> Place | None:
        chain = [(w, d) for w, d in user_chain(self.module, dbg) if w.line > 0]
        mine = next((k for k, (w, _) in enumerate(chain) if not in_library(w.file)), 0)  # (as diagnostics do)
        library = self.module.subprogram(chain[0][1]) if mine > 0 else None
        chain = chain[mine:]
        if not chain:
            return None
        (where, node), outer = chain[0], chain[1][0] if len(chain) > 1 else None
        return Place(where.file, where.line, where.column, self.module.subprogram(node) if outer is not None else None,
                     Place(outer.file, outer.line, outer.column) if outer is not None else None, library)

    @cached_property
    def _function_place(self) -> Place | None:
        place = self.place(self.fn.dbg)
        if place is not None or "'checkpointed." not in self.fn.name:
            return place
        same = [f for f in self.module.functions.values() if f.dbg and source_name(f.name) == source_name(self.fn.name)]
        return next((p for p in (self.place(f.dbg) for f in same) if p), None)

    def function_place(self) -> Place | None:
        """The function's line (that of the function a copy was made of: a checkpointed one's)."""
        return self._function_place

    def nearest(self, inst: Instruction) -> Place | None:
        """Where code without a line stands: its loop's line, else its function's."""
        loop = self.keys.loops.loop_of.get(self.keys.cfg.block_of_inst(inst))
        return (self.loop_place(loop) if loop is not None else None) or self.function_place()

    def first_place(self, instructions) -> Place | None:
        return next((p for p in (self.place(i.dbg) for i in instructions) if p is not None), None)

    def loop_place(self, loop: Loop) -> Place | None:
        """A loop's line: that of the first located code of its header, else of its body."""
        blocks = [loop.header] + sorted(loop.body - {loop.header})
        return self.first_place(i for b in blocks for i in self.blocks[b].instructions)

    def loop(self, loop: Loop) -> str:
        """`the loop at kernels.c:48`, with the call it was inlined at (`in cell, called at line 136`)."""
        place = self.loop_place(loop)
        if place is None:
            fn = self.function_place()
            return f"a loop of {source_name(self.fn.name)}" + (f" ({fn})" if fn else "")
        return f"the loop at {place}" + self._context(place)

    def _context(self, place: Place) -> str:
        library = f" (in the library's {place.library})" if place.library else ""
        if place.called_at is None:
            return library
        return f"{library} (in {place.function or 'a function'}, called at {place.called_at.near(place)})"

    # ------------------------------------------------------------------ source text
    def expression(self, place: Place | None) -> Expression | None:
        return expression_at(_lines(place.path), place.line, place.column) if place is not None else None

    def code(self, place: Place | None, caret: bool) -> list[str]:
        """The source line at a place, and a caret under its column."""
        lines = _lines(place.path) if place is not None else []
        if not 0 < getattr(place, "line", 0) <= len(lines):
            return []
        text = lines[place.line - 1].replace("\t", " ")
        indent = len(text) - len(text.lstrip())
        shown = [text.strip()]
        column = len(text.encode()[:place.column - 1].decode(errors="ignore")) - indent
        return shown + ([" " * max(column, 0) + "^"] if caret and column >= 0 else [])


class Terms(Places):
    """Names the keys of one plan."""

    def __init__(self, module: Module, plan):
        super().__init__(module, plan)
        self.variables = debuginfo.variables(module.metadata, self.fn.text)

    def value(self, name: str) -> Named:
        """A value in the user's terms (see `Named`)."""
        inst = self.keys.cfg.defs.get(name)
        if inst is None:
            return Named(self.function_place(), "a value", "a value")
        place = self.place(inst.dbg)
        variable = self.variables.get(name)
        if inst.opcode == "alloca":
            return self._local(inst, variable)
        if place is None and inst.opcode == "call":
            place = self._call_in_source(inst)
        if inst.opcode == "phi":  # (a phi's own line, if any, is where branches meet: a call's, inlined)
            merged, merged_variable = self._merged(inst, variable)
            if merged is not None:
                place, variable = merged, merged_variable
        if place is None:
            return self._used(inst, variable)
        context = self._context(place)
        if variable:
            return Named(place, f"the value of `{variable}`{context}", f"`{variable}`")
        found = self.expression(place) if inst.opcode != "phi" else None
        if found is not None and inst.opcode == "call" and not _calls_it(found, inst) and \
                not (found.assigns or found.target):  # (code inlined at a call of another function)
            found = None
        if found is None:
            kind = self._kind(inst)
            return Named(place, kind + context, kind, False)
        if found.assigns:
            return Named(place, f"the new value of `{found.target}`{context}", f"`{found.target}`")
        if found.target:
            return Named(place, f"`{found.text}`, the value of `{found.target}`{context}", f"`{found.target}`")
        return Named(place, f"`{found.text}`{context}", f"`{found.text}`")

    def _kind(self, inst: Instruction) -> str:
        """What a value is, where its source cannot be quoted."""
        if inst.opcode == "phi":
            block = self.keys.cfg.block_of[inst.result]
            loop = self.keys.loops.loop_of.get(block)
            return "a value that changes each iteration" if loop is not None and loop.header == block else \
                "a value merged from branches"
        if inst.opcode == "call":
            name = called(inst.callee)
            return "a multiply-add" if name == "fma" else "storage adgen allocates here" if \
                name.startswith("adgen.") else f"the result of a call to {name}"
        return _KINDS.get(inst.opcode, "a value")

    def _merged(self, phi: Instruction, variable: str | None) -> tuple[Place | None, str | None]:
        """A phi's place: that of what it merges (what a loop carries first: its update), and
        the variable they assign, where they name one."""
        block = self.keys.cfg.block_of[phi.result]
        loop = self.keys.loops.loop_of.get(block)
        latches = loop.latches if loop is not None and loop.header == block else []
        incoming = sorted(phi.incoming, key=lambda item: item[1] not in latches)
        seen, work, places, targets = set(), [v.value for v, _ in incoming], [], set()
        while work and len(seen) < 16:
            value = work.pop(0)
            inst = self.keys.cfg.defs.get(value)
            if value in seen or inst is None:
                continue
            seen.add(value)
            if inst.opcode == "phi":
                work += [v.value for v, _ in inst.incoming]
                continue
            place = self.place(inst.dbg)
            found = self.expression(place)
            places += [place] if place is not None else []
            targets |= {found.target} if found is not None and found.target else set()
        if variable is None and len(targets) == 1:
            variable = targets.pop()
        return (places[0] if places else None), variable

    def _local(self, alloca: Instruction, variable: str | None) -> Named:
        """A local variable's memory: by its name (its declaration's), or the checkpointed loop
        whose state it holds."""
        users = self._users(alloca)
        loop = next((self.module.checkpointed[u.callee] for u in users if u.callee in self.module.checkpointed), None)
        if loop is not None:
            what = f"the state of the checkpointed loop at {loop.where or 'its line'}"
            return Named(None, what, what)
        place = self.first_place(users)
        names = [variable] if variable else declared_at(_lines(place.path), place.line, place.column) if place else []
        if len(names) > 1:  # (several declared on the line: the allocas are in the order of their declarations)
            same = [a for a in self.fn.instructions() if a.opcode == "alloca" and self._first_use(a) == place]
            names = [names[same.index(alloca)]] if len(same) == len(names) else names
        if not names:
            return Named(place or self.function_place(), "a local variable", "a local variable", place is None)
        name = " or ".join(f"`{n}`" for n in names)
        return Named(place, f"the address of {name}", name)

    def _users(self, inst: Instruction) -> list[Instruction]:
        return [i for i in self.fn.instructions() if inst.result in {o.value for o in i.operands}]

    def _first_use(self, inst: Instruction) -> Place | None:
        return self.first_place(self._users(inst))

    def _used(self, inst: Instruction, variable: str | None) -> Named:
        """A value without a line of its own: named by the first located use of it, else by its
        loop or its function."""
        what = f"the value of `{variable}`" if variable else self._kind(inst)
        subject = f"`{variable}`" if variable else what
        place = self._first_use(inst)
        if place is not None:
            found = self.expression(place)
            base = found.text.split("[", 1)[0] if found is not None and "[" in found.text else ""
            if inst.type.kind == "ptr" and not variable and base.isidentifier():  # (`next` of `next[i]`)
                return Named(place, f"the value of `{base}`{self._context(place)}", f"`{base}`")
            use = f"`{found.text}`" if found is not None else "the code marked"
            return Named(place, f"{what}, which {use} uses{self._context(place)}", subject, found is not None)
        loop = self.keys.loops.loop_of.get(self.keys.cfg.block_of.get(inst.result, ""))
        if loop is not None:
            return Named(None, f"{what} in {self.loop(loop)}", subject)
        return Named(self.function_place(), f"{what} in {source_name(self.fn.name)}", subject)

    def _call_in_source(self, call: Instruction) -> Place | None:
        """A call without a line (moved out of its loop): the one call of its function in the
        function's lines, if there is one."""
        top, name = self.function_place(), called(call.callee)
        if top is None or not name.isidentifier():
            return None
        lines = _lines(top.path)
        last = max((p.line for p in (self.place(i.dbg) for i in self.fn.instructions())
                    if p is not None and p.path == top.path), default=top.line)
        found = [(n, at) for n in range(top.line, min(last, len(lines)) + 1) for at in _calls(lines[n - 1], name)]
        if len(found) != 1:
            return None
        line, at = found[0]
        return Place(top.path, line, len(lines[line - 1][:at].encode()) + 1)

    # ------------------------------------------------------------------ keys
    def entry(self, key: Key, scope: Loop | None = None) -> Entry:
        """A stored key, kept per iteration of `scope` (None: per call)."""
        d = self.keys[key]
        why = d.why or "it could be recomputed, but storing it is cheaper than storing what it is recomputed from"
        place, what, quoted = None, "a value the reverse sweep needs", True
        if key.kind in (VALUE, SHADOW, MASK):
            named = self.value(key.name)
            place, what, quoted = named.place, named.text, named.quoted
            if key.kind == SHADOW:
                what = f"where the derivatives of {named.subject} are"
            elif key.kind == MASK:
                what = f"whether {named.subject} points to memory with derivatives"
            elif d.why == OVERWRITTEN:
                why = self._overwriter(d.inst) or why
            left = self._left(key.name, scope)
            what = what.replace("the new value of", "the value of", 1) + left if left else what
        elif key.kind == CAME:
            if key.name == RETURNS:
                place, what = self.function_place(), f"which `return` {source_name(self.fn.name)} took"
            else:
                place = self.first_place(self.blocks[key.name].instructions)
                what = "which way execution reached this line" if place else \
                    f"which way a branch of {source_name(self.fn.name)} went"
                place = place or self.function_place()
        elif key.kind in (EXIT, DESC):
            loop = self.keys.loops.by_header[key.name]
            what = (f"how many iterations {self.loop(loop)} ran" if key.kind == EXIT else
                    f"where the storage of {self.loop(loop)} is")
            if key.kind == DESC and getattr(self.plan.group_of(loop), "kind", "") == INDEXED:
                why = "its buffer's address, and the trip counts of its loops"
            return Entry(None, what, why, [])
        elif key.kind == BLOB:
            place, what, quoted = self.call(d.inst)
            what = f"the record of {what}"
            why = "what its reverse sweep needs"
        elif key.kind == CHOICE:
            place, what, quoted = self.call(d.inst)
            larger = "smaller" if called(d.inst.callee) == "fmin" else "larger"
            both = sum(slot_size(o.type) for o in d.inst.operands)
            what, why = f"which argument of {what} was {larger}", f"1 byte instead of both values ({human_size(both)})"
        elif key.kind in (OLD, GUARD):
            place, target = self._store(d.inst)
            what = f"the old value of {target}" if key.kind == OLD else f"whether the store to {target} was logged"
            what += self._context(place) if place is not None else ""
        elif key.kind == LOG:
            what = "the undo log"
        return Entry(place, what, why, self.code(place, not quoted))

    def _left(self, name: str, scope: Loop | None) -> str:
        """`, as the loop at kernels.c:51 leaves it`: for a value of a loop kept outside it (its last)."""
        loop, left = self.keys.loops.loop_of.get(self.keys.cfg.block_of.get(name, "")), None
        while loop is not None and loop is not scope:
            loop, left = loop.parent, loop
        place = self.loop_place(left) if left is not None and loop is scope else None
        return f", as the loop at {place} leaves it" if place is not None else ""

    def call(self, call: Instruction) -> tuple[Place | None, str, bool]:
        """A call: its place, its source (`mag(in, n)`), and whether that quotes it."""
        if call.callee in self.module.checkpointed:
            return None, f"the checkpointed loop at {self.module.checkpointed[call.callee].where or 'its line'}", True
        place = self.place(call.dbg) or self._call_in_source(call)
        found = self.expression(place)
        if found is None or not _calls_it(found, call):
            return place, f"a call to {called(call.callee)}", place is None
        return place, f"`{found.text}`" + self._context(place), True

    def _store(self, store: Instruction) -> tuple[Place | None, str]:
        """A store's place and what it writes to (`err[0]`); one without a line (adgen's own)
        named by the value it stores, where that assigns a variable (`t++`)."""
        place, value = self.place(store.dbg), self.keys.cfg.defs.get(store.operands[0].value)
        found = self.expression(place)
        if place is None and value is not None:
            found = self.expression(self.place(value.dbg))
        if found is not None and (found.assigns or store.dbg is None and found.target):
            return place or self.place(value.dbg), f"`{found.target}`"
        return place or self.nearest(store), f"memory ({human_size(slot_size(store.operands[0].type))})"

    def store(self, store: Instruction) -> tuple[Place | None, str]:
        """A store the undo log undoes: its place, and what it writes (`the store to `p[i]``)."""
        place, target = self._store(store)
        size = human_size(slot_size(store.operands[0].type))
        context = self._context(place) if place is not None else ""
        return place, (f"the store to {target} ({size})" if target.startswith("`") else f"a store to {target}") + context

    def _overwriter(self, load: Instruction) -> str | None:
        """A load's reason to be stored: the store that may overwrite its memory, by its line."""
        memory = self.keys.memory
        writes = memory.clobbering(load, {id(w) for w, _ in memory.writes} - set(self.keys.ignored))
        for write in writes:
            place = self.place(write.dbg)
            if place is None:
                continue
            found = self.expression(place)
            what = f"`{found.text}`" if found is not None and found.assigns else \
                f"a call to {called(write.callee)}" if write.opcode == "call" else "a store"
            return f"{what} ({place}) may overwrite its memory before the reverse sweep runs"
        return None


def _calls_it(found: Expression, call: Instruction) -> bool:
    """Whether an expression is a call of a call's function (`mag(in, n)`, `geo::len(v)`, `p->len()`)."""
    name = called(call.callee).split("(")[0].split("::")[-1]
    return bool(name) and found.text.endswith(")") and found.text.split("(")[0].endswith(name)


def _calls(text: str, name: str) -> list[int]:
    """Where a line calls `name`."""
    found, at = [], text.find(name + "(")
    while at >= 0:
        if at == 0 or not (text[at - 1].isalnum() or text[at - 1] in "_.>"):
            found.append(at)
        at = text.find(name + "(", at + 1)
    return found


def _lines(path: str) -> list[str]:
    """A source's lines (read once while it is unchanged)."""
    try:
        stat = os.stat(path)
    except OSError:
        return []
    return _read(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _read(path: str, _mtime: int, _size: int) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []
