"""bench.mpi: gradients of MPI programs over ranks (`python -m bench.mpi`, __main__.py), and the
table its records make, for its own page and the performance page (bench/report.py)."""

from __future__ import annotations


def table(data: dict) -> str:
    """Markdown: the programs' checks and weak scaling per tool, the builds' seconds, and Enzyme's
    MPI integration tests where they ran, from a record file's content (bench/records.py)."""
    programs = data["settings"]["programs"]
    heat, lsq = programs["heat"], programs["lsq"]
    lines = [f"heat: a 2-D heat equation, halos by Isend/Irecv, an Allreduce'd norm; the check a {heat[1][0]} x "
             f"{heat[1][1]} grid, {heat[1][2]} steps, split over the ranks (d kappa against central differences); weak "
             f"scaling each rank {heat[2][1]} rows of {heat[2][0]}, {heat[2][2]} steps. lsq: data-parallel least "
             f"squares, the loss Allreduce'd; the check {lsq[1][1]} rows of {lsq[1][0]} split over the ranks (d x[0] "
             f"against central differences); weak scaling each rank {lsq[2][1]} rows. Times: the median of "
             f"{data['settings']['reps']}, the slowest rank's. Ranks beyond the machine's cores share them.", "",
             "| program | tool | ranks | gradient vs one rank's (relative) | an entry vs central differences | primal | "
             "gradient | gradient / primal | ratio vs one rank's |", "|---|---|---|---|---|---|---|---|---|"]
    for r in data["records"]:
        lines.append(f"| {r['program']} | {r['tool']} | {r['ranks']} | {r['vs_one_rank']:.1e} | {r['entry_fd_rel']:.1e} "
                     f"| {r['primal_s'] * 1e3:.2f} ms | {r['gradient_s'] * 1e3:.2f} ms | {r['ratio']:.2f}x | "
                     f"{r['ratio_vs_one_rank']:.2f} |")
    for program, built in data.get("builds", {}).items():
        rounds = data.get("settings", {}).get("build_rounds", 1)
        lines += ["", f"Build of {program} (seconds{f', the median of {rounds} rounds' if rounds > 1 else ''}): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in built.items())]
        if "enzyme" in built:
            lines.append("(over Enzyme's plugin, the same file: " + ", ".join(
                f"{k} {built[k] / built['enzyme']:.2f}x" for k in ("adgen build", "adgen cc") if k in built) + ")")
    lines += [f"{k} did not build: {why}" for k, why in data.get("failed", {}).items()]
    tests = data.get("enzyme_tests") or []
    if tests:
        ranks = ", ".join(map(str, data["settings"].get("enzyme_ranks", [])))
        lines += ["", f"Enzyme's MPI integration tests (built unchanged, run on {ranks} ranks, their printed "
                  "derivatives checked):", "", "| test | tool | -O0 | -O1 | -O2 | -O3 |", "|---|---|---|---|---|---|"]
        for name in dict.fromkeys(t["test"] for t in tests):
            for tool in dict.fromkeys(t["tool"] for t in tests):
                row = [t for t in tests if t["test"] == name and t["tool"] == tool]
                lines.append(f"| {name} | {tool} | " + " | ".join("right" if t["right"] else f"no: {t['why']}"
                                                                 for t in row) + " |")
    return "\n".join(lines) + "\n"
