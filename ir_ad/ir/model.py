"""The IR as the AD core sees it: functions of blocks of instructions with parsed operands.
Only what the AD core reads is parsed; every instruction keeps its text, so the primal
computation is copied into derivative functions verbatim. Reading text into this model is
`instructions` and `functions`; a whole module, `module`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from adgen.ir_ad.ir.types import Type


@dataclass(frozen=True)
class Operand:
    type: Type
    value: str  # "%x", "@g", or a constant's text

    @property
    def is_local(self) -> bool:
        return self.value.startswith("%")

    @property
    def is_constant(self) -> bool:
        return not self.value.startswith(("%", "@"))

    def __str__(self) -> str:
        return f"{self.type.text} {self.value}"


@dataclass(eq=False)  # one instruction is not another with the same text (peeled loops copy code)
class Instruction:
    text: str  # the line as printed, metadata attachments removed
    result: str | None  # "%x" or None
    opcode: str
    type: Type  # the result type (void when none)
    operands: list[Operand] = field(default_factory=list)
    predicate: str = ""  # fcmp/icmp
    source_type: Type | None = None  # gep source element type, alloca/load type
    indices: list[int] = field(default_factory=list)  # extractvalue/insertvalue
    incoming: list[tuple[Operand, str]] = field(default_factory=list)  # phi: (value, block)
    targets: list[str] = field(default_factory=list)  # br/switch labels
    cases: list[tuple[Operand, str]] = field(default_factory=list)  # switch
    callee: str = ""  # "@name" for direct calls ("asm" for inline assembly)
    asm: str = ""  # inline assembly's constraints ("=r,0,~{memory}")
    call_args: list[tuple[Operand, dict]] = field(default_factory=list)
    dbg: str | None = None  # "!N"
    count: Operand | None = None  # alloca count
    tbaa: str | None = None  # "!N", the access tag of a load or store
    tbaa_struct: str | None = None  # "!N", the fields a copy of an aggregate (memcpy) moves

    def mentions(self) -> set[str]:
        """The local values its text names: all there is to go on for an opcode not parsed."""
        return set(re.findall(r"%[-\w.$]+", self.text))

    @property
    def name(self) -> str | None:
        return self.result

    @property
    def align(self) -> int | None:
        """The `align N` of a load or store, kept when adgen writes its shadow twin."""
        m = re.search(r"align (\d+)", self.text)
        return int(m.group(1)) if m else None


@dataclass
class Block:
    label: str  # "%bb" as referenced
    instructions: list[Instruction]


@dataclass
class Argument:
    """A function's formal parameter, with its attributes (`noalias`, `sret`...)."""

    type: Type
    name: str  # "%arg"
    attrs: dict[str, str]


@dataclass
class Function:
    name: str  # "@f"
    ret: Type
    params: list[Argument]
    blocks: list[Block]
    declaration: bool
    dbg: str | None
    text: str  # the definition or declaration, as printed
    variadic: bool = False
    linkage: str = ""

    def instructions(self):
        for b in self.blocks:
            yield from b.instructions

    @property
    def local(self) -> bool:
        """Whether its linkage keeps it inside its module (internal, private): no other object
        can name it."""
        return not {"internal", "private"}.isdisjoint(self.linkage.split())

    @property
    def attribute_groups(self) -> list[str]:
        """The attribute groups its header names after the parameters (`#0` is "0"): where LLVM
        prints a function's own attributes (`Module.attributes` holds them)."""
        return re.findall(r"#(\d+)", self.text.split("\n", 1)[0].split(")")[-1])
