"""MPI's calls, as calls.py classifies them (specs/mpi.md): a table of what each call is.

- The queries and bookkeeping (`MPI_Comm_rank`, `MPI_Comm_size`, `MPI_Wtime`, communicator and
  datatype management, `MPI_Barrier`, the completion of requests) carry no derivatives.
- A communication carries none either where every datatype it is given is one of the MPI
  library's integer (or boolean) types, as the IR shows it: a constant, Open MPI's
  `@ompi_mpi_int` and its kin. A count, a flag or an index reduced over the ranks is such.
- A communication of anything else (floating data, a byte or packed buffer, a datatype held in a
  variable) is a located error naming the call: adgen does not differentiate MPI communication
  yet (its tangents and adjoint communication are this table's next columns)."""

from __future__ import annotations

from adgen.ir_ad.ir import Instruction

# Calls that carry no derivatives, whatever their arguments.
QUERIES = {
    "MPI_Comm_rank", "MPI_Comm_size", "MPI_Comm_remote_size", "MPI_Comm_test_inter", "MPI_Comm_compare",
    "MPI_Wtime", "MPI_Wtick", "MPI_Initialized", "MPI_Finalized", "MPI_Query_thread", "MPI_Is_thread_main",
    "MPI_Get_processor_name", "MPI_Get_version", "MPI_Get_library_version", "MPI_Abort", "MPI_Barrier",
    "MPI_Comm_dup", "MPI_Comm_split", "MPI_Comm_split_type", "MPI_Comm_create", "MPI_Comm_free", "MPI_Comm_group",
    "MPI_Group_incl", "MPI_Group_excl", "MPI_Group_free", "MPI_Group_rank", "MPI_Group_size",
    "MPI_Cart_create", "MPI_Cart_coords", "MPI_Cart_rank", "MPI_Cart_shift", "MPI_Cart_get", "MPI_Dims_create",
    "MPI_Type_size", "MPI_Type_get_extent", "MPI_Type_contiguous", "MPI_Type_vector", "MPI_Type_commit",
    "MPI_Type_free", "MPI_Get_count", "MPI_Error_string", "MPI_Comm_set_errhandler",
    # (completing a request: its communication, the call that made it, is this table's to judge)
    "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany",
    "MPI_Request_free", "MPI_Start", "MPI_Startall", "MPI_Probe", "MPI_Iprobe",
}

# Communications -> the positions of their datatype arguments.
COMMUNICATIONS = {
    **{name: (2,) for name in ("MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Recv", "MPI_Isend",
                               "MPI_Issend", "MPI_Irecv", "MPI_Send_init", "MPI_Recv_init", "MPI_Bcast",
                               "MPI_Ibcast", "MPI_Sendrecv_replace")},
    **{name: (3,) for name in ("MPI_Reduce", "MPI_Allreduce", "MPI_Scan", "MPI_Exscan", "MPI_Reduce_scatter",
                               "MPI_Reduce_scatter_block", "MPI_Ireduce", "MPI_Iallreduce", "MPI_Iscan",
                               "MPI_Iexscan")},
    **{name: (2, 5) for name in ("MPI_Gather", "MPI_Scatter", "MPI_Allgather", "MPI_Alltoall", "MPI_Igather",
                                 "MPI_Iscatter", "MPI_Iallgather", "MPI_Ialltoall")},
    "MPI_Sendrecv": (2, 7), "MPI_Gatherv": (2, 6), "MPI_Allgatherv": (2, 6), "MPI_Scatterv": (3, 6),
    "MPI_Alltoallv": (3, 7), "MPI_Put": (2, 6), "MPI_Get": (2, 6), "MPI_Accumulate": (2, 6),
}

# The MPI library's integer and boolean datatypes, as their constants appear in the IR.
INTEGER_DATATYPES = {f"@ompi_mpi_{t}" for t in (
    "int", "unsigned", "long", "unsigned_long", "long_long_int", "unsigned_long_long", "short", "unsigned_short",
    "char", "signed_char", "unsigned_char", "wchar", "c_bool", "cxx_bool", "2int", "aint", "offset", "count",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "integer", "integer1", "integer2", "integer4", "integer8", "integer16", "2integer",
    "logical", "logical1", "logical2", "logical4", "logical8")}


def is_mpi(name: str) -> bool:
    return name.startswith(("MPI_", "PMPI_"))


def _bare(name: str) -> str:
    return name[1:] if name.startswith("PMPI_") else name


def inactive(name: str, inst: Instruction) -> bool:
    """Whether this call of MPI carries no derivatives: a query, or a communication of integers."""
    name = _bare(name)
    if name in QUERIES:
        return True
    positions = COMMUNICATIONS.get(name)
    if positions is None:
        return False
    arguments = [a for a, _ in inst.call_args]
    return all(k < len(arguments) and arguments[k].value in INTEGER_DATATYPES for k in positions)


def refusal(name: str) -> str | None:
    """What to say of a call of MPI that carries derivatives, which adgen does not differentiate yet."""
    name = _bare(name)
    if name in COMMUNICATIONS:
        return (f"MPI's '{name}' on data that is not integers: adgen does not differentiate MPI communication yet "
                "(it differentiates the code between communications; specs/mpi.md)")
    return f"MPI's '{name}': adgen has no derivative rule for it (specs/mpi.md)" if is_mpi(name) else None
