"""The bundled clang's own optimizer and code generator, for the optimization after
differentiation and the object: its `-cc1` run on bitcode (`-x ir`). It is the LLVM of llvmlite's
major version and runs the same pipelines with the same options, but is built without the
assertions llvmlite's LLVM checks (`llvmlite.binding.config.llvm_assertions_state()` is "on"):
on the same module it took 0.41 s where llvmlite took 0.74-1.02 s (bench/programs/mlp.c's
gradient) and 1.75-2.2 s where llvmlite took 2.8 s (gpt2.c's).

Used only for the ziglang wheel's clang, whose cc1 adgen knows; with `--cc` (another clang),
llvmlite does this work as it does all the rest."""

from __future__ import annotations

import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from adgen.base.diagnostics import AdgenError, error
from adgen.base.timing import pass_times, section
from adgen.base.toolchain import Compiler, bundled_cc, bundled_llvm_major, llvmlite_llvm_major, zig


@dataclass(frozen=True)
class Machine:
    """What objects are emitted for: an LLVM triple, a CPU ("" for the target's generic one) and
    its features ("+avx2,+fma", say; "" for the CPU's own)."""

    triple: str
    cpu: str = ""
    features: str = ""
    sections: tuple[str, ...] = ()  # code generation's -ffunction-sections, -fdata-sections (`sections`)


SECTIONS = ("-ffunction-sections", "-fdata-sections")


def sections(flags: list[str]) -> tuple[str, ...]:
    """The flags among the user's that give each function or variable a section of its own (the
    last of `-fX` and `-fno-X` wins, as for clang): what `--gc-sections` needs to drop what no
    one uses. They act on code generation, not on the bitcode clang lowers, so adgen passes them
    to the code generator of the object it writes."""
    chosen = []
    for flag in SECTIONS:
        negated = "-fno-" + flag[2:]
        last = max((i for i, f in enumerate(flags) if f in (flag, negated)), default=None)
        if last is not None and flags[last] == flag:
            chosen.append(flag)
    return tuple(chosen)


@dataclass(frozen=True)
class Cc1:
    command: tuple[str, ...]  # e.g. (".../zig", "clang", "-cc1")
    machine: Machine

    @staticmethod
    def bundled(compiler: Compiler, machine: Machine) -> "Cc1 | None":
        """The cc1 of the compiler that lowered the sources, where it is the ziglang wheel's
        clang and its LLVM reads llvmlite's bitcode (the same major version)."""
        if compiler.command != bundled_cc() or compiler.llvm_major != llvmlite_llvm_major():
            return None
        return Cc1((*zig(), "clang", "-cc1"), machine)

    @staticmethod
    def emitter(machine: Machine) -> "Cc1":
        """The bundled clang's cc1 as the code generator alone, whatever clang lowered the
        sources: for the code generation options llvmlite's target machines cannot set (sections)."""
        major = bundled_llvm_major()
        if major != llvmlite_llvm_major():
            raise AdgenError(error(f"{' and '.join(machine.sections)} need the bundled clang's code generator, "
                                   f"whose LLVM ({major}) is not llvmlite's ({llvmlite_llvm_major()}): "
                                   "reinstall adgen's dependencies (pip install --force-reinstall adgen)"))
        return Cc1((*zig(), "clang", "-cc1"), machine)

    def optimize(self, bitcode: bytes, options: list[str], timings: list | None, level: int, vectorize: bool) -> bytes:
        """LLVM's default pipeline at -O`level`, the loop and SLP vectorizers on or off, LLVM's
        `options` (`-slp-max-vf=4`, say) set: the bitcode."""
        return self._run(bitcode, level, ["-emit-llvm-bc", *(["-vectorize-loops", "-vectorize-slp"] if vectorize else []),
                                          *(arg for o in options for arg in ("-mllvm", o))], timings)

    def emit(self, bitcode: bytes, timings: list | None = None) -> bytes:
        """The object code of optimized bitcode (code generation at O3, no further optimization)."""
        return self._run(bitcode, 3, ["-emit-obj", "-disable-llvm-passes"], timings)

    def compile(self, text: str, options: list[str], timings: list | None = None) -> bytes:
        """The object code of a module's text, optimized at O3 with the vectorizers on and
        LLVM's `options` set, in one run (a part of the derivative module: ir_ad/parts.py). The
        text is verified as it is read: llvmlite may not have read it (optimize.compile_text)."""
        return self._run(text.encode(), 3, ["-emit-obj", "-vectorize-loops", "-vectorize-slp",
                                            *(arg for o in options for arg in ("-mllvm", o))], timings, suffix=".ll",
                         verify=True)

    @property
    def joins(self) -> bool:
        """Whether `join` can make one object of several: ELF's relocatable link."""
        return not any(word in self.machine.triple for word in ("darwin", "macos", "ios", "windows", "wasm", "uefi"))

    def join(self, objects: list[bytes]) -> bytes:
        """One object of several (the parts of a derivative module), by the bundled lld's
        relocatable link."""
        with tempfile.TemporaryDirectory(prefix="adgen-ld-") as tmp:
            paths = []
            for k, code in enumerate(objects):
                paths.append(Path(tmp) / f"part{k}.o")
                paths[-1].write_bytes(code)
            out = Path(tmp) / "joined.o"
            command = [*zig(), "ld.lld", "-r", "-o", str(out), *map(str, paths)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0 or not out.exists():
                raise AdgenError(error(f"internal error: joining the derivative module's parts failed "
                                       f"({' '.join(command[:2])} -r exited {done.returncode}): "
                                       f"{done.stderr.strip()[:2000]}"))
            return out.read_bytes()

    def _run(self, bitcode: bytes, level: int, what: list[str], timings: list | None, suffix: str = ".bc",
             verify: bool = False) -> bytes:
        m = self.machine
        target = ["-triple", m.triple, *(["-target-cpu", m.cpu] if m.cpu else []),
                  *(arg for f in m.features.split(",") if f for arg in ("-target-feature", f))]
        with tempfile.TemporaryDirectory(prefix="adgen-cc1-") as tmp:
            source, out = Path(tmp) / f"in{suffix}", Path(tmp) / "out"
            source.write_bytes(bitcode)
            command = [*self.command, *target, *m.sections, f"-O{level}", "-mrelocation-model", "pic", "-pic-level", "2",
                       *([] if verify else ["-disable-llvm-verifier"]), *what,
                       *(["-ftime-report"] if timings is not None else []), "-x", "ir", str(source), "-o", str(out)]
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0 or not out.exists():
                raise AdgenError(error(f"internal error: clang's code generator failed on the differentiated "
                                       f"module ({' '.join(command[:3])} ... exited {done.returncode}): "
                                       f"{done.stderr.strip()[:2000]}"))
            if timings is not None:
                timings += pass_times(section(done.stderr, "Pass execution timing report"), time.perf_counter() - start)
            return out.read_bytes()
