"""MPI's calls, as calls.py classifies them (specs/mpi.md): a table of what each call is.

- The queries and bookkeeping (`MPI_Comm_rank`, `MPI_Comm_size`, `MPI_Wtime`, communicator and
  datatype management, `MPI_Barrier`) carry no derivatives.
- A communication carries none either where every datatype it is given is one of the MPI
  library's integer (or boolean) types, as the IR spells it (`handles`: Open MPI's `@ompi_mpi_int`,
  MPICH's number). A count, a flag or an index reduced over the ranks is such.
- The communications of DIFFERENTIATED, the starts and completions of requests and the making and
  freeing of communicators (COMPLETIONS, COMMUNICATORS) have derivatives written
  in C (templates/mpi_rules.c.j2: each call's tangent communication and adjoint communication),
  which custom.py's wrappers call in both modes, the shadows of the buffers after the call's own
  arguments. Every rank takes part in each of them in a derivative whatever its own activity
  (`every_rank`): the tangents and adjoints one rank sends, another receives.
- A communication of another datatype the IR names (`MPI_BYTE`, a derived datatype's handle kept
  in a constant) is a located error where derivatives flow through it; a datatype held in a
  variable is checked when the call runs (MPI_DOUBLE and MPI_FLOAT carry derivatives, and derived
  datatypes made of one of them)."""

from __future__ import annotations

from adgen.ir_ad.ir import Instruction

# Queries that involve no other rank: a loop that calls them may run again (checkpointing).
LOCAL = {"MPI_Comm_rank", "MPI_Comm_size", "MPI_Comm_remote_size", "MPI_Comm_test_inter", "MPI_Comm_compare",
         "MPI_Wtime", "MPI_Wtick", "MPI_Initialized", "MPI_Finalized", "MPI_Query_thread", "MPI_Is_thread_main",
         "MPI_Get_processor_name", "MPI_Get_version", "MPI_Get_library_version", "MPI_Group_rank", "MPI_Group_size",
         "MPI_Cart_coords", "MPI_Cart_rank", "MPI_Cart_shift", "MPI_Cart_get", "MPI_Dims_create", "MPI_Type_size",
         "MPI_Type_get_extent", "MPI_Type_get_true_extent", "MPI_Type_size_x", "MPI_Type_get_extent_x",
         "MPI_Type_get_true_extent_x", "MPI_Type_get_envelope", "MPI_Type_get_contents", "MPI_Type_get_name",
         "MPI_Get_count", "MPI_Error_string"}
# Calls that carry no derivatives, whatever their arguments: those, and bookkeeping.
QUERIES = LOCAL | {
    "MPI_Abort", "MPI_Barrier", "MPI_Comm_group", "MPI_Group_incl", "MPI_Group_excl", "MPI_Group_free",
    "MPI_Cart_create", "MPI_Type_commit", "MPI_Type_free", "MPI_Type_set_name", "MPI_Type_dup",
    # (making datatypes: the rules read what one is made of when it is communicated)
    "MPI_Type_contiguous", "MPI_Type_vector", "MPI_Type_create_hvector", "MPI_Type_indexed",
    "MPI_Type_create_indexed_block", "MPI_Type_create_hindexed", "MPI_Type_create_hindexed_block",
    "MPI_Type_create_struct", "MPI_Type_create_subarray", "MPI_Type_create_darray", "MPI_Type_create_resized",
    "MPI_Comm_set_errhandler", "MPI_Probe", "MPI_Iprobe", "MPI_Buffer_attach", "MPI_Buffer_detach",
}

# Communications -> the positions of their datatype arguments.
COMMUNICATIONS = {
    **{name: (2,) for name in ("MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Recv", "MPI_Isend",
                               "MPI_Issend", "MPI_Irecv", "MPI_Send_init", "MPI_Recv_init", "MPI_Bcast",
                               "MPI_Ibcast", "MPI_Sendrecv_replace", "MPI_Ssend_init", "MPI_Bsend_init",
                               "MPI_Rsend_init")},
    **{name: (3,) for name in ("MPI_Reduce", "MPI_Allreduce", "MPI_Scan", "MPI_Exscan", "MPI_Reduce_scatter",
                               "MPI_Reduce_scatter_block", "MPI_Ireduce", "MPI_Iallreduce", "MPI_Iscan",
                               "MPI_Iexscan", "MPI_Ireduce_scatter", "MPI_Ireduce_scatter_block")},
    **{name: (2, 5) for name in ("MPI_Gather", "MPI_Scatter", "MPI_Allgather", "MPI_Alltoall", "MPI_Igather",
                                 "MPI_Iscatter", "MPI_Iallgather", "MPI_Ialltoall")},
    "MPI_Sendrecv": (2, 7), **{name: (2, 6) for name in ("MPI_Gatherv", "MPI_Allgatherv", "MPI_Igatherv",
                                                         "MPI_Iallgatherv")},
    **{name: (3, 6) for name in ("MPI_Scatterv", "MPI_Iscatterv")},
    **{name: (3, 7) for name in ("MPI_Alltoallv", "MPI_Ialltoallv")},
    "MPI_Put": (2, 6), "MPI_Get": (2, 6), "MPI_Accumulate": (2, 6),
}

# MPI's predefined datatypes that carry derivatives, and those that carry none (integers, booleans),
# by name: the rules' module (templates/mpi_rules.c.j2) holds a constant of each the program's mpi.h
# defines, from which `handles` learns how the IR spells it (Open MPI's are the addresses of its
# objects, `@ompi_mpi_double`; MPICH's and its kin's, numbers).
FLOATING_DATATYPES = ("MPI_DOUBLE", "MPI_FLOAT")
INTEGER_DATATYPES = (
    "MPI_INT", "MPI_UNSIGNED", "MPI_LONG", "MPI_UNSIGNED_LONG", "MPI_LONG_LONG_INT", "MPI_LONG_LONG",
    "MPI_UNSIGNED_LONG_LONG", "MPI_SHORT", "MPI_UNSIGNED_SHORT", "MPI_CHAR", "MPI_SIGNED_CHAR", "MPI_UNSIGNED_CHAR",
    "MPI_WCHAR", "MPI_C_BOOL", "MPI_CXX_BOOL", "MPI_2INT", "MPI_AINT", "MPI_OFFSET", "MPI_COUNT", "MPI_INT8_T",
    "MPI_INT16_T", "MPI_INT32_T", "MPI_INT64_T", "MPI_UINT8_T", "MPI_UINT16_T", "MPI_UINT32_T", "MPI_UINT64_T",
    "MPI_INTEGER", "MPI_INTEGER1", "MPI_INTEGER2", "MPI_INTEGER4", "MPI_INTEGER8", "MPI_INTEGER16", "MPI_2INTEGER",
    "MPI_LOGICAL", "MPI_LOGICAL1", "MPI_LOGICAL2", "MPI_LOGICAL4", "MPI_LOGICAL8")
HANDLE_PREFIX = "__adgen_mpi_handle_"  # (the rules' constants: __adgen_mpi_handle_MPI_INT...)
FLOATING, INTEGER = "floating", "integer"


def handles(constants: dict[str, str]) -> dict[str, str]:
    """How the IR spells each predefined datatype -> FLOATING or INTEGER, from the rules' constants
    (by name, each global's text: `@__adgen_mpi_handle_MPI_INT = constant i32 1275069445`)."""
    kinds = {**dict.fromkeys(INTEGER_DATATYPES, INTEGER), **dict.fromkeys(FLOATING_DATATYPES, FLOATING)}
    spelled = {}
    for name, text in constants.items():
        kind = kinds.get(name.lstrip("@").removeprefix(HANDLE_PREFIX))
        value = text.partition(" constant ")[2].split(",")[0].split()
        if kind and len(value) == 2:
            spelled[value[1]] = kind
    return spelled


# The communications with derivatives (templates/mpi_rules.c.j2) -> the positions of their buffers.
DIFFERENTIATED = {
    **{name: (0,) for name in ("MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Recv", "MPI_Isend",
                               "MPI_Issend", "MPI_Irecv", "MPI_Sendrecv_replace", "MPI_Bcast", "MPI_Send_init",
                               "MPI_Ssend_init", "MPI_Bsend_init", "MPI_Rsend_init", "MPI_Recv_init")},
    **{name: (0, 1) for name in ("MPI_Reduce", "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
                                 "MPI_Scan", "MPI_Exscan")},
    **{name: (0, 3) for name in ("MPI_Gather", "MPI_Scatter", "MPI_Allgather", "MPI_Alltoall", "MPI_Gatherv",
                                 "MPI_Allgatherv")},
    **{name: (0, 4) for name in ("MPI_Scatterv", "MPI_Alltoallv")},
    "MPI_Sendrecv": (0, 5),
    "MPI_Ibcast": (0,), **{name: (0, 1) for name in ("MPI_Ireduce", "MPI_Iallreduce", "MPI_Iscan", "MPI_Iexscan",
                                                       "MPI_Ireduce_scatter", "MPI_Ireduce_scatter_block")},
    **{name: (0, 3) for name in ("MPI_Igather", "MPI_Iscatter", "MPI_Iallgather", "MPI_Ialltoall", "MPI_Igatherv",
                                 "MPI_Iallgatherv")},
    **{name: (0, 4) for name in ("MPI_Iscatterv", "MPI_Ialltoallv")},
}
# Starting and completing requests: MPI_Start(all) start a persistent request's derivatives, the
# waits and tests finish a request's, MPI_Request_free a persistent one's (and refuses, when the
# program runs, one in flight that carries derivatives).
COMPLETIONS = {"MPI_Wait", "MPI_Waitall", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Waitany", "MPI_Waitsome",
               "MPI_Request_free", "MPI_Start", "MPI_Startall"}
# Making and freeing communicators: the reverse sweep communicates on them after the program has
# freed them (freed at the reverse of the call that made them instead).
COMMUNICATORS = {"MPI_Comm_split", "MPI_Comm_dup", "MPI_Comm_create", "MPI_Comm_split_type", "MPI_Comm_free"}
RULES = set(DIFFERENTIATED) | COMPLETIONS | COMMUNICATORS
RULE_PREFIX = "__adgen_mpi_"
HELPER_PREFIX = "adgen_mpi_"  # (the rules' own static functions: templates/mpi_rules.c.j2)
LANES_RULE = "__adgen_mpi_lanes"  # forward mode at width N: how the tangents of the call after it come
RECORD = 48  # the bytes of the caller's record each call's rule keeps (a match, its datatypes, a pointer to more)




def communicating_call(module, inst: Instruction, seen: set[str] | None = None) -> str | None:
    """The call of MPI's, other than a local query, that a call makes (itself, or a function of
    the sources it calls, at any depth), or None: code that cannot run twice on one rank alone."""
    name = inst.callee.lstrip("@").strip('"')
    if is_mpi(name):
        return None if _bare(name) in LOCAL else _bare(name)
    target = module.functions.get(inst.callee)
    seen = set() if seen is None else seen
    if target is None or target.declaration or inst.callee in seen:
        return None
    seen.add(inst.callee)
    return next((found for i in target.instructions() if i.opcode in ("call", "invoke")
                 for found in [communicating_call(module, i, seen)] if found), None)


def rule_names(name: str) -> tuple[str, str, str]:
    """The C functions of a call's derivatives: forward mode, augmented forward sweep, reverse sweep."""
    return tuple(f"@{RULE_PREFIX}{part}_{name}" for part in ("fwd", "aug", "rev"))


def needed_rules(calls: set[str], forward: bool, reverse: bool) -> set[str]:
    """The C functions of the rules (by name, without '@') that derivatives of these calls use:
    forward mode's where an entry derives in forward mode, the sweeps' where one derives in
    reverse mode; with either, the width's setter (LANES_RULE)."""
    wanted = [i for i, on in ((0, forward), (1, reverse), (2, reverse)) if on]
    names = {rule_names(name)[i].lstrip("@") for name in calls & RULES for i in wanted}
    return names | {LANES_RULE} if names else names


def is_mpi(name: str) -> bool:
    return name.startswith(("MPI_", "PMPI_"))


def _bare(name: str) -> str:
    return name[1:] if name.startswith("PMPI_") else name


def _datatypes(name: str, inst: Instruction) -> list[str]:
    arguments = [a for a, _ in inst.call_args]
    return [arguments[k].value for k in COMMUNICATIONS.get(_bare(name), ()) if k < len(arguments)]


def inactive(name: str, inst: Instruction, spelled: dict[str, str]) -> bool:
    """Whether this call of MPI carries no derivatives: a query, or a communication of integers
    (`spelled`: `handles`, the program's predefined datatypes)."""
    name = _bare(name)
    if name in QUERIES:
        return True
    types = _datatypes(name, inst)
    return name in COMMUNICATIONS and len(types) == len(COMMUNICATIONS[name]) and \
        all(spelled.get(t) == INTEGER for t in types)


def predefined_handle(value: str) -> bool:
    """An operand that is one of the MPI library's predefined handles (Open MPI's are the
    addresses of its own objects: `@ompi_mpi_comm_world`, `@ompi_mpi_double`...), which no call
    writes through."""
    return value.startswith(("@ompi_mpi_", '@"ompi_mpi_'))


def writes_arguments_only(name: str) -> bool:
    """For the memory analysis: a call of MPI's writes only through its pointer arguments (a
    receive buffer, a status, a request, a rank) — but a completion or a start (MPI_Wait, MPI_Test,
    MPI_Start...), which writes the buffers of the requests it completes or starts, named by no
    argument of its own (a nonblocking receive's buffer is taken as written where it is posted:
    MPI leaves it alone until the completion)."""
    return is_mpi(name) and _bare(name) not in COMPLETIONS


def every_rank(name: str, inst: Instruction, spelled: dict[str, str]) -> bool:
    """Whether each rank differentiates this call, whether or not derivatives flow through it
    here: a communication of floating data (or of a datatype only the running program knows)
    with a rule, and the completions of requests."""
    if name in COMPLETIONS or name in COMMUNICATORS:
        return True
    return name in DIFFERENTIATED and all(spelled.get(t) == FLOATING or t.startswith("%")
                                          for t in _datatypes(name, inst))


def refusal(name: str) -> str | None:
    """What to say of a call of MPI that carries derivatives, which adgen does not differentiate."""
    name = _bare(name)
    if name in DIFFERENTIATED:
        return (f"MPI's '{name}' of a datatype other than MPI_DOUBLE and MPI_FLOAT (or integers, which carry none): "
                "adgen differentiates communications of those and of derived datatypes made of them")
    if name in COMMUNICATIONS:
        return (f"MPI's '{name}' on data that is not integers: adgen does not differentiate this communication "
                "(specs/mpi.md lists those it does)")
    return f"MPI's '{name}': adgen has no derivative rule for it (specs/mpi.md)" if is_mpi(name) else None
