"""What `adgen.load`'s functions take from Python: arguments bound by position or by the C
parameters' names, converted to ctypes, and checked for what C would take on trust (None for a
pointer, an array shorter than `@size` says or than its primal, an integer its C type cannot
hold); results converted back."""

from __future__ import annotations

import ctypes
import operator


_SCALARS = {
    "double": ctypes.c_double, "float": ctypes.c_float, "longdouble": ctypes.c_longdouble, "bool": ctypes.c_bool,
    "byte": ctypes.c_byte, "ubyte": ctypes.c_ubyte, "short": ctypes.c_short, "ushort": ctypes.c_ushort,
    "int": ctypes.c_int, "uint": ctypes.c_uint, "long": ctypes.c_long, "ulong": ctypes.c_ulong,
    "longlong": ctypes.c_longlong, "ulonglong": ctypes.c_ulonglong,
}


NUMPY_DTYPES = {"double": "float64", "float": "float32", "int": "int32", "uint": "uint32", "long": "int64",
                 "ulong": "uint64", "longlong": "int64", "ulonglong": "uint64", "short": "int16", "ushort": "uint16",
                 "byte": "int8", "ubyte": "uint8", "bool": "bool"}


def bind(function: str, params: list[dict], args: tuple, kwargs: dict) -> list:
    """The arguments in the C parameters' order, given by position or by the parameters' names,
    refused as Python refuses them for a function of its own."""
    names = [p["name"] for p in params]
    if len(args) > len(names) or (not kwargs and len(args) != len(names)):
        raise TypeError(f"{function}() takes {len(names)} arguments ({', '.join(names)}), "
                        f"not {len(args) + len(kwargs)}")
    given = dict(enumerate(args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{function}() got an unexpected keyword argument '{key}'")
        if names.index(key) in given:
            raise TypeError(f"{function}() got multiple values for argument '{key}'")
        given[names.index(key)] = value
    missing = [repr(n) for i, n in enumerate(names) if i not in given]
    if missing:
        raise TypeError(f"{function}() missing {len(missing)} required argument{'s' * (len(missing) > 1)}: "
                        f"{', '.join(missing)}")
    return [given[i] for i in range(len(names))]


def check_derivative_arrays(function: str, params: list[dict], args: tuple, width: int) -> None:
    """What the C code would otherwise get wrong, silently or fatally, for derivative arrays:
    each holds as many elements as its primal (times the lanes it interleaves; a scalar's, one
    per lane). A shadow, which reverse mode always writes, is also writeable and shares no
    memory with a primal array, nor with another shadow unless their primals overlap the same
    way (aliased primals have shadows aliased alike); a tangent may be read only (the tangent of
    a `const` input: `f_dir(x, x, n)` is the derivative along x). How many elements the C code
    reads through a primal pointer is `@size`'s to say (`_check_lengths`), or the caller's, as in
    C; a primal given as an integer address or a ctypes array has a size unknown here, so its
    shadow's is not compared."""
    import numpy as np

    given = {p["name"]: a for p, a in zip(params, args)}
    pointers = {p["name"] for p in params if p["ffi"].startswith("ptr")}
    primals = [(p["name"], a) for p, a in zip(params, args) if not p["role"] and isinstance(a, np.ndarray)]
    seen = []
    for p, a in zip(params, args):
        role = p["role"]
        if not role.startswith(("shadow", "tangent")) or not isinstance(a, np.ndarray):
            continue
        owner_name = role.split(" of ", 1)[1].split(",")[0]
        owner = given.get(owner_name)
        lanes = width if "interleaved" in role else 1
        wanted = owner.size * lanes if isinstance(owner, np.ndarray) else a.size if owner_name in pointers else lanes
        if a.size != wanted:
            raise ValueError(f"{function}(): '{p['name']}' has {a.size} elements; as the {role} it must have {wanted}")
        if role.startswith("tangent"):
            continue
        if not a.flags.writeable:
            raise ValueError(f"{function}(): '{p['name']}' is read-only; the gradient is added into it")
        for name, b in primals:
            if np.may_share_memory(a, b):
                raise ValueError(f"{function}(): '{p['name']}' shares memory with '{name}'; a shadow needs memory "
                                 "of its own")
        for name, b, other in seen:
            if np.may_share_memory(a, b) and not (isinstance(owner, np.ndarray) and isinstance(other, np.ndarray)
                                                  and _address(a) - _address(b) == _address(owner) - _address(other)):
                raise ValueError(f"{function}(): '{p['name']}' shares memory with '{name}', though their primals "
                                 "do not overlap so")
        seen.append((p["name"], a, owner))


def _address(array) -> int:
    return array.ctypes.data


def lengths(specs: dict[str, dict], name: str, sizes: list[str]) -> list[tuple[int, int, int, int, str]]:
    """The lengths `@size(p=n)` gives `name`'s pointer parameters (those of its primal, and their
    shadows and tangents): (the parameter's index, a number of elements or -1, the index of the
    integer parameter giving it or -1, the bytes of an element with its lanes, `p=n`)."""
    declared = dict(item.partition("=")[::2] for item in sizes if "=" in item)
    declared = {k.strip(): v.strip() for k, v in declared.items()}
    spec = specs[name]
    params = spec["params"]
    origins = [_origin(specs, name, p["name"]) for p in params]
    out = []
    for i, (p, origin) in enumerate(zip(params, origins)):
        if not p["ffi"].startswith("ptr") or origin is None or origin[1]["name"] not in declared:
            continue
        primal, q = origin
        value = declared[q["name"]]
        count = next((j for j, (r, o) in enumerate(zip(params, origins)) if not r["role"] and o is not None
                      and o[0] is primal and o[1]["name"] == value and o[1]["ffi"] in _INTEGERS), -1)
        if not value.isdigit() and count < 0:
            continue  # (a name that is not an integer parameter here: the split's reverse sweep has no n)
        element = q.get("element", {}).get("size") or _element_bytes(p["ffi"])
        lanes = spec.get("width", 1) if "interleaved" in p["role"] else 1
        if element:
            out.append((i, int(value) if value.isdigit() else -1, count, element * lanes, f"{q['name']}={value}"))
    return out


def pointered(specs: dict[str, dict], name: str) -> set[int]:
    """The parameters of `name` (by index) whose primal parameter points to data that reaches its
    floats through pointers (a std::vector, a struct holding a pointer), and their shadows and
    tangents: no NumPy array is one."""
    params = specs[name]["params"]
    origins = [_origin(specs, name, p["name"]) for p in params]
    return {i for i, o in enumerate(origins) if o is not None and o[1].get("element", {}).get("pointers")}


def _origin(specs: dict[str, dict], function: str, name: str):
    """The primal function and parameter that parameter `name` of `function` is, or is the shadow
    or tangent of, through derivatives of derivatives; None for seeds and tapes."""
    spec = specs.get(function)
    while spec is not None:
        params = {p["name"]: p for p in spec["params"]}
        p = params.get(name)
        if p is not None and p["role"].startswith(("shadow", "tangent")):
            name = p["role"].split(" of ", 1)[1].split(",")[0]
            p = params.get(name)
        if p is None or p["role"]:
            return None
        if spec["kind"] == "primal":
            return spec, p
        spec = specs.get(spec["of"])
    return None


def _element_bytes(ffi: str) -> int:
    kind = ffi.partition(":")[2]
    return ctypes.sizeof(_SCALARS[kind]) if kind in _SCALARS else 0


def check_lengths(function: str, params: list[dict], converted: list, args: list, lengths: list) -> None:
    """Each array holds the elements `@size(p=n)` says the C code reads or writes through it:
    else it would go past its end (a crash, or memory corrupted) before Python could say so."""
    import numpy as np

    for i, number, count, element, declared in lengths:
        a = args[i]
        size = a.nbytes if isinstance(a, np.ndarray) else ctypes.sizeof(a) if isinstance(a, ctypes.Array) else None
        wanted = number if count < 0 else converted[count]
        if size is None or size >= wanted * element:
            continue
        p = params[i]
        which = f" (the {p['role']})" if p["role"] else ""
        given = "" if count < 0 else f" with {params[count]['name']}={wanted}"
        raise ValueError(f"{function}(): '{p['name']}'{which} holds {size // element} elements, but @size({declared})"
                         f"{given} needs {wanted}: the C code would go past its end")


def _scalar(ffi: str):
    if ffi not in _SCALARS:
        raise TypeError(f"adgen.load cannot pass a C value of kind '{ffi}' through ctypes")
    return _SCALARS[ffi]


def argtype(param: dict):
    if not param["ffi"]:
        raise TypeError(f"adgen.load cannot pass parameter '{param['name']}': it is passed by value, of a type ctypes "
                        "cannot make (a C++ class with a std::vector in it, say); call this function from C or C++")
    return ctypes.c_void_p if param["ffi"].startswith("ptr") else value_type(param)


def value_type(entry: dict):
    """The ctypes type of a value passed or returned by value: a scalar, a struct (a ctypes
    Structure of its fields, nested alike) or a complex number (a pair, as C lays it out)."""
    ffi = entry["ffi"]
    if ffi == "struct":
        return structure("struct", entry["fields"])
    if ffi.startswith("complex:"):
        part = _scalar(ffi.partition(":")[2])
        return type(ffi, (ctypes.Structure,), {"_fields_": [("real", part), ("imag", part)]})
    return _scalar(ffi)


def structure(name: str, fields: list[dict]):
    """A ctypes Structure with the manifest's fields (arrays of `count` elements)."""
    members = [(f["name"], value_type(f) * f["count"] if f["count"] > 1 else value_type(f)) for f in fields]
    return type(name, (ctypes.Structure,), {"_fields_": members})


def argument(value, param: dict, ctype, function: str, through_pointers: bool = False):
    """An argument as ctypes passes it, refused with the function's and parameter's names where
    ctypes would raise its own ArgumentError, wrap an integer silently, or pass NULL.
    `through_pointers`: the parameter's data reaches its floats through pointers (`pointered`)."""
    ffi, name = param["ffi"], param["name"]
    if not ffi.startswith("ptr"):
        return _to_c(value, ctype, name, function)
    if value is None:
        what = f" ({param['role']})" if param["role"] else ""
        raise TypeError(f"{function}(): pointer parameter '{name}'{what} got None: the C code reads or writes through "
                        "it; pass a NumPy array (or 0, an integer address, where the C code takes a null pointer)")
    if isinstance(value, (ctypes.Array, ctypes._Pointer)):
        return ctypes.cast(value, ctypes.c_void_p)
    if isinstance(value, int) and not isinstance(value, bool):  # an address, passed unchecked
        if not 0 <= value < 1 << 8 * ctypes.sizeof(ctypes.c_void_p):
            raise OverflowError(f"{function}(): '{name}' got {value}, which is not an address")
        return value
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is optional
        raise TypeError(f"{function}(): pass a ctypes array for pointer '{name}' (or install numpy)")
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{function}(): pointer parameter '{name}' takes a NumPy array (written in place), "
                        f"not {type(value).__name__}")
    if through_pointers:  # (as adgen check refuses to make one)
        raise TypeError(f"{function}(): parameter '{name}' points to data that reaches its floats through pointers "
                        "(a std::vector, a struct holding a pointer), which a NumPy array is not: call this function "
                        "from C or C++ (or pass the address of such an object, as an int)")
    element = ffi.partition(":")[2]
    wanted = NUMPY_DTYPES.get(element)
    if wanted and value.dtype != np.dtype(wanted):
        raise TypeError(f"{function}(): '{name}' must be a NumPy array of {wanted}, not {value.dtype}")
    if not value.flags["C_CONTIGUOUS"]:
        raise TypeError(f"{function}(): '{name}' must be C-contiguous (use numpy.ascontiguousarray)")
    return value.ctypes.data


_C_NAMES = {"double": "double", "float": "float", "longdouble": "long double", "bool": "bool",
            "byte": "signed char", "ubyte": "unsigned char", "short": "short", "ushort": "unsigned short",
            "int": "int", "uint": "unsigned int", "long": "long", "ulong": "unsigned long", "longlong": "long long",
            "ulonglong": "unsigned long long"}


_INTEGERS = {kind for kind in _C_NAMES if kind not in ("double", "float", "longdouble", "bool")}


_KINDS = {t: kind for kind, t in reversed(_SCALARS.items())}  # (c_long is c_longlong where they are alike)


class _ArgumentTypeError(TypeError, ctypes.ArgumentError):
    """A scalar argument of the wrong type: a TypeError, and still the ctypes.ArgumentError that
    ctypes raised for it before adgen.load checked it itself."""


def _scalar_value(value, kind: str, name: str, function: str):
    """A Python number for a C scalar of `kind`: a TypeError for what is not a number of the
    kind (`"10"`, or `10.0` for an int: objects with `__index__`, such as NumPy's integers, are
    integers), an OverflowError for an integer the C type cannot hold (which ctypes would wrap;
    a bool takes any integer, as C converts it)."""
    spelled = _C_NAMES[kind]
    if kind in ("double", "float", "longdouble"):
        if not isinstance(value, (str, bytes)):
            try:
                return float(value)
            except (TypeError, ValueError, RuntimeError):
                pass
        raise _ArgumentTypeError(f"{function}(): '{name}' is a C {spelled}: it takes a number, not "
                                 f"{type(value).__name__}")
    if kind == "bool" and (isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")):
        return bool(value)
    try:
        number = operator.index(value)
    except TypeError:
        raise _ArgumentTypeError(f"{function}(): '{name}' is a C {spelled}: it takes an integer, not "
                                 f"{type(value).__name__}") from None
    if kind == "bool":
        return bool(number)  # (as C converts any integer: true where it is not 0)
    bits = 8 * ctypes.sizeof(_SCALARS[kind])
    low, high = (0, (1 << bits) - 1) if kind.startswith("u") else (-(1 << bits - 1), (1 << bits - 1) - 1)
    if not low <= number <= high:
        raise OverflowError(f"{function}(): '{name}' is a C {spelled}, from {low} to {high}: {number} does not fit")
    return number


def _to_c(value, t, name: str, function: str):
    """A Python value as ctypes type `t`: a scalar checked (`_scalar_value`), a struct from a
    dict of its fields, an array from a sequence, a complex number from any number."""
    if isinstance(value, t):
        return value
    if t in _KINDS:
        return _scalar_value(value, _KINDS[t], name, function)
    if not issubclass(t, (ctypes.Structure, ctypes.Array)):
        return value
    if issubclass(t, ctypes.Array):
        return t(*(_to_c(x, t._type_, name, function) for x in value))
    if t.__name__.startswith("complex:"):
        value = complex(value)
        return t(value.real, value.imag)
    if not isinstance(value, dict):
        raise TypeError(f"{function}(): struct '{name}' takes a dict of its fields, not {type(value).__name__}")
    known = dict(t._fields_)
    out = t()
    for key, v in value.items():
        if key not in known:
            raise TypeError(f"{function}(): struct '{name}' has no field '{key}' (its fields: {', '.join(known)})")
        setattr(out, key, _to_c(v, known[key], f"{name}.{key}", function))
    return out


def from_c(value):
    """A returned C value as Python's: arrays as NumPy arrays, structs as dicts, complex numbers."""
    if isinstance(value, ctypes.Structure):
        if type(value).__name__.startswith("complex:"):
            return complex(value.real, value.imag)
        return {name: from_c(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, ctypes.Array) and issubclass(value._type_, ctypes.Structure):
        return [from_c(v) for v in value]
    if isinstance(value, ctypes.Array):
        try:
            import numpy as np

            return np.array(value[:])
        except ImportError:  # pragma: no cover
            return tuple(value)
    return value
