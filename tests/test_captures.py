"""ir/captures.py: the variables an OpenMP region shares passed to it by value, where that
changes nothing; and the loop analysis reading a counter LLVM widened and compares narrowed."""

from __future__ import annotations

import llvmlite.binding as llvm

from adgen.ir_ad.ir.captures import promote_captures

# As LLVM leaves a serialized region (ir/parallel.py) after optimizing: the caller stores its
# variables into slots and passes their addresses; the region loads them.
SERIALIZED = """
define void @f(ptr noalias %y, ptr %x, i32 %n, ptr %count) {
bb:
  %adgen.omp.tid.1 = alloca i32, align 4
  %y.slot = alloca ptr, align 8
  %x.slot = alloca ptr, align 8
  %n.slot = alloca i32, align 4
  %c.slot = alloca ptr, align 8
  store ptr %y, ptr %y.slot, align 8
  store ptr %x, ptr %x.slot, align 8
  store i32 %n, ptr %n.slot, align 4
  store ptr %count, ptr %c.slot, align 8
  call void @f.omp_outlined(ptr %adgen.omp.tid.1, ptr poison, ptr %y.slot, ptr %x.slot, ptr %n.slot, ptr %c.slot)
  %again = load ptr, ptr %c.slot, align 8
  ret void
}

define void @f.omp_outlined(ptr %gtid, ptr %btid, ptr readonly align 8 dereferenceable(8) %0, ptr %1, ptr %2, ptr %3) {
bb:
  %y = load ptr, ptr %0, align 8
  %x = load ptr, ptr %1, align 8
  %n = load i32, ptr %2, align 4
  %c = load ptr, ptr %3, align 8
  %v = load double, ptr %x, align 8
  store double %v, ptr %y, align 8
  %k = sext i32 %n to i64
  %at = getelementptr double, ptr %x, i64 %k
  %w = load double, ptr %at, align 8
  store ptr %c, ptr %3, align 8
  ret void
}
"""


def test_captured_variables_are_passed_by_value():
    text = promote_captures(SERIALIZED)
    llvm.parse_assembly(text).verify()
    call = next(line for line in text.splitlines() if "call void @f.omp_outlined(" in line)
    # the pointers and the integer by value (widened to the runtime's pointer-sized slots); the
    # slot the region writes (%3 stores into it) and the caller reads afterwards stays a slot
    assert "ptr %y, ptr %x, i64 %" in call and call.endswith("ptr %c.slot)"), call
    define = next(line for line in text.splitlines() if line.startswith("define void @f.omp_outlined("))
    # y: the caller's restrict (noalias) goes with it; x is only read in the region
    assert "ptr noalias %0" in define and "ptr readonly %1" in define and "i64 %2" in define, define
    assert "dereferenceable" not in define  # (what clang knew of the slot)
    assert "%n = trunc i64 %2 to i32" in text and "%y = getelementptr i8, ptr %0, i64 0" in text
    # the slots no call reads any more are gone from the caller; the kept one stays
    caller = text[:text.index("define void @f.omp_outlined(")]
    assert "%y.slot" not in caller and "%x.slot" not in caller and "%n.slot" not in caller
    assert "%c.slot = alloca" in caller


def test_a_slot_the_caller_reads_back_or_the_region_writes_is_kept():
    text = SERIALIZED.replace("  %y = load ptr, ptr %0, align 8\n", "  %y = load ptr, ptr %0, align 8\n"
                              "  store ptr null, ptr %0, align 8\n")
    promoted = promote_captures(text)
    call = next(line for line in promoted.splitlines() if "call void @f.omp_outlined(" in line)
    assert "ptr %y.slot" in call  # (the region writes it: not a value)


def test_a_counter_widened_and_compared_narrowed_has_a_trip_count():
    """LLVM widens an `int` counter to 64 bits and compares `trunc(next)` with the bound: the loop
    runs (bound - start) times, modulo 2^32, from the narrow start the widening extended."""
    from adgen.ir_ad.analysis.flow import CFG
    from adgen.ir_ad.analysis.loops import LoopForest
    from adgen.ir_ad.ir import Module

    module = Module("""
define void @g(ptr %a, i32 %lo, i32 %hi) {
bb:
  %start = sext i32 %lo to i64
  %end = add nsw i32 %hi, 1
  br label %loop

loop:
  %iv = phi i64 [ %start, %bb ], [ %next, %loop ]
  %at = getelementptr double, ptr %a, i64 %iv
  store double 0.0, ptr %at, align 8
  %next = add nsw i64 %iv, 1
  %narrow = trunc i64 %next to i32
  %done = icmp eq i32 %end, %narrow
  br i1 %done, label %out, label %loop

out:
  ret void
}
""")
    fn = module.functions["@g"]
    loops = LoopForest(fn, CFG(fn))
    trip = loops.loops[0].trip
    assert trip is not None and trip.exact and trip.start.value == "%lo" and trip.bound.value == "%end"
    assert trip.offset == 0  # (compared after the step: `next`)
