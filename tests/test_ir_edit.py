"""The IR package's edits of IR text (adgen.ir_ad.ir.edit), on small snippets; and its reading of a module."""

import pytest

from adgen.ir_ad.ir.edit import (body_mentions, c_string, declare_globals, define_line, define_weak_globals,
                                 defined_functions, drop_dead_loads, edit_declarations, int_as_pointer,
                                 lines_by_function, make_external, mentions, rename_locals, replace_instructions,
                                 retarget, string_attribute, with_attributes, without_poison_lanes,
                                 without_tail_calls)

FUNCTION = """define internal double @f(double %x) {
entry:
  %"x'" = fmul double %x, 2.0
  br label %"loop'"
"loop'":
  ret double %"x'"
}"""


def test_rename_locals_renames_values_and_labels_it_is_asked_to():
    marked = rename_locals(FUNCTION, lambda name: f"2~{name}" if "'" in name else None)
    assert marked == """define internal double @f(double %x) {
entry:
  %"2~x'" = fmul double %x, 2.0
  br label %"2~loop'"
"2~loop'":
  ret double %"2~x'"
}"""


def test_rename_locals_quotes_only_where_the_new_name_needs_it():
    text = "a:\n  %y = add i64 %x, 1\n  br label %a"
    assert rename_locals(text, {"x": "z", "a": "b c"}.get) == '"b c":\n  %y = add i64 %z, 1\n  br label %"b c"'


def test_rename_locals_leaves_globals_and_strings():
    text = '@x = global i64 0\n@s = constant [3 x i8] c"%d\\00"'
    assert rename_locals(text, lambda name: "renamed") == text


def test_retarget_changes_only_the_successor_named():
    term = "br i1 %c, label %loop, label %loop.exit"
    assert retarget(term, "%loop", "%\"xe'loop\"") == "br i1 %c, label %\"xe'loop\", label %loop.exit"


def test_mentions_a_whole_name():
    assert mentions("  %y = fadd double %x, %x", "%x")
    assert not mentions("  %y = fadd double %x.1, %xs", "%x")
    assert not mentions('  %y = fadd double %"x\'", 1.0', '%"x')


def test_body_mentions_does_not_count_the_parameters():
    assert body_mentions(FUNCTION, "%x")
    assert not body_mentions("define void @g(ptr %p) {\nentry:\n  ret void\n}", "%p")


def test_defined_functions():
    text = 'declare void @h()\ndefine internal ptr @"adgen.alloc"(i64 %n) {\n}\ndefine void @g() {\n}'
    assert defined_functions(text) == {'@"adgen.alloc"', "@g"}


def test_define_line():
    text = "declare void @k(ptr)\ndefine internal void @k(ptr %a, double %b) #0 {\nentry:\n  ret void\n}"
    assert define_line(text, "@k") == "define internal void @k(ptr %a, double %b) #0 {"
    assert define_line(text, "@other") is None


def test_make_external_drops_internal_from_that_function_only():
    text = "define internal void @k(ptr %a) {\n}\ndefine internal void @k2(ptr %a) {\n}"
    assert make_external(text, "@k") == "define void @k(ptr %a) {\n}\ndefine internal void @k2(ptr %a) {\n}"


def test_lines_by_function():
    text = "@g = global i32 0\n" + FUNCTION + "\ndeclare void @h()"
    owners = [fn for fn, _ in lines_by_function(text)]
    assert owners == [None] + ["@f"] * 7 + [None]


def test_edit_declarations():
    text = "declare void @a(double) #1\ndefine void @b() {\n}"
    edited = edit_declarations(text, lambda header, line: f"; {header.name} takes {len(header.params)}")
    assert edited == "; @a takes 1\ndefine void @b() {\n}"


def test_with_attributes_replaces_the_group_and_dbg():
    assert with_attributes("declare double @it(double, double) #3 !dbg !7", "nounwind memory(none)") == \
        "declare double @it(double, double) nounwind memory(none)"
    unnamed = "declare double @it(double) local_unnamed_addr #3"
    assert with_attributes(unnamed, "nounwind") == unnamed


def test_replace_instructions_keeps_metadata_and_other_functions():
    text = ("define void @a() {\n  %r = call double @e(i32 1), !dbg !4\n}\n"
            "define void @b() {\n  %r = call double @e(i32 1)\n}")
    replaced = replace_instructions(text, {"@a": {"%r = call double @e(i32 1)": "%r = call double @adapter()"}})
    assert replaced == ("define void @a() {\n  %r = call double @adapter(), !dbg !4\n}\n"
                        "define void @b() {\n  %r = call double @e(i32 1)\n}")


def test_drop_dead_loads_only_of_unused_markers():
    text = ("define void @a() {\n  %m = load i32, ptr @enzyme_dup\n  %n = load i32, ptr @enzyme_out\n"
            "  call void @use(i32 %n)\n  %o = load i32, ptr @other\n}")
    assert drop_dead_loads(text, {"@a": {"%m", "%n", "%o", "@g"}}, "@enzyme_") == \
        ("define void @a() {\n  %n = load i32, ptr @enzyme_out\n  call void @use(i32 %n)\n"
         "  %o = load i32, ptr @other\n}")


def test_define_weak_globals():
    text = "@enzyme_dup = external global i32, align 4\n@other = external global i32"
    assert define_weak_globals(text, "@enzyme_") == \
        "@enzyme_dup = weak global i32 0, align 4\n@other = external global i32"


def test_declare_globals_keeps_type_and_alignment():
    text = ('@count = internal global i64 0, align 8\n@"a.b" = dso_local global [2 x double] zeroinitializer\n'
            "@k = constant i32 3\n@other = global i32 1")
    assert declare_globals(text, {"count", "a.b", "k"}) == (
        '@count = external global i64, align 8\n@"a.b" = external global [2 x double]\n'
        "@k = constant i32 3\n@other = global i32 1")


def test_what_a_global_holds():
    assert c_string('@.str = private constant [6 x i8] c"log1p\\00", align 1') == "log1p"
    assert c_string("@x = global i32 0") is None
    assert int_as_pointer("@__enzyme_allocation_like = global [4 x ptr] [ptr @f, ptr inttoptr (i64 1 to ptr), "
                          "ptr @n, ptr @free]") == 1
    assert int_as_pointer("@x = global ptr null") is None


def test_string_attribute():
    text = 'attributes #0 = { noinline "target-cpu"="x86-64" "target-features"="+sse2" }'
    assert string_attribute(text, "target-cpu") == "x86-64"
    assert string_attribute(text, "tune-cpu") is None


def test_without_tail_calls_marks_the_functions_differentiation_made():
    text = ('define internal { double, double } @"f\'fwd.d.l1"(double %x, double %"x\'") {\n  ret { double, double } zeroinitializer\n}\n'
            "define double @f(double %x) #0 !dbg !7 {\n  ret double %x\n}\n")
    out = without_tail_calls(text)
    assert '@"f\'fwd.d.l1"(double %x, double %"x\'") "disable-tail-calls"="true" {' in out
    assert "define double @f(double %x) #0 !dbg !7 {" in out  # the sources' own: untouched


def test_vectors_undefined_lanes_are_made_zeros():
    """Reverse mode multiplies the zero adjoints of lanes nothing reads by those lanes' values:
    a poison lane made the whole adjoint poison. Zeros refine it."""
    text = ("  %s = shufflevector <2 x double> %v, <2 x double> poison, <2 x i32> <i32 1, i32 poison>\n"
            "  %i = insertelement <2 x double> poison, double %a, i64 0\n"
            "  %w = shufflevector <4 x float> %a, <4 x float> undef, <4 x i32> poison\n"
            "  %t = shufflevector <2 x double> %a, <2 x double> %b, <2 x i32> <i32 0, i32 3>\n")
    assert without_poison_lanes(text).split("\n") == [
        "  %s = shufflevector <2 x double> %v, <2 x double> zeroinitializer, <2 x i32> <i32 1, i32 2>",
        "  %i = insertelement <2 x double> zeroinitializer, double %a, i64 0",
        "  %w = shufflevector <4 x float> %a, <4 x float> zeroinitializer, <4 x i32> <i32 4, i32 4, i32 4, i32 4>",
        "  %t = shufflevector <2 x double> %a, <2 x double> %b, <2 x i32> <i32 0, i32 3>", ""]


def test_a_modules_functions_are_parsed_when_asked_for():
    """A module reads each definition the first time it is asked for (a C++ file's module holds
    thousands of its headers' functions); in the text's order; its signature, text and count of
    instructions without parsing it; a malformed body only an error when it is read."""
    from adgen.ir_ad.ir import IRError, Module

    text = ("declare double @sin(double)\n\n"
            "define double @f(double %x) {\nentry:\n  %y = fmul double %x, %x\n  ret double %y\n}\n\n"
            "define internal i32 @g(ptr %p, i32 %n) {\nentry:\n  %v = add i32 (\n  ret i32 %n\n}\n")
    module = Module(text)
    functions = module.functions
    assert list(functions) == ["@sin", "@f", "@g"] and "@g" in functions and len(functions) == 3
    g = functions.signature("@g")
    assert (g.ret.text, [p.type.text for p in g.params], g.local) == ("i32", ["ptr", "i32"], True)
    assert functions.instruction_count("@g") == 2 and "add i32 (" in functions.text("@g")
    assert [i.opcode for i in functions["@f"].instructions()] == ["fmul", "ret"]
    assert module.instruction_count() == 4
    with pytest.raises(IRError):
        functions["@g"]  # (read only now)


@pytest.mark.parametrize("symbol, path", [
    ("_ZN5model5rosen17h0123456789abcdefE", ["model", "rosen"]),
    ("_RNvCsei9dqA7VXss_7adgen_05sumsq", ["adgen_0", "sumsq"]),
    ("_RNvNtCsjVHDvCH4wtg_8ode_real4safe20dbrusselator_2d_loop", ["ode_real", "safe", "dbrusselator_2d_loop"]),
    ("_RNvMNtCsgvbsrvnw3yD_9hashbrown3rawNtB2_11Fallibility9alloc_err",  # (an inherent impl's: back references)
     ["hashbrown::raw::Fallibility", "alloc_err"]),
    ("_RNvNCNKNvNvMNtNtCsjrHSEGnQ3l9_3std4hash6randomNtBa_11RandomState3new4KEYS0s_023___RUST_STD_INTERNAL_VAL",
     ["std::hash::random::RandomState", "new", "KEYS", "{{closure}}", "__RUST_STD_INTERNAL_VAL"]),  # (`0` then `23`)
    ("_RNvXs_NtCs1_4core3fmtjNtB4_7Display3fmt", ["<usize as core::fmt::Display>", "fmt"]),
    ("main", None),
])
def test_rust_symbols_name_their_paths(symbol, path):
    """Rust symbols in either mangling (ir/names.rust_path), for errors that name the user's function."""
    from adgen.ir_ad.ir import rust_path
    assert rust_path(symbol) == path


def test_globals_defined_with_a_prefix_and_renamed():
    from adgen.ir_ad.ir import defined_with_prefix, renamed_global

    text = ('@adgen.user.addr.m.3.cube = constant ptr @cube, align 8\n'
            '@"adgen.user.addr.m::wave" = constant <{ ptr }> <{ ptr @_ZN1m4wave17h0123456789abcdefE }>\n'
            '@adgen.user.addr.m.3.cube2 = global i64 0\n'
            '@llvm.used = appending global [1 x ptr] [ptr @adgen.user.addr.m.3.cube]\n')
    found = defined_with_prefix(text, "adgen.user.addr.")
    assert found == {"@adgen.user.addr.m.3.cube": ["@cube"], '@"adgen.user.addr.m::wave"':
                     ["@_ZN1m4wave17h0123456789abcdefE"], "@adgen.user.addr.m.3.cube2": []}
    renamed = renamed_global(text, "@adgen.user.addr.m.3.cube", "@adgen.own.addr.m.3.cube")
    assert renamed.count("@adgen.own.addr.m.3.cube") == 2 and "@adgen.user.addr.m.3.cube2" in renamed
