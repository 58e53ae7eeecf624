"""The benchmark's outputs: the text table, the JSON file and the speedup bar chart."""
import json

from .runner import format_seconds, format_speedup, hogs_text

PLOT_MISSING = ("--plot needs matplotlib, which is not installed; install it with "
                "`pip install matplotlib` (or `pip install 'graphc[plot]'`), or leave out --plot")

_COLUMNS = [("workload", "<"), ("size", "<"), ("mode", "<"), ("first call", ">"),
            ("median", ">"), ("vs eager", ">"), ("GB/s", ">")]


def header_lines(report):
    """Where and with what the numbers were measured: machine, versions, BLAS threads,
    the CPU hogs of --contended, and the triad reference."""
    m = report.machine
    versions = ", ".join(f"{k} {m[k]}" for k in ("python", "graphc", "numpy", "numba",
                                                 "numba-cuda", "cupy", "tensorflow", "jax")
                         if m.get(k))
    threads = " ".join(f"{k}={v}" for k, v in (m.get("thread_env") or {}).items())
    if threads:
        versions += f"; {threads}"
    flags = (" --quick" if report.quick else "") + (" --contended" if report.contention
                                                    else "")
    lines = [f"graphc bench{flags}: {m['date']}, "
             f"{m['cores']} cores ({m['cpu']}), {m['os']}"
             + (f", load average {m['load_average']}" if m.get("load_average") is not None
                else ""),
             f"versions: {versions}",
             f"numpy BLAS threads: {m.get('blas_threads') or 'unknown'}",
             f"cuda: {m.get('cuda') or 'unknown'}",
             contention_line(report.contention),
             f"numpy triad a = b + s*c on {report.triad_elements:,} float32: "
             f"{report.triad_gbps:.1f} GB/s"]
    if report.device_copy_gbps:
        lines.append(f"cuda device-to-device copy on {report.triad_elements:,} float32: "
                     f"{report.device_copy_gbps:.1f} GB/s (bytes read + written)")
    return lines


def contention_line(contention):
    """The header's line on CPU hogs: how many ran, where and when (or that none did)."""
    if not contention:
        return "contention: none (--contended adds CPU-hog processes on all but one core)"
    where = (f"pinned to core(s) {', '.join(map(str, contention['hog_cores']))}"
             if contention["pinned"] else "unpinned")
    return (f"contention: {hogs_text(contention['hog_processes'])} {where} "
            f"({contention['note']}), running during each workload's timed repeats only "
            f"(first calls and the triad ran without them); {contention['started']} "
            "started in all, each stopped after its workload")


def table_rows(report):
    """The table's cells, one row per (workload, mode), as lists of strings."""
    rows = []
    for w in report.workloads:
        if w.skipped:
            rows.append([w.name, w.size, "skipped", "", "", "", ""])
            continue
        for i, r in enumerate(w.results):
            rows.append([w.name if i == 0 else "", w.size if i == 0 else "", r.mode,
                         format_seconds(r.first_call_s), format_seconds(r.median_s),
                         format_speedup(r.speedup), "" if r.gbps is None else f"{r.gbps:.2f}"])
    return rows


def format_table(report, markdown=False):
    """The results as an aligned text table (or a Markdown table), with notes below."""
    rows = table_rows(report)
    heads = [c for c, _ in _COLUMNS]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(heads)]

    def line(cells):
        parts = [f"{c:{a}{w}}" for c, (_, a), w in zip(cells, _COLUMNS, widths)]
        return ("| " + " | ".join(parts) + " |") if markdown else "  ".join(parts).rstrip()

    rule = [("-" * (w - 1) + ":" if a == ">" and markdown else "-" * w)
            for (_, a), w in zip(_COLUMNS, widths)]
    rule_line = line(rule)
    out = [line(heads), rule_line] + [line(r) for r in rows]
    return "\n".join(out + [""] + note_lines(report)).rstrip() + "\n"


def note_lines(report):
    """Skips, left-out peers, and how to read the columns."""
    notes = []
    for w in report.workloads:
        if w.skipped:
            notes.append(f"- {w.name} skipped: {w.skipped}")
        notes.extend(f"- {w.name}: {n}" for n in w.notes)
        notes.extend(_device_fraction(w, report.device_copy_gbps))
    unused = [f"{name} ({why})" for name, why in report.peers.items() if why]
    if unused:
        notes.append(f"- peers not run: {', '.join(unused)}")
    notes.append(f"- median over repeats lasting >= {report.min_time_s:g} s per mode, the "
                 "modes of a workload interleaved round by round; first call includes "
                 "tracing and compiling; vs eager = eager median / median")
    notes.append("- GB/s = bytes a single fused pass reads and writes / median "
                 "(memory-bound workloads), to compare with the numpy triad above")
    if report.device_copy_gbps:
        notes.append("- cuda: inputs uploaded to the device before timing; each timed batch "
                     "ends with a device synchronization (every launch counted complete)")
    return notes


def _device_fraction(w, copy_gbps):
    """'- softmax: cuda at 71% of the device copy bandwidth' for memory-bound workloads."""
    r = next((r for r in w.results if r.mode == "cuda"), None)
    if not copy_gbps or r is None or r.gbps is None:
        return []
    return [f"- {w.name}: cuda at {100 * r.gbps / copy_gbps:.0f}% of the device copy "
            f"bandwidth ({r.gbps:.1f} of {copy_gbps:.1f} GB/s)"]


def write_json(report, path):
    """Write the full report (machine, triad, every mode's timings) as JSON."""
    with open(path, "w") as fh:
        json.dump(report.to_json(), fh, indent=2)
        fh.write("\n")


def plot_available():
    """None when matplotlib can be imported, else the message to show."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return PLOT_MISSING
    return None


def write_plot(report, path):
    """A grouped bar chart of each mode's speedup over eager, per workload (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    done = [w for w in report.workloads if not w.skipped]
    modes, peers = [], set()
    for w in done:
        modes.extend(r.mode for r in w.results if r.mode != "eager" and r.mode not in modes)
        peers.update(r.mode for r in w.results if r.kind == "peer")
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(done) + 2), 4.5))
    width = 0.8 / max(1, len(modes))
    for j, mode in enumerate(modes):
        xs, ys = [], []
        for i, w in enumerate(done):
            r = next((r for r in w.results if r.mode == mode), None)
            if r is not None:
                xs.append(i + (j - (len(modes) - 1) / 2) * width)
                ys.append(r.speedup)
        ax.bar(xs, ys, width, label=mode, hatch="//" if mode in peers else None)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(done)))
    ax.set_xticklabels([w.name for w in done], rotation=20, ha="right")
    ax.set_ylabel("speedup over eager graphc (x)")
    ax.set_title(f"graphc bench, {report.machine['date']}, {report.machine['cores']} cores")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
