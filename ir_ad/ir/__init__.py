"""The IR package: the one place in adgen that reads IR text. LLVM IR text is read into a model
(`model`: functions, blocks, instructions; `types`) by `module`, `functions` and
`instructions` (over the lexer, `tokens`); the module answers what stages ask of the text
besides (attributes, `debuginfo`, `tbaa`); `names` reads symbol and intrinsic names, `text`
answers quick questions of a text without reading it whole; `builder` writes IR; `edit` and
`split` rewrite a module's text (the latter into parts compiled at once)."""

from adgen.ir_ad.ir.debuginfo import Location
from adgen.ir_ad.ir.functions import Header, parse_header
from adgen.ir_ad.ir.instructions import atomic_operation, parse_instruction, shuffle_mask, strip_metadata
from adgen.ir_ad.ir.model import Argument, Block, Function, Instruction, Operand
from adgen.ir_ad.ir.module import Module
from adgen.ir_ad.ir.names import intrinsic_family, rust_path
from adgen.ir_ad.ir.read_only import read_only
from adgen.ir_ad.ir.text import (branching_back, count_instructions, defined_with_prefix, global_addresses,
                                 may_call_through_pointer, renamed_global, stored_global_addresses, without_comdats,
                                 without_target_attributes)
from adgen.ir_ad.ir.tokens import Cursor, IRError
from adgen.ir_ad.ir.types import (I1, I8, I32, I64, PTR, VOID, Type, array, element_align, float_type, floating,
                                  int_type, parse_type, slot_size, struct, vector)

__all__ = ["Argument", "Block", "atomic_operation", "branching_back", "Cursor", "Function", "Header", "I1", "I8",
           "I32", "I64", "IRError", "Instruction",
           "Location", "Module", "Operand", "PTR", "Type", "VOID", "array", "count_instructions", "element_align",
           "defined_with_prefix", "float_type", "floating", "global_addresses", "int_type", "intrinsic_family", "may_call_through_pointer",
           "parse_header", "parse_instruction", "parse_type", "read_only", "renamed_global", "rust_path", "shuffle_mask", "slot_size", "stored_global_addresses",
           "strip_metadata", "struct", "vector", "without_comdats", "without_target_attributes"]
