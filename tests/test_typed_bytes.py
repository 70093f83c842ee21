"""typed_bytes.py: what the IR's types say the bytes at a pointer hold, through constant offsets
from a typed local object, here or at every call of the function."""

from __future__ import annotations

import pytest

from adgen.ir_ad.analysis.typed_bytes import holds_no_floats, size_of
from adgen.ir_ad.ir import Module, Type

TEXT = r"""
%struct.Dims = type { i64, i64 }
%struct.Eval = type { ptr, %struct.Dims, i32, double, [2 x %struct.Dims] }
%union.U = type { i64 }
%struct.Raw = type { [16 x i8] }
%struct.Packed = type <{ i8, i64, double }>

define void @callee(ptr %this, ptr %other) {
  %dims = getelementptr inbounds i8, ptr %this, i64 8
  %second = getelementptr inbounds %struct.Eval, ptr %this, i64 0, i32 4, i64 1
  %scale = getelementptr inbounds i8, ptr %this, i64 32
  ret void
}

define void @taken(ptr %p) {
  ret void
}

define double @caller() {
  %e = alloca %struct.Eval, align 8
  %u = alloca %union.U, align 8
  %r = alloca %struct.Raw, align 8
  %k = alloca %struct.Packed, align 1
  %k1 = getelementptr inbounds i8, ptr %k, i64 1
  call void @callee(ptr %e, ptr %u)
  call void @taken(ptr %e)
  store ptr @taken, ptr %u
  ret double 0.0
}
"""


@pytest.fixture(scope="module")
def module():
    return Module(TEXT)


def test_sizes_follow_llvm_layout(module):
    assert size_of(module, Type("%struct.Eval", "named")) == 8 + 16 + 8 + 8 + 32
    assert size_of(module, Type("%struct.Packed", "named")) == 17


@pytest.mark.parametrize("fn, pointer, length, expected", [
    ("caller", "%e", 8, True),  # the pointer field
    ("caller", "%e", 28, True),  # the pointer, the sizes and the int
    ("caller", "%e", 40, False),  # ... and the double
    ("callee", "%dims", 16, True),  # through the argument, at its only call
    ("callee", "%second", 16, True),  # a typed getelementptr into an array of structs
    ("callee", "%scale", 8, False),
    ("callee", "%other", 8, False),  # a union may hold a double
    ("caller", "%r", 8, False),  # bytes any object may be built in
    ("caller", "%k1", 8, True),  # a packed struct's field, without padding
    ("taken", "%p", 8, False),  # its address is taken: its callers are not all known
])
def test_bytes_known_to_hold_no_floats(module, fn, pointer, length, expected):
    assert holds_no_floats(module, module.functions[f"@{fn}"], pointer, length) is expected


PADDED = r"""
%"class.Eigen::MapBase.3" = type { ptr, [8 x i8], %"class.Eigen::internal::variable_if_dynamic.1" }
%"class.Eigen::internal::variable_if_dynamic.1" = type { i64 }
%class.Buf = type { ptr, [8 x i8], i64 }
%class.Other = type { ptr, [8 x i8], i64 }

define void @f() {
  %m = alloca %"class.Eigen::MapBase.3", align 8
  %b = alloca %class.Buf, align 8
  %o = alloca %class.Other, align 8
  ret void
}

!1 = !{!"_ZTSN5Eigen7MapBaseIiEE", !2, i64 0, !4, i64 8, !5, i64 16}
!2 = !{!"any pointer", !3, i64 0}
!3 = !{!"omnipotent char", !7, i64 0}
!4 = !{!"_ZTSN5Eigen8internal19variable_if_dynamicIlLi1EEE"}
!5 = !{!"_ZTSN5Eigen8internal19variable_if_dynamicIlLin1EEE", !8, i64 0}
!6 = !{!"_ZTSN5Eigen7MapBaseIdEE", !2, i64 0, !5, i64 8, !4, i64 16}
!7 = !{!"Simple C++ TBAA"}
!8 = !{!"long", !3, i64 0}
!9 = !{!"_ZTS3Buf", !2, i64 0, !3, i64 8, !8, i64 16}
"""


@pytest.mark.parametrize("pointer, expected", [
    ("%m", True),  # padding where an empty member (Eigen's fixed rows of a one-row block) was left out
    ("%b", False),  # a character array: storage any object may be built in
    ("%o", False),  # no type descriptor of its class in the module
])
def test_byte_arrays_told_apart_by_type_descriptors(pointer, expected):
    """A byte array in a class's IR type holds no floats where every TBAA type descriptor of
    the class's name that fits its IR type has only empty classes, integers or pointers there
    (MapBase<double>'s, with a `long` at 8, does not fit: its IR type has no byte array there)."""
    from adgen.base.cxx_names import demangle

    if demangle("_ZTS3Buf") is None:
        pytest.skip("no C++ demangler on this machine")
    module = Module(PADDED)
    assert holds_no_floats(module, module.functions["@f"], pointer, 24) is expected
    if pointer == "%m":  # an instantiation with a character array there: any may be the one allocated
        module = Module(PADDED + '!10 = !{!"_ZTSN5Eigen7MapBaseIcEE", !2, i64 0, !3, i64 8, !8, i64 16}\n')
        assert not holds_no_floats(module, module.functions["@f"], pointer, 24)
