"""Enzyme's C API, read from the lowered IR as Enzyme's own plugin reads it (specs/enzyme.md):
each call to one of its entry points (`__enzyme_autodiff`, `__enzyme_fwddiff`,
`__enzyme_augmentfwd`, `__enzyme_reverse`, `__enzyme_augmentsize`) becomes a `Call`: the
function it differentiates, and a `Request` — the mode, one adgen activity per parameter (from
the markers `enzyme_dup`, `enzyme_const`, `enzyme_out`… or, without one, from the parameter's
type), the width and the return activity — with the arguments that carry each parameter's value
and shadows. Calls with equal requests share one derivative, whatever wrapper or macro made
them. A marker or an entry point adgen does not implement is a located error at the call.

A struct the function takes by value (its source's declaration says, `Declared`) is one parameter
of the request, however many IR values the target's ABI splits it into, and the call may pass it
otherwise than the function takes it (in registers' values or in memory by its address, the
registers of a variadic call being spent sooner): its arguments are read as the call passes it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from adgen.base.cxx_names import demangle
from adgen.base.diagnostics import AdgenError, error
from adgen.frontend.model import Activity, Mode

from adgen.commands.cc.layout import _size
from adgen.ir_ad.custom import HandDerivatives
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import (PTR, Argument, Cursor, Function, Header, Instruction, Module, Operand, Type,
                            parse_instruction, parse_type)
from adgen.ir_ad.ir.edit import (c_string, edit_declarations, int_as_pointer, lines_by_function,
                                 with_attributes)
from adgen.ir_ad.ir.text import global_addresses

# The entry points adgen implements, by the part of the name Enzyme looks for (a declared name
# containing it, `__enzyme_autodiff_f` say, is that entry point, as for Enzyme).
ENTRY_POINTS = {
    "__enzyme_autodiff": "autodiff",  # reverse mode, both sweeps in one call
    "__enzyme_fwddiff": "fwddiff",  # forward mode
    "__enzyme_augmentfwd": "augmentfwd",  # split mode: the forward sweep, keeping a tape
    "__enzyme_reverse": "reverse",  # split mode: the reverse sweep, given the tape
    "__enzyme_augmentsize": "augmentsize",  # split mode: the tape's size in bytes
    "__enzyme_batch": "batch",  # no derivative: the function on N lanes of arguments
}
# Calls that only steer Enzyme's analyses: their value is their first argument (or nothing).
PASS_THROUGH = ("__enzyme_iter", "__enzyme_ignore_derivatives")
TYPE_HINTS = ("__enzyme_float", "__enzyme_double", "__enzyme_integer", "__enzyme_pointer")
# What a program stores in shadow memory where a function pointer or a virtual table is: adgen's
# derivatives call through the primal pointer (specs/abi.md), never through its shadow, so the
# function, or the table, itself serves (Enzyme's returns a table of its derivatives).
SHADOW_ALIKE = ("__enzyme_virtualreverse",)
NOT_IMPLEMENTED = ("__enzyme_fwdsplit", "__enzyme_truncate",
                   "__enzyme_expand", "__enzyme_error_estimate", "__enzyme_trace", "__enzyme_condition",
                   "__enzyme_likelihood", "__enzyme_sample", "__enzyme_observe", "__enzyme_todense",
                   "__enzyme_call_inactive")

# Markers taking no value of their own, by what they say of the parameter that follows.
PARAM_MARKERS = {"enzyme_dup", "enzyme_dupnoneed", "enzyme_out", "enzyme_const"}
RETURN_MARKERS = {"enzyme_primal_return", "enzyme_const_return", "enzyme_active_return", "enzyme_dup_return",
                  "enzyme_noret"}
HINTS = {"enzyme_not_overwritten", "enzyme_nofree", "enzyme_runtime_activity"}  # adgen needs none of them
TAKES_VALUE = {"enzyme_width", "enzyme_allocated", "enzyme_tape"}


@dataclass(frozen=True)
class Request:
    """What a derivative is specialized for: calls with equal requests share one."""

    function: str  # the IR name of the function differentiated
    mode: Mode  # FORWARD, REVERSE, or SPLIT (augmentfwd, reverse and augmentsize share one)
    activities: tuple[Activity, ...]
    returns: Activity | None  # None for a function returning void
    width: int


@dataclass(frozen=True)
class ParamArgs:
    """Where a parameter's value and shadows are among the call's arguments. A struct by value:
    `pieces`, the arguments the call passes it as (none, one or more values in registers, or one
    address where `memory`)."""

    value: int
    shadows: tuple[int, ...] = ()
    pieces: tuple[int, ...] | None = None
    memory: bool = False


@dataclass(frozen=True)
class ByValue:
    """A parameter the source declares as a struct (a class, a complex number) by value."""

    spelling: str
    size: int  # bytes
    floating: bool  # holds floating data, or pointers to it: it takes a marker
    empty: bool  # no fields of its own: the target may pass it as no value at all


@dataclass(frozen=True)
class Declared:
    """A function as its source declares it, where it passes or returns a struct by value: per
    parameter, a ByValue, or None for one the IR passes as one value."""

    params: tuple[ByValue | None, ...]
    returns: str = ""  # the spelling of a struct it returns by value


@dataclass
class Call:
    """One call to an entry point, read. (For __enzyme_batch, which derives nothing, the request's
    activities say which parameters take one argument per lane, `dual`, or one for all, `const`;
    a parameter's `shadows` are its other lanes.)"""

    inst: Instruction
    caller: str  # the IR name of the function making it
    entry: str  # a value of ENTRY_POINTS
    request: Request
    params: tuple[ParamArgs, ...]
    primal_return: bool = False  # enzyme_primal_return: the primal result comes first in the returned values
    seed: int | None = None  # __enzyme_reverse: the argument holding the return's adjoint
    tape: int | None = None  # split mode: the argument holding the tape (or, allocated, the memory for it)
    allocated: int | None = None  # enzyme_allocated: the bytes the caller's tape memory has
    sret: int | None = None  # the argument where a returned struct goes (the target's ABI)
    ir_params: tuple[int, ...] | None = None  # a parameter's first IR parameter, by its index (None: the same)


_NAMED = (*ENTRY_POINTS, *NOT_IMPLEMENTED)  # (parts of names: a function naming none calls none)


def entry_point(name: str) -> str | None:
    """Which entry point a called name is, "" for one adgen does not implement, None for none."""
    for part, entry in ENTRY_POINTS.items():
        if part in name:
            return entry
    if any(part in name for part in NOT_IMPLEMENTED + PASS_THROUGH + TYPE_HINTS + SHADOW_ALIKE):
        return "" if any(part in name for part in NOT_IMPLEMENTED) else None
    return None


def find_calls(module: Module, declared: dict[str, Declared] | None = None) -> list[Call]:
    """Every call to an implemented entry point, in the order of the module's text. `declared`:
    the functions passing or returning structs by value, by `bare` name."""
    calls = []
    for fn, inst, entry, defs in _entry_calls(module):
        if entry == "":
            name = inst.callee.lstrip("@").strip('"')
            raise Unsupported(fn.name, inst, f"a call to '{name}', an entry point of Enzyme's API adgen does not "
                                             "implement")
        if entry:
            calls.append(_Reader(module, fn, inst, entry, defs, declared or {}).read())
    return calls


def differentiated(module: Module) -> set[str]:
    """The `bare` names of the functions the calls to entry points name (errors left to find_calls)."""
    found = set()
    for _, inst, entry, defs in _entry_calls(module):
        first = 1 if inst.call_args and "sret" in inst.call_args[0][1] else 0
        if entry and first < len(inst.call_args):
            value = _through_locals(inst.call_args[first][0].value, defs)
            if value in module.functions:
                found.add(bare(value))
    return found


def _entry_calls(module: Module):
    """(function, call, entry point, its _Defs) for each call to one of Enzyme's entry points (in
    the functions whose text names one: the others are not read)."""
    for name in module.functions:
        if not any(part in module.functions.text(name) for part in _NAMED):
            continue
        fn = module.functions[name]
        defs = None
        for inst in fn.instructions():
            if inst.opcode not in ("call", "invoke") or not inst.callee.startswith("@"):
                continue
            entry = entry_point(inst.callee.lstrip("@").strip('"'))
            if entry is None:
                continue
            if defs is None:
                defs = _Defs({i.result: i for i in fn.instructions() if i.result})
                for i in fn.instructions():
                    if i.opcode == "store" and i.operands[1].value in defs:
                        defs.stores.setdefault(i.operands[1].value, []).append(i.operands[0].value)
            yield fn, inst, entry, defs


def bare(name: str) -> str:
    """A function's IR name as its source's compiler names it (linking may rename a static
    function `f` to `f.1`)."""
    return name.lstrip("@").strip('"').split(".")[0]


def shown(name: str) -> str:
    """A function's IR name for messages: a C++ one demangled, without its return type
    (`gmm::objective<double>(int, Wishart, double*)`)."""
    name = bare(name)
    text = demangle(name) if name.startswith("_Z") else None
    if not text:
        return name
    depth, k = 0, len(text)
    for k in range(len(text) - 1, -1, -1):  # back to the parameters' '('
        depth += (text[k] == ")") - (text[k] == "(")
        if depth == 0 and text[k] == "(":
            break
    depth, start = 0, 0
    for i, ch in enumerate(text[:k]):  # the name begins after the return type's last top-level space
        depth += 1 if ch in "<(" else -1 if ch in ">)" else 0
        if ch == " " and depth == 0:
            start = i + 1
    return text[start:]


@dataclass
class Registrations:
    """What a file registers with Enzyme's API, by IR name: derivatives written by hand
    (`__enzyme_register_gradient_F`, `__enzyme_register_derivative_F`), functions whose calls
    carry no derivatives (`__enzyme_inactivefn`, `__attribute__((enzyme_inactive))`), and
    functions to differentiate as a libm function (`__enzyme_function_like`, the attribute
    `enzyme_function_like("log1p")`), and functions that allocate memory (`__enzyme_allocation_like
    = {f, size parameter's index, ...}`: their memory gets a fresh shadow, which adgen releases
    itself; the deallocation function given is not needed)."""

    custom: dict[str, HandDerivatives] = field(default_factory=dict)
    inactive: set[str] = field(default_factory=set)
    like: dict[str, str] = field(default_factory=dict)  # function -> the libm function it is like
    allocators: dict[str, int] = field(default_factory=dict)  # function allocating like malloc -> its size parameter


def registrations(module: Module) -> Registrations:
    """The registrations of a module's globals. A form of Enzyme's adgen does not implement
    (`__enzyme_register_splitderivative`, `__enzyme_inactive_global`, `__enzyme_allocation_like`)
    is an error naming it."""
    found = Registrations()
    for name, line in module.globals.items():
        bare = name.lstrip("@").strip('"')
        if not bare.startswith("__enzyme_"):
            continue
        refs = global_addresses(line.split(" = ", 1)[1])
        functions = [r for r in refs if r in module.functions]
        if "__enzyme_register_gradient" in bare or "__enzyme_register_derivative" in bare:
            gradient = "__enzyme_register_gradient" in bare
            if len(functions) < (3 if gradient else 2):
                raise AdgenError(error(f"'{bare}' must hold the function and its derivative{'s' if gradient else ''} "
                                       "written by hand"))
            f = functions[0]
            known = found.custom.get(f, HandDerivatives(f))
            found.custom[f] = replace(known, augmented=functions[1], gradient=functions[2]) if gradient else \
                replace(known, forward=functions[1])
        elif "__enzyme_inactivefn" in bare:
            found.inactive |= set(functions)
        elif "__enzyme_function_like" in bare:
            strings = [_string(module, r) for r in refs if r not in module.functions]
            if not functions or not strings or strings[0] is None:
                raise AdgenError(error(f"'{bare}' must hold a function and the name of the function it is like"))
            found.like[functions[0]] = strings[0]
        elif "__enzyme_allocation_like" in bare:
            index = int_as_pointer(line)
            if not functions or index is None or index >= len(module.functions[functions[0]].params):
                raise AdgenError(error(f"'{bare}' must hold a function and the index of its size parameter"))
            found.allocators[functions[0]] = index
        elif any(part in bare for part in ("__enzyme_register_splitderivative", "__enzyme_inactive_global")):
            raise AdgenError(error(f"'{bare}': adgen does not implement this registration of Enzyme's API"))
    return found


def _string(module: Module, ref: str) -> str | None:
    return c_string(module.globals.get(ref, ""))


def hinted(text: str, steering: bool = True) -> str:
    """A module's text with the calls that only steer Enzyme's analyses given definitions:
    `__enzyme_float(p, n)` and the other type hints do nothing (adgen needs no hints),
    `__enzyme_virtualreverse(f)` is `f` (SHADOW_ALIKE), and,
    with `steering`, `__enzyme_iter(a, b)` and `__enzyme_ignore_derivatives(x)` are their first
    argument. Without it (code still to differentiate) those two stay calls that neither read
    nor write memory: `iterated` counts the first's differentiations, and the second carries
    no derivative, as an inactive call."""

    def hint(header: Header, line: str) -> str:
        name, ret, params = header.name, header.ret, header.params
        bare = name.lstrip("@").strip('"')
        if any(p in bare for p in PASS_THROUGH) and not steering:
            return with_attributes(line, "nounwind willreturn memory(none)")
        if any(p in bare for p in PASS_THROUGH + TYPE_HINTS + SHADOW_ALIKE):
            args = ", ".join(f"{p.type.text} %a{i}" for i, p in enumerate(params))
            if ret.kind == "void":
                body = "ret void"
            elif params and params[0].type == ret:
                body = f"ret {ret.text} %a0"
            else:
                body = f"ret {ret.text} zeroinitializer" if ret.kind != "int" or not params else \
                    _int_result(ret, params[0].type)
            return f"define internal {ret.text} {name}({args}) alwaysinline {{\n  {body}\n}}"
        return line

    return edit_declarations(text, hint)


def steering_calls(module: Module) -> set[str]:
    """The IR names of the declared functions `hinted` leaves as calls (inactive ones)."""
    return {n for n in module.functions if any(p in n for p in PASS_THROUGH) and module.functions[n].declaration}


def iterated(text: str, before: set[str]) -> str:
    """The text with `__enzyme_iter(a, b)` made `__enzyme_iter(a + b, b)` in the functions not
    in `before` (those the last differentiation wrote), as Enzyme does in each copy of code it
    differentiates: a loop bound that grows with each derivative taken (more terms of a series)."""
    out, count = [], 0
    for fn, line in lines_by_function(text):
        if fn is not None and fn not in before and "__enzyme_iter" in line and " call " in f" {line.strip()}":
            inst = parse_instruction(line.strip())
            if "__enzyme_iter" in inst.callee and len(inst.operands) == 2:
                a, b = inst.operands
                count += 1
                head = f"{inst.result} = " if inst.result else ""
                out.append(f"  %iter.{count} = add {a}, {b.value}")
                line = f"  {head}call {inst.type.text} {inst.callee}({a.type.text} %iter.{count}, {b})"
        out.append(line)
    return "\n".join(out)


def _int_result(ret: Type, given: Type) -> str:
    """The body returning the first argument converted to the declared result type."""
    if given.kind != "int":
        return f"ret {ret.text} 0"
    op = "trunc" if given.bits > ret.bits else "zext"
    return f"%r = {op} {given.text} %a0 to {ret.text}\n  ret {ret.text} %r"


class _Defs(dict):
    """A function's instructions by the value they define, and what is stored into each value
    (the local variables that clang makes at -O0 of arguments passed through a wrapper)."""

    def __init__(self, values: dict[str, Instruction]):
        super().__init__(values)
        self.stores: dict[str, list[str]] = {}


def marker(module: Module, op: Operand, defs: _Defs) -> str | None:
    """The Enzyme marker an argument is (`enzyme_dup`...): a load of the global of that name, or
    the global itself, as Enzyme recognizes them (through a local variable it was stored in);
    None for an ordinary argument."""
    value = _through_locals(op.value, defs)
    if value.startswith("%") and value in defs:
        inst = defs[value]
        if inst.opcode in ("load", "bitcast", "ptrtoint") and inst.operands and inst.operands[0].value.startswith("@"):
            value = inst.operands[0].value
        else:
            return None
    name = value.lstrip("@").strip('"')
    return name if value.startswith("@") and name.startswith("enzyme_") and value in module.globals else None


def _through_locals(value: str, defs: _Defs) -> str:
    """A value as stored, where it is loaded from a local variable stored once (what clang makes
    at -O0 of an argument passed through an inlined wrapper), through casts."""
    for _ in range(32):
        inst = defs.get(value)
        if inst is None:
            return value
        if inst.opcode in ("bitcast", "addrspacecast"):
            value = inst.operands[0].value
        elif inst.opcode == "load" and inst.operands[0].value in defs and \
                defs[inst.operands[0].value].opcode == "alloca":
            stores = defs.stores.get(inst.operands[0].value, [])
            if len(stores) != 1:
                return value
            value = stores[0]
        else:
            return value
    return value


class _Reader:
    """Reads one call's arguments, left to right, as Enzyme's `handleArguments` does."""

    def __init__(self, module: Module, fn: Function, inst: Instruction, entry: str, defs: _Defs,
                 declared: dict[str, Declared]):
        self.module, self.fn, self.inst, self.entry, self.defs = module, fn, inst, entry, defs
        self.declared = declared
        self.args = [op for op, _ in inst.call_args]
        self.sret = next((i for i, (_, attrs) in enumerate(inst.call_args) if "sret" in attrs), None)
        self.mode = {"fwddiff": Mode.FORWARD, "autodiff": Mode.REVERSE}.get(entry, Mode.SPLIT)

    def fail(self, what: str, at: int | None = None) -> Unsupported:
        """A located error; at an argument's own line and column where the IR has them."""
        inst = self.inst
        if at is not None and self.args[at].value in self.defs and self.defs[self.args[at].value].dbg:
            inst = self.defs[self.args[at].value]
        return Unsupported(self.fn.name, inst, what)

    def marker(self, i: int) -> str | None:
        return marker(self.module, self.args[i], self.defs)

    def read(self) -> Call:
        first = 0 if self.sret is None else 1
        if self.sret not in (None, 0):
            raise self.fail("a call whose struct result the target passes in an unexpected place")
        primal = self._primal(first)
        slots = self._slots(primal, first)
        ret_marks = {self.marker(i) for i in range(first + 1, len(self.args))} & RETURN_MARKERS
        width = self._width(first)
        if self.entry == "batch":
            return self._batch(primal, first, width)
        if self.entry == "augmentsize":
            return self._size(primal, slots, first, width)
        call = Call(self.inst, self.fn.name, self.entry, Request(primal.name, self.mode, (), None, width), (),
                    primal_return="enzyme_primal_return" in ret_marks, sret=self.sret,
                    ir_params=tuple(s.first for s in slots) if len(slots) != len(primal.params) else None)
        activities, params = [], []
        i = first + 1
        extra: list[int] = []  # arguments after the last parameter's
        while i < len(self.args):
            m = self.marker(i)
            if m in RETURN_MARKERS or m in HINTS:
                i += 1
                continue
            if m in TAKES_VALUE:
                i = self._valued(call, m, i)
                continue
            if m is not None and m not in PARAM_MARKERS:
                raise self.fail(f"the marker '{m}' (argument {i + 1}), which adgen does not implement"
                                if m in _KNOWN_ELSEWHERE else f"'{m}' (argument {i + 1}), which is not a marker of "
                                "Enzyme's API", i)
            slot = slots[len(params)] if len(params) < len(slots) else None
            if m is not None:
                i += 1
                nothing = slot is not None and slot.struct is not None and not slot.ir  # (an empty class)
                if (i == len(self.args) or self.marker(i) is not None) and not nothing:
                    raise self.fail(f"'{m}' (argument {i}) is not followed by the argument it describes", i - 1)
            if slot is None:
                extra.append(i)
                i += 1
                continue
            if slot.struct is not None:
                at = min(i, len(self.args) - 1)
                activities.append(self._struct_activity(m, slot.struct, primal, len(params), at))
                pieces, memory = self._struct_args(i, slot, primal, len(params))
                params.append(ParamArgs(i, (), pieces, memory))
                i += len(pieces)
                continue
            act = self._activity(m, slot.type, len(params), i)
            shadows = ()
            if act in (Activity.DUP, Activity.DUPONLY, Activity.DUAL, Activity.DUALONLY):
                shadows = tuple(range(i + 1, i + 1 + width))
                if shadows[-1] >= len(self.args):
                    raise self.fail(f"parameter {len(params) + 1} of '{_c(primal.name)}' is '{_word(m, act)}' but the "
                                    f"call ends before its {'shadow' if width == 1 else f'{width} shadows'}", i)
                for s in shadows:
                    if self.marker(s) is not None:
                        raise self.fail(f"'{self.marker(s)}' (argument {s + 1}) stands where the shadow of parameter "
                                        f"{len(params) + 1} of '{_c(primal.name)}' should be", s)
            activities.append(act)
            params.append(ParamArgs(i, shadows))
            i += 1 + len(shadows)
        if len(params) < len(slots):
            raise self.fail(f"'{_c(primal.name)}' takes {len(slots)} parameters but the call gives "
                            f"{len(params)}")
        returns = self._returns(primal, ret_marks)
        call.request = Request(primal.name, self.mode, tuple(activities), returns, width)
        call.params = tuple(params)
        self._extra(call, extra)
        return call

    def _batch(self, primal: Function, first: int, width: int) -> Call:
        """__enzyme_batch: per parameter, one argument (enzyme_scalar, or any at width 1) or one
        per lane (enzyme_vector, the default), read as a parameter's value and its other lanes."""
        if self.declared.get(bare(primal.name)) is not None:
            raise self.fail(f"__enzyme_batch of '{_c(primal.name)}', which passes a struct by value: adgen's "
                            "__enzyme_batch passes the arguments as they are, which the ABI may split otherwise")
        params, lanes, i = [], [], first + 1
        while i < len(self.args):
            m = self.marker(i)
            if m == "enzyme_width":
                i += 2
                continue
            if m not in (None, "enzyme_scalar", "enzyme_vector"):
                raise self.fail(f"'{m}' (argument {i + 1}) in a call to __enzyme_batch, which takes enzyme_scalar, "
                                "enzyme_vector and enzyme_width", i)
            i += m is not None
            if len(params) == len(primal.params):
                raise self.fail(f"more arguments than '{_c(primal.name)}' takes", i)
            vector = m == "enzyme_vector" or (m is None and width > 1)
            count = width if vector else 1
            if i + count > len(self.args) or any(self.marker(j) for j in range(i, i + count)):
                raise self.fail(f"parameter {len(params) + 1} of '{_c(primal.name)}' needs {count} arguments, one per "
                                "lane", min(i, len(self.args) - 1))
            params.append(ParamArgs(i, tuple(range(i + 1, i + count))))
            lanes.append(Activity.DUAL if vector else Activity.CONST)
            i += count
        if len(params) < len(primal.params):
            raise self.fail(f"'{_c(primal.name)}' takes {len(primal.params)} parameters but the call gives "
                            f"{len(params)}")
        return Call(self.inst, self.fn.name, "batch", Request(primal.name, Mode.FORWARD, tuple(lanes), None, width),
                    tuple(params), sret=self.sret)

    def _size(self, primal: Function, slots: list[_Slot], first: int, width: int) -> Call:
        """__enzyme_augmentsize: a marker per parameter and nothing else (as Enzyme reads it)."""
        marks = [(i, self.marker(i)) for i in range(first + 1, len(self.args)) if self.marker(i) != "enzyme_width"
                 and (i == 0 or self.marker(i - 1) != "enzyme_width")]
        if len(marks) != len(slots) or any(m not in PARAM_MARKERS for _, m in marks):
            raise self.fail(f"__enzyme_augmentsize takes one marker per parameter of '{_c(primal.name)}' "
                            f"({len(slots)}), and nothing else")
        acts = tuple(self._struct_activity(m, p.struct, primal, k, i) if p.struct else self._activity(m, p.type, k, i)
                     for k, ((i, m), p) in enumerate(zip(marks, slots)))
        request = Request(primal.name, Mode.SPLIT, acts, self._returns(primal, set()), width)
        return Call(self.inst, self.fn.name, "augmentsize", request, (), sret=self.sret)

    def _primal(self, at: int) -> Function:
        if at >= len(self.args):
            raise self.fail("a call to Enzyme's API without the function to differentiate")
        value = _through_locals(self.args[at].value, self.defs)
        fn = self.module.functions.get(value)
        if fn is None:
            raise self.fail("the function to differentiate must be named at the call (a function of this file, "
                            f"not a pointer computed at run time: found '{value}'; a macro, or a wrapper marked "
                            "always_inline, may pass it on)", at)
        if fn.declaration:
            raise self.fail(f"'{_c(fn.name)}' is declared but not defined in this file, so adgen cannot "
                            "differentiate it: define it in the file that differentiates it", at)
        if fn.variadic:
            raise self.fail(f"'{_c(fn.name)}' is variadic, which adgen cannot differentiate", at)
        return fn

    def _slots(self, primal: Function, first: int) -> list[_Slot]:
        """The function's parameters as its source declares them, each with the IR parameters the
        target's ABI passes it as: a struct by value in memory (`byval`, or a pointer to a copy,
        of more than 16 bytes), in the values whose layout covers its bytes (clang's coercion), or,
        an empty class, in none or one value (which, the count of the IR's parameters tells)."""
        ir = primal.params
        declared = self.declared.get(bare(primal.name))
        if declared is not None and declared.returns:
            raise self.fail(f"'{_c(primal.name)}' returns a struct by value ('{declared.returns}'), which Enzyme's "
                            "API returns in the target's own way: return it through a pointer parameter", first)
        if declared is None or all(p is None for p in declared.params):
            return [_Slot(p.type, None, (p,), k) for k, p in enumerate(ir)]
        for empty in (0, 1):
            slots, k = [], 0
            for p in declared.params:
                n = 1 if p is None else _pieces(self.module, ir[k:], p, empty)
                if n is None or k + n > len(ir):
                    break
                slots.append(_Slot(ir[k].type if p is None else PTR, p, tuple(ir[k:k + n]), k))
                k += n
            else:
                if k == len(ir):
                    return slots
        raise self.fail(f"'{_c(primal.name)}' takes a struct by value as IR parameters adgen cannot tell apart", first)

    def _struct_activity(self, m: str | None, s: ByValue, primal: Function, index: int, at: int) -> Activity:
        """A struct by value is a constant: Enzyme passes it as the target's ABI splits it, so its
        derivative has no place of its own in Enzyme's API."""
        what = f"parameter {index + 1} of '{_c(primal.name)}', a struct by value ('{s.spelling}')"
        if self.mode is Mode.SPLIT:
            raise self.fail(f"split mode takes no struct by value ({what}): its tape would keep the address of the "
                            "call's copy of it; pass it by pointer", at)
        if m == "enzyme_const" or (m is None and not s.floating):
            return Activity.CONST
        if m is None:
            raise self.fail(f"{what} holding floating data, has no marker: mark it enzyme_const", at)
        raise self.fail(f"'{m}' on {what}: adgen takes one only as enzyme_const (Enzyme passes it as the target's "
                        "ABI splits it); for its derivative, pass its address with enzyme_dup", at)

    def _struct_args(self, i: int, slot: _Slot, primal: Function, index: int) -> tuple[tuple[int, ...], bool]:
        """The arguments from `i` that pass a struct by value, and whether in memory (its address):
        `byval`; the same values the function takes; a pointer to a copy of more than 16 bytes
        (AArch64); else the values whose layout covers its bytes, as the function would take them
        in registers where it takes it in memory."""
        args, attrs, s = self.args, self.inst.call_args, slot.struct
        ir = [p.type for p in slot.ir]
        in_memory = len(slot.ir) == 1 and ("byval" in slot.ir[0].attrs or (ir[0].kind == "ptr" and s.size > 16))
        if i < len(args) and "byval" in attrs[i][1]:
            return (i,), True
        if not in_memory and [a.type for a in args[i:i + len(ir)]] == ir:
            pieces = tuple(range(i, i + len(ir)))
        elif i < len(args) and args[i].type.kind == "ptr" and s.size > 16:
            return (i,), True
        else:
            n = _pieces(self.module, [Argument(a.type, "", {}) for a in args[i:]], s, 1)
            if n is None:
                raise self.fail(f"the call ends before parameter {index + 1} of '{_c(primal.name)}', a struct by value "
                                f"('{s.spelling}'), is whole", len(args) - 1)
            pieces = tuple(range(i, i + n))
        for j in pieces:
            if self.marker(j) is not None:
                raise self.fail(f"'{self.marker(j)}' (argument {j + 1}) stands where parameter {index + 1} of "
                                f"'{_c(primal.name)}', a struct by value ('{s.spelling}'), should be", j)
        return pieces, False

    def _width(self, first: int) -> int:
        widths = [i for i in range(first + 1, len(self.args)) if self.marker(i) == "enzyme_width"]
        if not widths:
            return 1
        if len(widths) > 1:
            raise self.fail("enzyme_width is given twice", widths[1])
        at = widths[0] + 1
        if at >= len(self.args) or self.args[at].type.kind != "int" or not self.args[at].value.lstrip("-").isdigit():
            raise self.fail("enzyme_width must be followed by a constant integer", widths[0])
        width = int(self.args[at].value)
        if not 1 <= width <= 64:
            raise self.fail(f"enzyme_width must be between 1 and 64, not {width}", at)
        return width

    def _valued(self, call: Call, m: str, i: int) -> int:
        """A marker followed by a value of its own; returns the index after that value."""
        if i + 1 >= len(self.args):
            raise self.fail(f"'{m}' is not followed by its value", i)
        value = self.args[i + 1]
        if m == "enzyme_allocated":
            if value.type.kind != "int" or not value.value.isdigit():
                raise self.fail("enzyme_allocated must be followed by a constant number of bytes", i + 1)
            call.allocated = int(value.value)
        elif m == "enzyme_tape":
            if self.mode is not Mode.SPLIT:
                raise self.fail("enzyme_tape belongs to __enzyme_augmentfwd and __enzyme_reverse", i)
            call.tape = i + 1
        return i + 2

    def _activity(self, m: str | None, t: Type, index: int, at: int) -> Activity:
        """Enzyme's marker (or, without one, the parameter's IR type) as an adgen activity."""
        forward = self.mode is Mode.FORWARD
        if m is None:  # Enzyme's default by type: pointers are duplicated, floats active (tangents forward)
            m = "enzyme_dup" if t.kind == "ptr" or (forward and t.kind == "float") else \
                "enzyme_out" if t.kind == "float" else "enzyme_const"
        if m == "enzyme_const":
            return Activity.CONST
        if m == "enzyme_out":
            if forward or t.kind != "float":
                where = "in forward mode" if forward else f"on {_kind(t)}"
                raise self.fail(f"enzyme_out {where} (parameter {index + 1}): it gives a floating parameter of a "
                                "reverse-mode call its gradient in the returned values", at)
            return Activity.ACTIVE
        if t.kind != "ptr" and not (forward and t.kind == "float"):
            needs = "forward mode it needs a float or a pointer" if forward else "reverse mode it needs a pointer"
            raise self.fail(f"'{m}' on parameter {index + 1}, {_kind(t)}: in {needs}", at)
        if forward:
            return Activity.DUAL
        return Activity.DUP if m == "enzyme_dup" else Activity.DUPONLY

    def _returns(self, primal: Function, marks: set[str]) -> Activity | None:
        t = primal.ret
        if t.kind == "void":
            return None
        differentiable = t.kind == "float"
        if "enzyme_const_return" in marks:
            differentiable = False
        elif marks & {"enzyme_active_return", "enzyme_dup_return"} and not differentiable:
            raise self.fail(f"a differentiable return of '{_c(primal.name)}', which returns '{t.text}'")
        if not differentiable:
            return Activity.CONST
        if self.mode is Mode.FORWARD:
            return Activity.DUAL if "enzyme_primal_return" in marks else Activity.DUALONLY
        if self.mode is Mode.REVERSE:
            return Activity.ACTIVE if "enzyme_primal_return" in marks else Activity.ACTIVEONLY
        return Activity.ACTIVE  # split: the forward sweep returns the primal, the reverse sweep takes the seed

    def _extra(self, call: Call, extra: list[int]) -> None:
        """Arguments after the parameters': __enzyme_reverse's seed (for a differentiable return)
        and tape (when no enzyme_tape gave it)."""
        reverse = call.entry == "reverse"
        wants = [w for w, on in (("seed", reverse and call.request.returns is Activity.ACTIVE),
                                 ("tape", reverse and call.tape is None)) if on]
        if len(extra) > len(wants):
            past = extra[len(wants)]
            raise self.fail(f"more arguments than '{_c(call.request.function)}' takes: argument {past + 1} is past "
                            "its parameters", past)
        if len(extra) < len(wants):
            raise self.fail(f"the call ends before its {wants[len(extra)]} (the return's adjoint comes after the "
                            "parameters, then the tape)" if wants[len(extra)] == "seed" else
                            "the call ends before the tape __enzyme_augmentfwd returned")
        for what, at in zip(wants, extra):
            setattr(call, what, at)


@dataclass(frozen=True)
class _Slot:
    """A parameter of the function differentiated, as its source declares it."""

    type: Type  # its IR type (a struct by value: a pointer, as its derivative takes it)
    struct: ByValue | None
    ir: tuple[Argument, ...]  # the IR parameters the target passes it as
    first: int  # the index of the first of them


def _pieces(module: Module, ir: list[Argument], s: ByValue, empty: int) -> int | None:
    """How many of the values `ir` pass a struct by value: one in memory, else the first whose
    layout as a struct covers its bytes; None where they end first. An empty class: `empty`."""
    if s.empty:
        return empty
    if ir and ("byval" in ir[0].attrs or (ir[0].type.kind == "ptr" and s.size > 16)):
        return 1
    for n in range(1, len(ir) + 1):
        types = [p.type for p in ir[:n]]
        if _size(module, parse_type(Cursor("{ " + ", ".join(t.text for t in types) + " }"))) >= s.size:
            return n
    return None


# Markers of Enzyme's API that adgen does not implement (named as such in errors).
_KNOWN_ELSEWHERE = {"enzyme_dupv", "enzyme_dupnoneedv", "enzyme_byref", "enzyme_interleave", "enzyme_interface",
                    "enzyme_trace", "enzyme_duptrace", "enzyme_likelihood", "enzyme_duplikelihood",
                    "enzyme_observations", "enzyme_active_rand_var", "enzyme_strong_zero", "enzyme_scalar",
                    "enzyme_vector", "enzyme_buffer"}


def _kind(t: Type) -> str:
    """An IR type as C programmers say it."""
    return {"ptr": "a pointer", "int": "an integer", "float": "a floating-point number"}.get(t.kind, f"'{t.text}'")


def _c(name: str) -> str:
    return shown(name)


def _word(m: str | None, act: Activity) -> str:
    return m or f"{act.word} (by its type)"
