"""Calls through function pointers, made direct before differentiation: each indirect call
becomes a call to a dispatcher that compares the pointer with every function of the module
whose address is taken and whose type matches, and calls that one directly. Both modes then
differentiate the dispatcher like any function of the sources, each possible target as a
direct call. A pointer to a function the module does not hold (from a library, say) reaches
the dispatcher's last branch, which says so on stderr and aborts: the derivative code never
runs a function it has no derivative of; but for one of the C++ library's shared object (a
virtual function of its streams, by `dladdr`), which it calls as it is, carrying no
derivatives. A target with external linkage stays a (weak) definition of its symbol in the
object, merged with the user's own: a pointer to it taken in the user's code is then the same
pointer. A local target (a lambda's function made a
function pointer, a static function) is also recognized by the address of the user's own copy,
`adgen.user.NAME` (`extern_weak`: `adgen c++`, which links the file's object with the
derivatives, binds it; elsewhere it is null). A Rust function's address, which the program's
own compile of the crate gives (its symbols are the crate's own), is recognized through a
static of the program's that holds it, `adgen.user.addr.*`, which the wrappers define
(frontend/rust_wrappers.py): adgen's own compile of the crate has the same static, pointing to
adgen's copy; it is renamed (`adgen.own.addr.*`) and the name declared `extern_weak`, so that
the dispatcher reads the program's. A call through a pointer in code inlined from the
C++ library's stream and locale headers is not dispatched: it becomes a plain call of the
pointer through a function the modes see as carrying no derivatives (`LIBRARY_IO`)."""

from __future__ import annotations

from adgen.base.cxx_names import cxx_library_io_header
from adgen.base.naming import PROGRAMS_ADDRESS
from adgen.ir_ad.calls import LIBRARY_IO, is_intrinsic
from adgen.ir_ad.ir import (Function, Instruction, Module, defined_with_prefix, global_addresses,
                            may_call_through_pointer, renamed_global)

MESSAGE = "adgen: a call through a function pointer reached a function outside the sources it differentiated\n"


def devirtualize(text: str, own: set[str] = frozenset()) -> tuple[str, set[str]]:
    """The module's text with its indirect calls going through dispatchers (none: unchanged),
    and the functions they may call, by name: those the object must share with the user's own
    object of the same source (one address for both, so a pointer from either is recognized).
    `own`: functions adgen adds (the derived functions of the stubs), never targets."""
    if not may_call_through_pointer(text):
        return text, set()
    text, addresses = _programs_addresses(text)
    module = Module(text)
    candidates = [f for f in _candidates(module, text) if f.name.lstrip("@").strip('"') not in own]
    lines = text.split("\n")
    dispatchers: dict[tuple, str] = {}
    library: dict[tuple, str] = {}  # calls inside the C++ library's I/O: plain calls, carrying no derivatives
    targets: dict[tuple, list[Function]] = {}
    at = 0  # functions and instructions come in the order of the text: each search goes on from the last
    for name in module.functions:
        if not may_call_through_pointer(module.functions.text(name)):
            continue  # (read only where some call may go through a pointer)
        fn = module.functions[name]
        defs = None
        for inst in fn.instructions():
            if inst.opcode != "call" or not inst.callee.startswith("%") or "(" in inst.type.text:
                continue
            key = (inst.type.text, tuple(a.type.text for a, _ in inst.call_args))
            if _in_library_io(module, inst):  # the C++ library's streams calling themselves
                if key not in library:
                    library[key] = f'@"{LIBRARY_IO}{len(library)}"'
                at = _rewrite(lines, at, inst, library[key])
                continue
            if key not in targets:
                targets[key] = [f for f in candidates if _matches(f, *key)]
            if not targets[key]:  # (no function has its type: an error there, but for a virtual call)
                defs = defs if defs is not None else {i.result: i for i in fn.instructions() if i.result}
                if not _virtual(module, defs, inst):
                    continue
            if key not in dispatchers:
                dispatchers[key] = f'@"adgen.dispatch.{len(dispatchers)}"'
            at = _rewrite(lines, at, inst, dispatchers[key])
    if not dispatchers and not library:
        return text, set()
    for key in dispatchers:  # (the last resort of each: a function of the C++ library's, called as it is)
        library.setdefault(key, f'@"{LIBRARY_IO}{len(library)}"')
    out = [_dispatcher(name, *key, targets[key], library[key], addresses) for key, name in dispatchers.items()]
    out += [_plain_call(name, *key) for key, name in library.items()]
    if not dispatchers:
        return "\n".join(lines + out) + "\n", set()
    out.append(_IN_LIBRARY)
    for name, text in (("libstdc", "libstdc++"), ("libcxx", "libc++")):
        out.append(f'@"{LIBRARY_IO}{name}" = private unnamed_addr constant [{len(text) + 1} x i8] c"{text}\\00"')
    for declaration in ("declare i32 @dladdr(ptr, ptr)", "declare ptr @strstr(ptr, ptr)"):
        if declaration.split("@")[1].split("(")[0] not in {f.lstrip("@") for f in module.functions}:
            out.append(declaration)
    length = len(MESSAGE.encode())
    escaped = "".join(c if c.isprintable() and c not in '"\\' else f"\\{ord(c):02X}" for c in MESSAGE)
    out.append(f'@"adgen.dispatch.message" = private unnamed_addr constant [{length} x i8] c"{escaped}"')
    if "@write" not in module.functions:
        out.append("declare i64 @write(i32, ptr, i64)")
    if "@abort" not in module.functions:
        out.append("declare void @abort()")
    called = {f.name.lstrip("@").strip('"') for key in dispatchers for f in targets[key]}
    out += [f"declare extern_weak void {_users_copy(f)}()"
            for f in {f.name: f for key in dispatchers for f in targets[key] if f.local}.values()]
    if addresses:
        out += [f"{g} = extern_weak global ptr" for g in sorted({g for gs in addresses.values() for g in gs})]
        out.append(f"{_NOWHERE} = private constant ptr null")
    return "\n".join(lines + out) + "\n", called


OWN_ADDRESS = "adgen.own.addr."
_NOWHERE = '@"adgen.dispatch.nowhere"'  # (read in place of a program's static that is not linked in)


def _programs_addresses(text: str) -> tuple[str, dict[str, list[str]]]:
    """The text with the statics holding the program's addresses of functions (`adgen.user.addr.*`,
    the Rust wrappers') renamed `adgen.own.addr.*`, and the functions they point to, by IR name,
    each with the names of the program's statics of it."""
    found: dict[str, list[str]] = {}
    for static, targets in defined_with_prefix(text, PROGRAMS_ADDRESS).items():
        for target in targets:
            found.setdefault(target, []).append(static)
        text = renamed_global(text, static, static.replace(PROGRAMS_ADDRESS, OWN_ADDRESS, 1))
    return text, found


USERS_COPY = "adgen.user."


def _users_copy(f: Function) -> str:
    """The name of the user's own copy of a local function: its source's name (linking may have
    renamed it `f.1`) after USERS_COPY."""
    return '@"' + USERS_COPY + f.name.lstrip("@").strip('"').split(".")[0] + '"'


def _in_library_io(module: Module, inst: Instruction) -> bool:
    """A call through a pointer in code inlined from the C++ library's stream and locale headers
    (a stream's constructor calling its buffer's virtual `imbue`, even one the program's own
    buffer class overrides: I/O moves characters, never derivatives)."""
    where = module.location(inst.dbg)
    return where is not None and cxx_library_io_header(where.file)


def _virtual(module: Module, defs: dict[str, Instruction], inst: Instruction) -> bool:
    """A virtual call: its callee loaded from a virtual table (TBAA's "vtable pointer"), which
    may be the C++ library's object code even where no function of the sources has its type."""
    slot = defs.get(inst.callee)
    if slot is None or slot.opcode != "load":
        return False
    table = slot.operands[0].value
    while table in defs and defs[table].opcode == "getelementptr":
        table = defs[table].operands[0].value
    loaded = defs.get(table)
    return loaded is not None and loaded.opcode == "load" and module.tbaa_types(loaded.tbaa)[:1] == ("vtable pointer",)


def _plain_call(name: str, ret: str, params: tuple[str, ...]) -> str:
    """A function calling its first argument with the others: what a library I/O call becomes,
    a named callee the modes see as carrying no derivatives (calls.py)."""
    args = ", ".join(f"{t} %a{k}" for k, t in enumerate(params))
    call = f"call {ret} %f({args})"
    body = [f"  {call}", "  ret void"] if ret == "void" else [f"  %r = {call}", f"  ret {ret} %r"]
    return "\n".join([f"define internal {ret} {name}(ptr %f{', ' if args else ''}{args}) {{", "entry:", *body, "}"])


def _candidates(module: Module, text: str) -> list[Function]:
    """Functions a pointer may point to: those whose address appears as a value (in globals,
    stores, arguments; not in the arrays adgen adds to keep functions alive), and the external
    functions of the sources, whose address the user's code may take."""
    taken = set()
    for line in text.split("\n"):
        if line.startswith(("@__adgen_", "@llvm.", "declare", "define")):
            continue
        taken.update(global_addresses(line))
    headers = (module.functions.signature(name) for name in module.functions)
    return [f for f in headers if not f.variadic and not is_intrinsic(f.name) and
            (f.name in taken or (not f.declaration and not f.local)) and
            not f.name.lstrip("@").strip('"').startswith("__adgen")]


def _matches(f: Function, ret: str, params: tuple[str, ...]) -> bool:
    return f.ret.text == ret and tuple(p.type.text for p in f.params) == params


def _rewrite(lines: list[str], start: int, inst: Instruction, dispatcher: str) -> int:
    """The call's line, from line `start` on, calling the dispatcher with the pointer first;
    the line after it."""
    i = next(k for k in range(start, len(lines)) if lines[k].strip().startswith(inst.text))
    line = lines[i]
    at = line.index(f" {inst.callee}(")
    rest = line[at + len(inst.callee) + 2:]
    lines[i] = line[:at] + f" {dispatcher}(ptr {inst.callee}" + ("" if rest.startswith(")") else ", ") + rest
    return i + 1


# Whether a function lies in the C++ library's shared object (libstdc++, libc++): a virtual call
# reaching its out-of-line code (a `std::filebuf` deleted through its virtual destructor), which
# moves characters and memory, never derivatives (as the library's calls by name, calls.py).
_IN_LIBRARY = f"""define internal i1 @"{LIBRARY_IO}in"(ptr %f) {{
entry:
  %info = alloca [4 x ptr], align 8
  %found = call i32 @dladdr(ptr %f, ptr %info)
  %none = icmp eq i32 %found, 0
  br i1 %none, label %no, label %named
named:
  %file = load ptr, ptr %info, align 8
  %nameless = icmp eq ptr %file, null
  br i1 %nameless, label %no, label %read
read:
  %gnu = call ptr @strstr(ptr %file, ptr @"{LIBRARY_IO}libstdc")
  %llvm = call ptr @strstr(ptr %file, ptr @"{LIBRARY_IO}libcxx")
  %not_gnu = icmp eq ptr %gnu, null
  %not_llvm = icmp eq ptr %llvm, null
  %neither = and i1 %not_gnu, %not_llvm
  %either = xor i1 %neither, true
  ret i1 %either
no:
  ret i1 false
}}"""


def _dispatcher(name: str, ret: str, params: tuple[str, ...], targets: list[Function], library: str,
                addresses: dict[str, list[str]]) -> str:
    args = [f"{t} %a{k}" for k, t in enumerate(params)]
    call_args = ", ".join(args)
    body = [f"define internal {ret} {name}(ptr %f{', ' if args else ''}{call_args}) {{", "entry:"]
    for k, target in enumerate(targets):
        body.append(f"  %is{k} = icmp eq ptr %f, {target.name}")
        hit = f"%is{k}"
        if target.local:  # (or the user's copy of it)
            body += [f"  %user{k} = icmp eq ptr %f, {_users_copy(target)}", f"  %either{k} = or i1 {hit}, %user{k}"]
            hit = f"%either{k}"
        for j, static in enumerate(addresses.get(target.name, [])):  # (or the program's, which its static holds)
            at = f"{k}.{j}"
            body += [f"  %linked{at} = icmp ne ptr {static}, null",
                     f"  %slot{at} = select i1 %linked{at}, ptr {static}, ptr {_NOWHERE}",
                     f"  %program{at} = load ptr, ptr %slot{at}, align 8",
                     f"  %same{at} = icmp eq ptr %f, %program{at}", f"  %or{at} = or i1 {hit}, %same{at}"]
            hit = f"%or{at}"
        body += [f"  br i1 {hit}, label %call{k}, label %next{k}", f"call{k}:"]
        if ret == "void":
            body += [f"  call void {target.name}({call_args})", "  ret void"]
        else:
            body += [f"  %r{k} = call {ret} {target.name}({call_args})", f"  ret {ret} %r{k}"]
        body.append(f"next{k}:")
    plain = f"call {ret} {library}(ptr %f{', ' if args else ''}{call_args})"
    body += [f'  %library = call i1 @"{LIBRARY_IO}in"(ptr %f)', "  br i1 %library, label %plain, label %outside",
             "plain:", *([f"  {plain}", "  ret void"] if ret == "void" else [f"  %rl = {plain}", f"  ret {ret} %rl"]),
             "outside:"]
    body += [f'  %w = call i64 @write(i32 2, ptr @"adgen.dispatch.message", i64 {len(MESSAGE.encode())})',
             "  call void @abort()", "  unreachable", "}"]
    return "\n".join(body)
