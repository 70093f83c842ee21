"""shadows.self_shadowed: pointers into read-only memory holding no floats, nor pointers to
anything but functions and such memory, are their own shadows; any other global is not."""

from __future__ import annotations

import pytest

from adgen.ir_ad.ir import Module
from adgen.ir_ad.shadows import self_shadowed

TEXT = r"""
%struct.Row = type { ptr, i32 }
%struct.Weights = type { double, i32 }
@.str = private unnamed_addr constant [3 x i8] c"ab\00", align 1
@.tricky = private unnamed_addr constant [7 x i8] c"double\00", align 1
@table = internal constant [2 x double] [double 1.0, double 2.0]
@weights = internal constant %struct.Weights { double 1.0, i32 2 }
@counter = internal global i32 0
@rows = internal constant [1 x %struct.Row] [%struct.Row { ptr @.str, i32 1 }]
@to_table = internal constant ptr @table
@ext = external constant [4 x i8]
@_ZTV1S = linkonce_odr unnamed_addr constant { [3 x ptr] } { [3 x ptr] [ptr null, ptr @_ZTI1S, ptr @f] }
@_ZTI1S = external global [0 x ptr]

define void @f() {
  ret void
}
"""


@pytest.fixture(scope="module")
def module():
    return Module(TEXT)


@pytest.mark.parametrize("ref, expected", [
    ("@.str", True),
    ("@.tricky", True),  # the word "double" in a string's bytes is no float
    ("@rows", True),  # pointers to read-only bytes
    ("getelementptr inbounds nuw inrange(-16, 8) (i8, ptr @_ZTV1S, i64 16)", True),  # a C++ virtual table
    ("@table", False),  # floats
    ("@weights", False),  # floats in a named struct
    ("@counter", False),  # written
    ("@to_table", False),  # a pointer to floats
    ("@ext", False),  # defined elsewhere: unknown
    ("@missing", False),
    ("%local", False),
])
def test_read_only_memory_without_floats(module, ref, expected):
    assert self_shadowed(module, ref) is expected
