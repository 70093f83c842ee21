"""The performance page: `python -m bench --report DIR [--from FILE ...]` writes DIR/index.md
(Markdown for an MkDocs site) and its figures, DIR/*.svg, from record files (bench/records.py):
a section per benchmark with records (kernels, programs, llm.c, GradBench, checkpointing, the
bridges, MPI), each
with its figures and, beside them, the tables its own module writes. The machine, the commit and
the date stand at the top, and again in a section measured elsewhere. The page depends on the
records alone: the same records give the same files."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.records import KINDS, PROVENANCE

TITLES = {"kernels": "Kernels", "programs": "Programs", "llmc": "llm.c's GPT-2", "gradbench": "GradBench",
          "checkpointing": "Long loops in bounded memory (checkpointing)",
          "bridges": "One call through the JAX and TensorFlow bridges", "mpi": "MPI programs over ranks"}
COMMANDS = {"kernels": "python -m bench --json FILE", "programs": "python -m bench.programs --json FILE",
            "llmc": "python -m bench.llmc LLMC_SRC --json FILE",
            "gradbench": "python -m bench.gradbench GRADBENCH_SRC --json FILE",
            "checkpointing": "python -m bench.checkpointing --json FILE",
            "bridges": "python -m bench.bridges --json FILE",
            "mpi": "python -m bench.mpi [--enzyme PLUGIN --enzyme-src ENZYME_SRC] --json FILE"}
FIGURES = ("kernels_time", "kernels_ratio", "kernels_memory", "programs_time", "programs_memory", "llmc_time",
           "llmc_memory", "gradbench_time", "checkpointing_time", "checkpointing_memory")


class Figures:
    """The figures a page writes into its folder, each as a Markdown image link."""

    def __init__(self, folder: Path):
        from bench import charts  # (matplotlib: an ImportError here, before anything is written)

        self.folder, self.written, self.charts = folder, [], charts

    def add(self, name: str, alt: str, title: str, xlabel: str, rows: list[str], series: dict,
            line: tuple[float, str] | None = None, ratio: bool = False) -> list[str]:
        """`ratio`: the bars start at the line (1: as fast as the reference), left or right of it."""
        assert name in FIGURES, name
        series = {label: values for label, values in series.items() if any(v is not None for v in values)}
        path, base = self.folder / f"{name}.svg", line[0] if ratio and line else None
        if not rows or not series or not self.charts.bars(path, title, xlabel, rows, series, line, base):
            return []
        self.written.append(path)
        return [f"![{alt}]({name}.svg)", ""]


def write(folder: Path, files: list[dict]) -> list[Path]:
    """Writes DIR/index.md and the figures; returns their paths, index.md first. A later record
    file of a kind replaces an earlier one. Raises ImportError without matplotlib."""
    figures = Figures(folder)
    chosen: dict[str, dict] = {}
    for data in files:
        if data["kind"] in chosen:
            print(f"report: a second {data['kind']} record file replaces the first", file=sys.stderr)
        chosen[data["kind"]] = data
    folder.mkdir(parents=True, exist_ok=True)
    kinds = [kind for kind in KINDS if kind in chosen]
    top = _provenance(chosen[kinds[0]]) if kinds else None
    text = header(chosen, top)
    for kind in kinds:
        data = chosen[kind]
        text += [f"## {TITLES[kind]}", ""]
        if _provenance(data) != top:
            text += ["*This section's records: " + _where(data) + ".*", ""]
        text += SECTIONS[kind](data, figures)
    for name in FIGURES:  # (a figure of an earlier page that this one has not)
        stale = folder / f"{name}.svg"
        if stale not in figures.written:
            stale.unlink(missing_ok=True)
    index = folder / "index.md"
    index.write_text("\n".join(text).rstrip("\n") + "\n")
    return [index, *figures.written]


def _provenance(data: dict) -> tuple:
    return tuple(data[key] for key in PROVENANCE)


def _where(data: dict) -> str:
    return f"{data['machine']}; {data['os']}; commit `{data['commit']}`; {data['date']}"


def header(chosen: dict[str, dict], top: tuple | None) -> list[str]:
    text = ["# Performance", "",
            "Time and memory of the derivatives adgen generates, beside Enzyme's and hand-written ones, as the "
            "benchmarks in `bench/` measure them. This page is generated: `python -m bench --report DIR` (the "
            "kernels, measured now) or `python -m bench --report DIR --from FILE ...` (saved record files).", ""]
    if top is not None:
        machine, system, commit, date = top
        text += [f"- **Machine:** {machine}", f"- **OS:** {system}", f"- **Commit:** `{commit}`",
                 f"- **Date:** {date}"]
        if any(_provenance(data) != top for data in chosen.values()):
            text += ["- (A section measured on another machine, commit or date says so.)"]
        text += [""]
    tapenade = any(r.get("tapenade_s") is not None for r in chosen.get("kernels", {}).get("records", []))
    if not tapenade:
        text += ["**Tapenade:** not measured. None of these records has Tapenade's times (the benchmarks "
                 "build no Tapenade derivatives), so no column or bar stands for it.", ""]
    missing = [kind for kind in KINDS if kind not in chosen]
    if missing:
        text += ["Not on this page (no record file given): " + "; ".join(
            f"{TITLES[kind].split(' (')[0]} (`{COMMANDS[kind]}`)" for kind in missing) + ".", ""]
    return text


def _enzyme_note(enzyme: bool) -> list[str]:
    return [] if enzyme else ["Enzyme: not measured in this run (its clang plugin is given with `--enzyme PLUGIN`).",
                              ""]


# --- the sections ------------------------------------------------------------------------------

def kernels(data: dict, figures: Figures) -> list[str]:
    from bench.__main__ import restored, tables

    found = restored(data["records"])
    reverse = [r for r in found if r["mode"] == "reverse"]
    enzyme = any(r["enzyme_s"] is not None for r in found)
    settings = data["settings"]
    text = ["The kernels of `bench/kernels.c` (norm and gmm_objective at two sizes each), differentiated by "
            "adgen, beside the hand-written gradients of `bench/hand.c` where there is one and Enzyme's "
            "(`bench/enzyme.c`), all built for the machine (`-march=native`) and timed in one process: each "
            "time the best of several repetitions, adgen's and Enzyme's gradients timed in turns. Memory: the derivative's peak heap bytes (its stored "
            "values, caches and shadow memory; adgen's in its first call in a process of its own)."
            + (" Measured with `--quick` (smaller sizes, fewer repetitions)." if settings.get("quick") else "")
            + (f" One kernel only (`--only {settings['only']}`)." if settings.get("only") else ""), ""]
    text += _enzyme_note(enzyme)
    names = [r["kernel"] for r in reverse]
    ratio = lambda key: [None if r.get(key) is None else r[key] / r["primal_s"] for r in reverse]
    text += figures.add("kernels_time", "Gradient time over primal time, per kernel",
                        "Reverse mode: gradient time / primal time (lower is better)",
                        "gradient time / primal time (log scale)", names,
                        {"adgen": ratio("adgen_s"), "Enzyme": ratio("enzyme_s"), "hand-written": ratio("hand_s"),
                         "Tapenade": ratio("tapenade_s")}, (1.0, "the primal's time"))
    parts = tables(found)
    text += [parts["reverse"]]
    if enzyme:
        by_mode = {(r["kernel"], r["mode"]): r for r in found}
        versus = lambda mode: [None if (r := by_mode.get((name, mode))) is None or not r["enzyme_s"]
                               else r["adgen_s"] / r["enzyme_s"] for name in names]
        text += figures.add("kernels_ratio", "adgen's time over Enzyme's, per kernel",
                            "adgen's time / Enzyme's time (below 1: adgen is faster)",
                            "adgen time / Enzyme time (log scale)", names,
                            {"gradient (reverse)": versus("reverse"), "forward[8]": versus("forward8"),
                             "H·v (forward over reverse)": versus("hvp")}, (1.0, "as fast as Enzyme"), ratio=True)
    mb = lambda key: [None if r.get(key) is None else r[key] / 1e6 for r in reverse]
    chart = figures.add("kernels_memory", "Peak heap memory of each gradient",
                        "Reverse mode: the gradient's peak heap memory", "peak MB (log scale; 0: no allocation)",
                        names, {"adgen": mb("adgen_bytes"), "Enzyme": mb("enzyme_bytes"),
                                "Tapenade": mb("tapenade_bytes")})
    text += chart or ["No gradient here allocates heap memory (peak 0 MB), so there is no memory chart.", ""]
    return text + [parts["forward8"]] + ([parts["hvp"]] if "hvp" in parts else [])


def _ways(figures: Figures, stem: str, what: str, rows: list[str], runs: list[dict], labels: dict[str, str],
          reference: str, reference_label: str) -> list[str]:
    """A time chart (× the reference way) and a memory chart of runs by row and way."""
    table = {(row, way): r for row, by_way in zip(rows, runs) for way, r in by_way.items()}
    times = {labels[way]: [None if (r := table.get((row, way))) is None or (ref := table.get((row, reference))) is None
                           else r["median_s"] / ref["median_s"] for row in rows]
             for way in labels if way not in ("primal", reference)}
    memory = {labels[way]: [None if (r := table.get((row, way))) is None else r["peak_bytes"] / 1e6 for row in rows]
              for way in labels}
    return (figures.add(f"{stem}_time", f"{what}: time over the hand-written code's",
                        f"{what}: time × the hand-written code's (lower is better)",
                        "time / hand-written time (log scale)", rows, times, (1.0, reference_label), ratio=True)
            + figures.add(f"{stem}_memory", f"{what}: peak resident memory", f"{what}: peak resident memory",
                          "peak MB (log scale)", rows, memory))


def programs(data: dict, figures: Figures) -> list[str]:
    from bench.programs.__main__ import markdown

    found, settings = data["records"], data["settings"]
    threads = max((r["threads"] or 0 for r in found), default=0)
    names = list(dict.fromkeys(r["program"] for r in found))
    runs = [{r["mode"]: r for r in found if r["program"] == name and (r["threads"] or 0) == threads}
            for name in names]
    text = ["The programs of `bench/programs`: a small GPT-2 training loss (`gpt2.c`) and a three-layer "
            "perceptron (`mlp.c`), each with its backward pass written by hand beside it. Each way of computing "
            f"runs in a process of its own: time is the median of {settings.get('reps', 5)} calls after a "
            "warm-up, memory the process's peak resident memory (VmHWM)."
            + (" Measured with `--quick` (smaller sizes)." if settings.get("quick") else "")
            + (f" Built with `-fopenmp`; the figures show teams of {threads} threads." if threads else ""), ""]
    text += _enzyme_note(any(r["mode"] == "enzyme" for r in found))
    rows = [f"{name}, {threads} threads" if threads else name for name in names]
    text += _ways(figures, "programs", "Programs", rows, runs,
                  {"primal": "primal (the loss)", "hand": "hand-written forward+backward", "adgen": "adgen's gradient",
                   "adgen-forked": "adgen's, reverse sweeps forked", "enzyme": "Enzyme's gradient"}, "hand",
                  "the hand-written code's time")
    return text + [markdown(data)]


def llmc(data: dict, figures: Figures) -> list[str]:
    from bench.llmc.__main__ import markdown

    found = data["records"]
    keys = list(dict.fromkeys((r["config"], r["openmp"]) for r in found))
    top = {key: max(r["threads"] or 0 for r in found if (r["config"], r["openmp"]) == key) for key in keys}
    rows = [f"{config}, -fopenmp, {top[config, openmp]} threads" if openmp else f"{config}, one thread"
            for config, openmp in keys]
    runs = [{r["mode"]: r for r in found if (r["config"], r["openmp"]) == key and (r["threads"] or 0) == top[key]}
            for key in keys]
    text = ["llm.c's CPU GPT-2 (`train_gpt2.c`, github.com/karpathy/llm.c) differentiated as written "
            "(`bench/llmc`), beside llm.c's own hand-written backward pass (`gpt2_backward`). Each way runs in a "
            "process of its own; memory is its peak resident memory (VmHWM).", ""]
    text += _enzyme_note(any(r["mode"] == "enzyme" for r in found))
    text += _ways(figures, "llmc", "llm.c", rows, runs,
                  {"primal": "primal (the loss)", "hand": "hand-written (llm.c's backward)",
                   "adgen": "adgen's gradient", "enzyme": "Enzyme's gradient"}, "hand", "llm.c's hand-written time")
    return text + [markdown(data)]


def gradbench(data: dict, figures: Figures) -> list[str]:
    from bench.gradbench.__main__ import tables

    settings = data["settings"]
    found = {(r["case"], r["tool"]): r for r in data["records"] if r["ok"] and r["ms"]}
    cases = [c for c in settings.get("cases", []) if (c, "manual") in found and "-check-" not in c]  # (timed, not charted)
    rows = [f"{program} {function}, {size}" for program, size, function in (c.split("-", 2) for c in cases)]
    versus = lambda tool: [None if (c, tool) not in found else found[c, tool]["ms"] / found[c, "manual"]["ms"]
                           for c in cases]
    text = [f"GradBench's C++ programs for Enzyme (github.com/gradbench/gradbench "
            f"{settings.get('gradbench_commit', '')}, `tools/enzyme/*.cpp` unchanged), built by `adgen c++`; "
            "beside Enzyme's clang plugin on the same files and GradBench's hand-written derivatives (its "
            f"`manual` tool, {settings.get('manual_cxx') or 'c++'}). Time: the median of the "
            f"{settings.get('reps', 5)} evaluations each program times itself"
            + (f", the fastest of {settings['rounds']} runs with the tools in turn" if settings.get("rounds", 1) > 1
               else "")
            + (f" (hello, whose input carries no run count and which evaluates once per run: the median of "
               f"{settings['processes']} runs' one evaluation each)" if settings.get("processes") else "")
            + "; GradBench measures no memory. "
            "particle and saddle have no manual tool: their outputs are checked against the eval's constant, and "
            "they are in the tables only.", ""]
    text += _enzyme_note(settings.get("enzyme", False))
    text += figures.add("gradbench_time", "GradBench: time over the hand-written code's",
                        "GradBench: time × the manual (hand-written) tool's (lower is better)",
                        "time / manual time (log scale)", rows, {"adgen": versus("adgen"), "Enzyme": versus("enzyme")},
                        (1.0, "the manual tool's time"), ratio=True)
    return text + [tables(data)]


def checkpointing(data: dict, figures: Figures) -> list[str]:
    from bench.checkpointing.__main__ import LABEL, MODES, rows_from, table

    found = data["records"]
    rows = [r["kernel"] for r in found]
    measured = [{mode: r for mode, r in row["results"].items() if isinstance(r, dict)} for row in found]
    times = {LABEL[mode]: [None if mode not in m or "primal" not in m else m[mode]["seconds"] / m["primal"]["seconds"]
                           for m in measured] for mode in MODES if mode != "primal"}
    memory = {LABEL[mode]: [m[mode]["peak_kb"] / 1024 if mode in m else None for m in measured] for mode in MODES}
    text = ["Reverse mode over long loops within a memory budget (`bench/checkpointing`): adgen's gradient "
            "checkpointed within 64 MiB, adgen's without a budget and Enzyme's, each in a process of its own, "
            + (f"the fastest of {data['settings']['rounds']} runs, the ways in turns"
               if data["settings"].get("rounds", 1) > 1 else "once")
            + "; memory is its peak resident memory (VmHWM). There is no hand-written gradient here: time is "
            "shown over the primal's."
            + (" Measured with `--quick` (a tenth of the steps)." if data["settings"].get("quick") else ""), ""]
    text += _enzyme_note(data["settings"].get("enzyme", any("enzyme" in m for m in measured)))
    text += figures.add("checkpointing_time", "Checkpointing: gradient time over primal time",
                        "Long loops: gradient time / primal time", "time / primal time (log scale)", rows, times)
    text += figures.add("checkpointing_memory", "Checkpointing: peak resident memory",
                        "Long loops: peak resident memory", "peak MiB (log scale)", rows, memory,
                        (64.0, "the 64 MiB budget"))
    return text + [table(rows_from(data), data["settings"].get("quick", False), data["settings"].get("rounds", 1))]


def bridges(data: dict, figures: Figures) -> list[str]:
    from bench.bridges import table

    return ["The cost of one call of a C function (and of its gradient) through `adgen.jax` and "
            "`adgen.tensorflow`, beside a raw ctypes call of the same compiled code and `adgen.load`'s checked "
            "call, for 4 elements (the call's cost) and 100,000 (the C code's); median of "
            f"{data['settings'].get('reps', '?')} loops of calls (`bench/bridges.py`).", "", table(data["records"])]


def mpi(data: dict, figures: Figures) -> list[str]:
    from bench.mpi import table

    return ["Gradients of MPI programs on 1, 2 and 4 ranks (`bench/mpi`): each equal to the one-rank "
            "program's, and their cost over the primal's as the ranks grow (weak scaling).", "", table(data)]


SECTIONS = {"kernels": kernels, "programs": programs, "llmc": llmc, "gradbench": gradbench,
            "checkpointing": checkpointing, "bridges": bridges, "mpi": mpi}
