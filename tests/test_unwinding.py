"""ir_ad/ir/unwinding.py (specs/cxx.md, "Exceptions"): invokes made calls, the headers' throws
(the C++ library's) made aborts, the calls whose exceptions the source catches marked; and comdats dropped
from the text adgen differentiates (ir/text.py)."""

from __future__ import annotations

import llvmlite.binding as llvm

from adgen.ir_ad.ir import without_comdats
from adgen.ir_ad.ir.unwinding import CATCHES, may_unwind, without_unwinding

MODULE = r"""
declare i32 @__gxx_personality_v0(...)
declare double @ext(double)
declare ptr @__cxa_allocate_exception(i64)
declare void @__cxa_throw(ptr, ptr, ptr)
@_ZTIi = external constant ptr

define double @mine(double %x) {
  ret double %x
}

define double @f(double %x) personality ptr @__gxx_personality_v0 {
entry:
  %a = invoke double @mine(double %x)
          to label %ok unwind label %caught, !dbg !10
ok:
  %b = invoke double @ext(double %a)
          to label %done unwind label %caught, !dbg !11
done:
  %c = invoke double @ext(double %b)
          to label %end unwind label %cleanup
end:
  ret double %c
caught:
  %lp = landingpad { ptr, i32 }
          catch ptr @_ZTIi
  ret double 0.0
cleanup:
  %lp2 = landingpad { ptr, i32 }
          cleanup
  resume { ptr, i32 } %lp2
}

define linkonce_odr void @throw_length() {
  %e = call ptr @__cxa_allocate_exception(i64 16), !dbg !12
  call void @__cxa_throw(ptr %e, ptr @_ZTIi, ptr null)
  unreachable
}

define void @user_throw() {
  %e = call ptr @__cxa_allocate_exception(i64 4), !dbg !13
  call void @__cxa_throw(ptr %e, ptr @_ZTIi, ptr null)
  unreachable
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!20}
!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "f.cpp", directory: "/src")
!2 = !DIFile(filename: "vector", directory: "/usr/include/c++/v1")
!3 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, unit: !0)
!4 = distinct !DISubprogram(name: "__throw_length_error", scope: !2, file: !2, line: 9, unit: !0)
!10 = !DILocation(line: 2, column: 3, scope: !3)
!11 = !DILocation(line: 3, column: 3, scope: !3)
!12 = !DILocation(line: 9, column: 5, scope: !4)
!13 = !DILocation(line: 5, column: 5, scope: !3)
!20 = !{i32 2, !"Debug Info Version", i32 3}
"""


def test_invokes_become_calls_and_a_caught_external_call_is_marked():
    assert may_unwind(MODULE)
    text = without_unwinding(MODULE, {"/src/f.cpp"})
    llvm.parse_assembly(text).verify()  # landing pads without predecessors: still valid IR
    f = text[text.index("define double @f("):]
    f = f[:f.index("\n}")]
    assert " invoke " not in f
    # a call of the sources: no exception of it can reach the handler (its throws are refused)
    assert "  %a = call double @mine(double %x), !dbg !10\n  br label %ok" in f
    # a call outside the sources whose landing pad catches: marked, at the call's line
    assert f"  call void {CATCHES}(), !dbg !11\n  %b = call double @ext(double %a), !dbg !11\n  br label %done" in f
    # a landing pad that only cleans up: the exception would pass through, nothing to catch
    assert "  %c = call double @ext(double %b)\n  br label %end" in f
    assert f"define internal void {CATCHES}() noinline" in text


def test_the_headers_throws_abort_and_the_sources_stay():
    text = without_unwinding(MODULE, {"/src/f.cpp"})
    library = text[text.index("define linkonce_odr void @throw_length"):]
    assert library.split("\n")[1] == "  call void @abort() noreturn nounwind"
    user = text[text.index("define void @user_throw"):]
    assert "@abort" not in user.split("}")[0]  # refused where a derivative runs it (calls.refused)
    assert "declare void @abort()" in text


def test_nothing_to_unwind():
    assert not may_unwind("define double @g(double %x) {\n  ret double %x\n}\n")


def test_comdats_are_dropped():
    text = ("$_Z1fv = comdat any\n$g = comdat any\n@g = linkonce_odr global i32 0, comdat, align 4\n"
            "define linkonce_odr void @_Z1fv() comdat align 2 {\n  ret void\n}\n"
            "define linkonce_odr void @h() comdat($_Z1fv) {\n  ret void\n}\n")
    assert without_comdats(text) == ("@g = linkonce_odr global i32 0, align 4\n"
                                     "define linkonce_odr void @_Z1fv() align 2 {\n  ret void\n}\n"
                                     "define linkonce_odr void @h() {\n  ret void\n}\n")
