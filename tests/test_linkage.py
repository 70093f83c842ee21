"""ir/linkage.py: aliases resolved to what they alias, and a stub file's definitions other than
its own made declarations (specs/cxx.md, "Link model"), on IR text, then parsed by LLVM."""

from __future__ import annotations

import llvmlite.binding as llvm

from adgen.ir_ad.ir.linkage import declarations_but, without_aliases

ALIASED = """\
%struct.M = type { i32 }

@_ZN1MC1Ev = unnamed_addr alias void (ptr), ptr @_ZN1MC2Ev
@"complete copy" = alias void (ptr), ptr @_ZN1MC1Ev
@table = global [1 x ptr] [ptr @_ZN1MC1Ev]

define void @_ZN1MC2Ev(ptr noalias %this) unnamed_addr {
  store i32 3, ptr %this, align 4, !alias.scope !0
  ret void
}

define i32 @f() {
  %m = alloca %struct.M, align 4
  call void @_ZN1MC1Ev(ptr %m)
  call void @"complete copy"(ptr %m)
  %n = load i32, ptr %m, align 4
  ret i32 %n
}

!0 = !{!1}
!1 = distinct !{!1, !2}
!2 = distinct !{!2}
"""


def test_aliases_are_resolved_through_aliases_of_aliases():
    """C++'s complete constructor an alias of the base one, and an alias of it: their uses
    name the base one, and they are gone."""
    text = without_aliases(ALIASED)
    assert " alias " not in text and "@_ZN1MC1Ev" not in text and "complete copy" not in text
    assert "call void @_ZN1MC2Ev(ptr %m)\n  call void @_ZN1MC2Ev(ptr %m)" in text
    assert "@table = global [1 x ptr] [ptr @_ZN1MC2Ev]" in text
    llvm.parse_assembly(text).verify()


def test_a_text_without_aliases_is_the_same_text():
    text = ALIASED.replace("@_ZN1MC1Ev = unnamed_addr alias void (ptr), ptr @_ZN1MC2Ev\n", "") \
        .replace('@"complete copy" = alias void (ptr), ptr @_ZN1MC1Ev\n', "").replace("@_ZN1MC1Ev", "@_ZN1MC2Ev") \
        .replace('@"complete copy"', "@_ZN1MC2Ev")
    assert without_aliases(text) is text  # (`noalias`, `!alias.scope`: no alias)


STUBS = """\
@counter = global i32 0, align 4
@tentative = common global double 0.000000e+00, align 8
@kept = linkonce_odr global i32 1, align 4
@local = internal global i32 2, align 4
@_ZN1MC1Ev = unnamed_addr alias void (ptr), ptr @_ZN1MC2Ev
@by_expression = alias i8, getelementptr (i8, ptr @shifted, i64 1)
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @_GLOBAL__sub_I_h, ptr null }]

define dso_local noundef i32 @_Z6helperi(i32 noundef %a) #0 !dbg !3 {
  %r = add i32 %a, 1
  ret i32 %r
}

define void @_ZN1MC2Ev(ptr %this) unnamed_addr align 2 {
  store i32 3, ptr %this, align 4
  ret void
}

define linkonce_odr double @_Z5scalem(i64 %n) {
  %d = uitofp i64 %n to double
  ret double %d
}

define void @shifted() {
  ret void
}

define internal void @_GLOBAL__sub_I_h() {
  store i32 7, ptr @counter, align 4
  ret void
}

define double @f_grad(ptr %m) {
  call void @_ZN1MC1Ev(ptr %m)
  %c = load i32, ptr @counter, align 4
  %h = call i32 @_Z6helperi(i32 %c)
  %s = call double @_Z5scalem(i64 3)
  ret double %s
}

attributes #0 = { nounwind }

!llvm.module.flags = !{!0}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus, file: !2, emissionKind: LineTablesOnly)
!2 = !DIFile(filename: "h.h", directory: "/")
!3 = distinct !DISubprogram(name: "helper", scope: !2, file: !2, line: 1, type: !4, spFlags: DISPFlagDefinition, unit: !1)
!4 = !DISubroutineType(types: !5)
!5 = !{}
"""


def test_a_stub_files_strong_definitions_but_its_own_become_declarations():
    """What a stub file defines besides its derived functions (from the user's headers) binds to
    the source's definitions: strong ones become declarations, its constructors go; what may be
    defined twice stays."""
    text = declarations_but(STUBS, {"f_grad"})
    lines = text.split("\n")
    assert "@counter = external global i32, align 4" in lines
    assert "@tentative = external global double, align 8" in lines
    assert "declare dso_local noundef i32 @_Z6helperi(i32 noundef %a) #0" in lines
    assert "declare void @_ZN1MC2Ev(ptr %this)" in lines  # (its alias resolved: what calls it now names it)
    assert "define double @f_grad(ptr %m) {" in lines and "  call void @_ZN1MC2Ev(ptr %m)" in lines
    assert "llvm.global_ctors" not in text  # (the source initializes its variables)
    for kept in ("@kept = linkonce_odr global i32 1, align 4", "@local = internal global i32 2, align 4",
                 "define linkonce_odr double @_Z5scalem(i64 %n) {",
                 "define void @shifted() {"):  # (an alias of an expression needs what it names defined)
        assert kept in lines
    llvm.parse_assembly(text).verify()
    assert declarations_but(text, {"f_grad"}) == text


MODULE = """\
target triple = "x86_64-unknown-linux-gnu"

@kept_out = external global double
@weakly = weak global i32 0
@"plain" = dso_local global i32 1, align 4
@hidden_one = hidden global [2 x double] zeroinitializer
@local = internal thread_local global ptr null
@common_one = common dso_local global i64 0
@llvm.used = appending global [1 x ptr] [ptr @"f'grad"], section "llvm.metadata"

define dso_local double @"f'grad"(ptr %x) {
  %v = load double, ptr %x
  %w = call double @helper(double %v)
  store i32 2, ptr @"plain"
  ret double %w
}

define linkonce_odr hidden double @helper(double %v) {
  ret double %v
}

define dso_local void @callback(ptr %p) {
  store ptr %p, ptr @local
  ret void
}

define internal void @"already local"() {
  ret void
}

declare double @outside(double)
"""


def test_internalized_text_links_as_the_module_internalized_by_llvmlite():
    """linkage.internalized, on the text the derivative object is compiled from, gives every
    definition the linkage and visibility optimize._internalize gives it in a module llvmlite
    holds (only the exported functions visible, the shared ones weak, the variables internal
    but LLVM's and weak ones), names quoted where they need not be as LLVM prints them, and
    the target's triple."""
    from adgen.ir_ad import optimize
    from adgen.ir_ad.ir.linkage import internalized

    exported, shared = {"f'grad"}, {"callback"}
    text = internalized(MODULE, exported, shared, "x86_64-pc-linux-gnu")
    assert '@"plain"' not in text and "store i32 2, ptr @plain" in text
    ours = optimize.parse(text)
    theirs = optimize.parse(MODULE)
    optimize._internalize(theirs, exported, shared)

    def linkages(module):
        return ({f.name: (f.linkage.name, f.visibility.name) for f in module.functions},
                {g.name: (g.linkage.name, g.visibility.name) for g in module.global_variables})

    assert linkages(ours) == linkages(theirs)
    assert ours.triple == "x86_64-pc-linux-gnu"
    functions, variables = linkages(ours)
    assert functions["callback"][0] == "weak_odr" and functions["helper"] == ("internal", "default")
    assert variables["hidden_one"] == ("internal", "default") and variables["weakly"][0] == "weak_any"
