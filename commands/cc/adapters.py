"""Calls to Enzyme's entry points, rewritten: each becomes a call to an *adapter*, an internal
function taking exactly the arguments that call passes (the types C's variadic call gave them:
a float as a double) and returning what it returns (the type the program declared the entry
point with, or through the struct-return pointer the target's ABI gives it). The adapter calls
the kernel of the derived function (kernels.py: the address of each returned value, then the
parameters) and packs what comes back as Enzyme's API returns it: in order, the values a
caller asked for laid out as a C struct of them, read back as the declared type (a struct of
two doubles, a double, an array...). Markers no longer used are dropped with their loads. A
struct by value reaches the kernel by its address: the call's own copy where the call passes it in
memory, else a copy the adapter makes of the values the call passes it as."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.frontend.abi import Signature

from adgen.ir_ad.ir.builder import Builder, Declarations, V, local
from adgen.ir_ad.diagnose import Unsupported
from adgen.commands.cc.calls import Call, ParamArgs
from adgen.commands.cc.layout import _size, _size_align
from adgen.ir_ad.ir import I32, I64, PTR, VOID, Cursor, Module, Type, parse_header, parse_type
from adgen.ir_ad.ir.edit import define_line, define_weak_globals, drop_dead_loads, replace_instructions

TAPE_ALIGN = 16  # what a split-mode tape needs; a caller's tape memory is aligned up to it


@dataclass(frozen=True)
class Kernel:
    """A derived function as the adapters call it."""

    sig: Signature
    name: str  # "@__adgen_kernel_..."
    params: tuple[Type, ...]  # its IR parameter types: the returned values' addresses, then the parameters


def kernel_types(text: str, name: str) -> tuple[Type, ...]:
    """The IR parameter types of a kernel defined in a module's text."""
    return tuple(p.type for p in parse_header(define_line(text, name)).params)


def rewrite(module: Module, calls: list[Call], kernels: dict, tape_sizes: dict[str, int]) -> str:
    """The module's text with each call replaced by a call to its adapter, the adapters added.
    `kernels` maps (request, part) to the Kernel the call's entry point needs ("" for the
    whole derivative, or split mode's "forward", "reverse", "tape_size"); `tape_sizes` the
    split entries' tape bytes, by the derived name."""
    decls = Declarations(set(module.functions), 0)
    adapters = []
    replaced: dict[str, dict[str, str]] = {}  # caller -> instruction text -> its replacement
    unused: dict[str, set[str]] = {}  # caller -> the values only the replaced calls used
    for k, call in enumerate(calls):
        writer = _Adapter(module, call, kernels, tape_sizes, decls, f"@__adgen_enzyme_call.{k}")
        adapters.append(writer.write())
        replaced.setdefault(call.caller, {})[call.inst.text] = writer.call_text()
        unused.setdefault(call.caller, set()).update(call.inst.call_args[i][0].value for i in writer.unused)
    text = replace_instructions(module.text, replaced)
    # The markers only the replaced calls used are loaded no more, and defined weak, so that a
    # program declaring them `extern`, as Enzyme's headers do, links either way.
    text = drop_dead_loads(text, unused, "@enzyme_")
    text = define_weak_globals(text, "@enzyme_")
    return text + "\n" + "\n".join(decls.added + adapters) + "\n"


class _Adapter:
    """Writes one call's adapter."""

    def __init__(self, module: Module, call: Call, kernels: dict, tape_sizes: dict[str, int], decls: Declarations,
                 name: str):
        self.module, self.call, self.kernels, self.tape_sizes, self.name = module, call, kernels, tape_sizes, name
        self.b = Builder(decls, [], prefix="a")
        self.args = [op for op, _ in call.inst.call_args]
        used = [call.sret] if call.sret is not None else []
        for p in call.params:
            used += list(p.pieces) if p.pieces is not None else [p.value, *p.shadows]
        used += [i for i in (call.seed, call.tape) if i is not None]
        self.used = used
        self.unused = [i for i in range(len(self.args)) if i not in used]
        self.params = {i: V(self.args[i].type, local(f"arg{i}")) for i in used}

    def fail(self, what: str) -> Unsupported:
        return Unsupported(self.call.caller, self.call.inst, what)

    def call_text(self) -> str:
        inst = self.call.inst
        args = ", ".join(self._arg_text(i) for i in self.used)
        head = f"{inst.result} = " if inst.result else ""
        after = f"\n  br label {inst.targets[0]}" if inst.opcode == "invoke" else ""  # adapters do not unwind
        return f"{head}call {inst.type.text} {self.name}({args}){after}"

    def _arg_text(self, i: int) -> str:
        op, attrs = self.call.inst.call_args[i]
        sret = f" sret({attrs['sret']})" if "sret" in attrs else ""
        return f"{op.type.text}{sret} {op.value}"

    def write(self) -> str:
        call, b = self.call, self.b
        entry = call.entry
        part = {"augmentfwd": "forward", "reverse": "reverse", "augmentsize": "tape_size"}.get(entry, "")
        kernel = self.kernels.get((call.request, part))
        values: list[V] = []
        if entry == "batch":
            values = self._batch()
        elif entry == "augmentsize":
            values.append(V(I64, str(self.tape_sizes[kernel.sig.derivation.name] + TAPE_ALIGN - 1)))
        else:
            tape = self._tape(kernel) if part else None
            outs = [b.value(PTR, f"alloca {self._field_type(kernel, f.name, f.count).text}, align 16")
                    for f in kernel.sig.fields]
            args = outs + self._kernel_args(kernel, tape)
            b.decls.need(kernel.name, VOID, list(kernel.params))
            b.emit(f"call void {kernel.name}({', '.join(str(a) for a in args)})")
            if entry == "augmentfwd" and call.allocated is None:
                values.append(tape)
            if entry == "reverse" and call.allocated is None:
                b.call("@free", VOID, [self.params[call.tape]])
            for f, out in zip(kernel.sig.fields, outs):
                if f.name == "ret" and not (call.primal_return or entry == "augmentfwd"):
                    continue
                t = self._field_type(kernel, f.name, 1)
                values += [b.load(t, b.gep(t, out, V(I64, str(j))) if j else out) for j in range(f.count)]
        self._pack(values)
        params = ", ".join(self._param_text(i) for i in self.used)
        return "\n".join([f"define internal {call.inst.type.text} {self.name}({params}) {{", "entry:", *b.lines,
                          "}"])

    def _batch(self) -> list[V]:
        """__enzyme_batch: the function called once per lane (its arguments one per lane, or
        one for all), its results in lane order."""
        fn = self.module.functions[self.call.request.function]
        results = []
        for lane in range(self.call.request.width):
            args = []
            for p, given in zip(fn.params, self.call.params):
                at = ([given.value, *given.shadows])[lane] if given.shadows else given.value
                args.append(self._convert(self.params[at], p.type))
            result = self.b.call(fn.name, fn.ret, args)
            if result is not None:
                results.append(result)
        return results

    def _param_text(self, i: int) -> str:
        op, attrs = self.call.inst.call_args[i]
        sret = f" sret({attrs['sret']})" if "sret" in attrs else ""
        return f"{op.type.text}{sret} {self.params[i].ref}"

    def _field_type(self, kernel: Kernel, field: str, count: int) -> Type:
        """The IR type of a returned value: the primal's result or its tangent, or a parameter's
        gradient (an array of them at width > 1)."""
        fn = self.module.functions[self.call.request.function]
        d = kernel.sig.derivation
        t = fn.ret
        if field not in ("ret", f"{d.prefix}ret"):
            index = [p.name for p in d.primal.params].index(field[len(d.prefix):])
            t = fn.params[self.call.ir_params[index] if self.call.ir_params else index].type
        return Type(f"[{count} x {t.text}]", "array", 0, (t,), count) if count > 1 else t

    def _tape(self, kernel: Kernel) -> V:
        """Split mode's tape: the caller's memory (enzyme_allocated, aligned up here) or, without
        it, memory the forward sweep's adapter allocates and the reverse sweep's frees."""
        call, b = self.call, self.b
        size = self.tape_sizes[kernel.sig.derivation.name]
        if call.allocated is None:
            if call.entry == "augmentfwd":
                return b.call("@malloc", PTR, [V(I64, str(size))])
            return self.params[call.tape]
        if call.allocated < size + TAPE_ALIGN - 1:
            raise self.fail(too_small(call.allocated, size))
        given = self.params[call.tape]
        at = b.cast("ptrtoint", given, I64)
        up = b.binary("and", b.binary("add", at, V(I64, str(TAPE_ALIGN - 1))), V(I64, str(-TAPE_ALIGN)))
        return b.gep(Type("i8", "int", 8), given, b.binary("sub", up, at))

    def _kernel_args(self, kernel: Kernel, tape: V | None) -> list[V]:
        """The kernel's parameters after the returned values' addresses, from the call's."""
        call, sig = self.call, kernel.sig
        types = list(kernel.params[len(sig.fields):])
        given: list[V | None] = []
        if sig.part in ("", "forward"):
            for p in call.params:
                if p.pieces is not None:
                    given.append(self._struct_address(p))
                    continue
                given += [self.params[p.value], *(self.params[s] for s in p.shadows)]
        if sig.part in ("forward", "reverse"):
            given = given + [tape] if sig.part == "forward" else [tape]
        seeds = [s for s in sig.params if s.role.startswith("seed")]
        for _ in seeds:  # the return's adjoint: 1 for __enzyme_autodiff, the call's for __enzyme_reverse
            given.append(self.params[call.seed] if call.seed is not None else None)
        out = []
        for value, t in zip(given, types):
            out.append(self.b.const(t, 1.0) if value is None else self._convert(value, t))
        return out

    def _struct_address(self, p: ParamArgs) -> V:
        """A struct by value's address: the call's copy in memory, or a copy of the values the call
        passes it as, laid out as clang lays out their struct (whose bytes cover the struct's)."""
        if p.memory:
            return self.params[p.pieces[0]]
        b = self.b
        values = [self.params[j] for j in p.pieces]
        t = parse_type(Cursor("{ " + ", ".join(v.type.text for v in values) + " }")) if values else Type("i8", "int", 8)
        room = b.value(PTR, f"alloca {t.text}, align 16")
        for k, v in enumerate(values):
            b.store(v, b.gep(t, room, V(I32, "0"), V(I32, str(k))) if k else room)
        return room

    def _convert(self, v: V, t: Type) -> V:
        if v.type == t:
            return v
        b = self.b
        if v.type.kind == "float" and t.kind == "float":
            return b.cast("fpext" if v.type.bits < t.bits else "fptrunc", v, t)
        if v.type.kind == "int" and t.kind == "int":
            return b.cast("sext" if v.type.bits < t.bits else "trunc", v, t)
        raise self.fail(f"an argument of type '{v.type.text}' where the parameter is '{t.text}'")

    def _pack(self, values: list[V]) -> None:
        """Returns `values` as the call's declared type: itself when it is that type (converted
        between floating types), else laid out as a C struct of them and read back as the type
        (stored through the struct-return pointer when there is one)."""
        b, inst = self.b, self.call.inst
        ret = inst.type
        if self.call.sret is not None:
            size = _size(self.module, _sret_type(self.call))
            if size < _packed_size(self.module, values):
                raise self.fail(self._too_small(values, size))
            self._store_packed(values, self.params[self.call.sret])
            b.emit("ret void")
            return
        if ret.kind == "void":
            b.emit("ret void")
            return
        if len(values) == 1 and (values[0].type == ret or (values[0].type.kind == ret.kind and ret.kind in ("float",
                                                                                                          "int"))):
            v = values[0]
            if v.type != ret:
                v = b.cast("fpext" if v.type.bits < ret.bits else "fptrunc", v, ret) if ret.kind == "float" else \
                    b.cast("trunc" if v.type.bits > ret.bits else "zext", v, ret)
            b.emit(f"ret {v}")
            return
        size = _size(self.module, ret)
        if size < _packed_size(self.module, values):
            raise self.fail(self._too_small(values, size))
        room = b.value(PTR, f"alloca i8, i64 {max(size, 1)}, align 16")
        b.memset0(room, V(I64, str(size)))
        self._store_packed(values, room)
        b.emit(f"ret {b.load(ret, room)}")

    def _too_small(self, values: list[V], size: int) -> str:
        what = ", ".join(v.type.text for v in values)
        return (f"the call returns a value of {size} bytes, too small for what it gives back ({what}, "
                f"{_packed_size(self.module, values)} bytes): declare the entry point returning a struct of them")

    def _store_packed(self, values: list[V], base: V) -> None:
        offset = 0
        for v in values:
            size, align = _size_align(self.module, v.type)
            offset = -(-offset // align) * align
            where = self.b.gep(Type("i8", "int", 8), base, V(I64, str(offset))) if offset else base
            self.b.store(v, where)
            offset += size


def too_small(allocated: int, size: int) -> str:
    return (f"a tape of {allocated} bytes (enzyme_allocated), where adgen's tape for this function takes {size} "
            f"bytes and {TAPE_ALIGN - 1} more to align it: allocate at least {size + TAPE_ALIGN - 1}")


def _sret_type(call: Call) -> Type:
    from adgen.ir_ad.ir import Cursor, parse_type

    return parse_type(Cursor(call.inst.call_args[call.sret][1]["sret"]))


def _packed_size(module: Module, values: list[V]) -> int:
    offset = 0
    for v in values:
        size, align = _size_align(module, v.type)
        offset = -(-offset // align) * align + size
    return offset
