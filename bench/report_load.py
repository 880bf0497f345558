"""bench/report_load.py — the note a report adds when the machine was busy.

Shared by bench/login_report.py and bench/tokens_report.py: both read the
start and end load averages and the CPU count from their machine.txt
(login_row.sh and tokens.sh write them the same way)."""


def busy_note(m, spread, read):
    """The note's lines (empty when the 1-minute load stayed within the CPU
    count).  m: machine.txt as a dict; spread: what the load spreads ("the
    per-round ratios"); read: which figures to read instead."""
    try:
        l0, l1 = (float(m.get(k, "0").split()[0]) for k in ("loadavg_start", "loadavg_end"))
        ncpu = int(m.get("nproc", "1"))
    except ValueError:
        l0, l1, ncpu = 0.0, 0.0, 1
    if max(l0, l1) <= ncpu:
        return []
    return [f"**The machine was busy with other work (1-minute load average {l0:g} at the start, "
            f"{l1:g} at the end, on {ncpu} CPUs): absolute times are inflated and {spread} "
            f"spread; {read} the figures to read.**", ""]
