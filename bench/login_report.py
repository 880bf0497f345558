#!/usr/bin/python3
"""bench/login_report.py BENCHDIR OUTDIR — the login row (bench/login_row.sh):
OUTDIR's raw data (hyperfine JSON, the modules' timing lines, strace -c
summaries) into OUTDIR/summary.json and the login section of
BENCHDIR/RESULTS.md (between the login markers, which bench/report.py and
bench/relay_report.py keep when they rewrite the file)."""
import glob, json, os, re, statistics, sys
from collections import defaultdict

from report_load import busy_note

bench, out_dir = sys.argv[1], sys.argv[2]
raw = os.path.join(out_dir, "raw")
machine = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out_dir, "machine.txt")) if "=" in l)
med = statistics.median
BEGIN, END = "<!-- login:begin -->", "<!-- login:end -->"
CONDS = [("nopolkit", "no polkitd (no system bus)"), ("polkit", "polkitd running")]
MODULES = ["kubehsm", "pam_p11", "floor", "floorx"]
LABEL = {"kubehsm": "pam_kubehsm", "pam_p11": "pam_p11", "floor": "pam_floor",
         "floorx": "pam_floor as designed (helper exec'd, polkit asked)"}
summary = {"machine": machine, "commands": {}, "targets": [], "syscalls": {}, "breakdown": {}}


cpu_rounds = {}   # cond -> [{module: user+system s, hyperfine's mean of the round}]


def load(cond):
    """{module: [times, s]} pooled, and [{module: median}] per round."""
    pooled, rounds = defaultdict(list), []
    cpu_rounds[cond] = []
    files = sorted(glob.glob(os.path.join(raw, f"login-{cond}.r*.json")),
                   key=lambda f: int(re.search(r"\.r(\d+)\.json$", f).group(1)))
    for f in files:
        rnd, cpu = {}, {}
        for r in json.load(open(f))["results"]:
            pooled[r["command"]].extend(r["times"])
            rnd[r["command"]] = med(r["times"])
            cpu[r["command"]] = r["user"] + r["system"]
        rounds.append(rnd)
        cpu_rounds[cond].append(cpu)
    return pooled, rounds


# ---- times and ratios ----------------------------------------------------------------
walls = {}
rows = []
for cond, cdesc in CONDS:
    pooled, rounds = load(cond)
    walls[cond] = {m: med(t) for m, t in pooled.items()}
    for m, t in pooled.items():
        summary["commands"][f"{cond}/{m}"] = {"runs": len(t), "median_ms": med(t) * 1e3,
                                              "min_ms": min(t) * 1e3, "max_ms": max(t) * 1e3,
                                              "rounds": len(rounds)}
    for a, b, target, what in (("kubehsm", "pam_p11", 1.2, "pam_kubehsm ÷ pam_p11"),
                               ("kubehsm", "floor", 1.1, "pam_kubehsm ÷ floor"),
                               ("floor", "pam_p11", None, "floor ÷ pam_p11 (reference)"),
                               ("kubehsm", "floorx", None, "pam_kubehsm ÷ the design's floor "
                                "(reference)"),
                               ("floorx", "floor", None, "design's floor ÷ floor (reference)"),
                               ("floorx", "pam_p11", None, "design's floor ÷ pam_p11 (reference)")):
        if a not in pooled or b not in pooled:
            continue
        r = med(pooled[a]) / med(pooled[b])
        per = [x[a] / x[b] for x in rounds if a in x and b in x and x[b] > 0] or [r]
        met = None if target is None else r <= target
        note = f"{med(pooled[a]) * 1e3:.2f} ms vs {med(pooled[b]) * 1e3:.2f} ms, {len(pooled[a])} runs each"
        rows.append((f"{what}, {cdesc}", f"{r:.2f}", f"{min(per):.2f}–{max(per):.2f}",
                     "" if target is None else f"≤ {target:g}",
                     "" if met is None else ("met" if met else "**not met**"), note))
        summary["targets"].append({"condition": cond, "ratio_of": f"{a}/{b}", "ratio": r,
                                   "round_min": min(per), "round_max": max(per),
                                   "target": target, "met": met,
                                   "median_ms_a": med(pooled[a]) * 1e3, "median_ms_b": med(pooled[b]) * 1e3})

# CPU time (user + system of every process of the login): what contention
# for the CPUs does not stretch, unlike the wall time.
cpu_rows = []
for cond, cdesc in CONDS:
    cr = cpu_rounds.get(cond, [])
    for a, b, what in (("kubehsm", "pam_p11", "pam_kubehsm ÷ pam_p11"), ("kubehsm", "floor", "pam_kubehsm ÷ floor"),
                       ("floor", "pam_p11", "floor ÷ pam_p11"),
                       ("kubehsm", "floorx", "pam_kubehsm ÷ the design's floor"),
                       ("floorx", "floor", "design's floor ÷ floor"),
                       ("floorx", "pam_p11", "design's floor ÷ pam_p11")):
        pr = [x[a] / x[b] for x in cr if a in x and b in x and x[b] > 0]
        if not pr:
            continue
        ma, mb = med([x[a] for x in cr if a in x]), med([x[b] for x in cr if b in x])
        cpu_rows.append((f"{what}, {cdesc}", f"{ma / mb:.2f}", f"{min(pr):.2f}–{max(pr):.2f}",
                         f"{ma * 1e3:.2f} ms vs {mb * 1e3:.2f} ms"))
        summary["targets"].append({"condition": cond, "cpu_ratio_of": f"{a}/{b}", "ratio": ma / mb,
                                   "round_min": min(pr), "round_max": max(pr),
                                   "cpu_ms_a": ma * 1e3, "cpu_ms_b": mb * 1e3})

# ---- syscalls ---------------------------------------------------------------------------


def strace_total(path):
    """(calls, errors) of an strace -c summary's total line."""
    for line in open(path):
        f = line.split()
        if f and f[-1] == "total":
            nums = f[:-1]
            # % time, seconds, usecs/call, calls[, errors]
            return int(nums[3]), int(nums[4]) if len(nums) > 4 else 0
    return None


sd = os.path.join(out_dir, "strace")
shell = [strace_total(p) for p in glob.glob(os.path.join(sd, "shell.*.txt"))]
shell_calls = med([s[0] for s in shell if s]) if any(shell) else 0
sys_rows = []
for m in MODULES:
    cells = []
    for cond, _ in CONDS:
        t = [strace_total(p) for p in glob.glob(os.path.join(sd, f"{m}-{cond}.*.txt"))]
        t = [x for x in t if x]
        if not t:
            cells.append("n/a")
            continue
        calls = med([x[0] for x in t]) - shell_calls
        errs = med([x[1] for x in t])
        summary["syscalls"][f"{cond}/{m}"] = {"calls": calls, "errors": errs, "logins": len(t),
                                              "shell_subtracted": shell_calls}
        cells.append(f"{calls:,.0f} ({errs:,.0f} failed)")
    sys_rows.append([LABEL[m]] + cells)

# ---- the modules' own breakdown (bench/TIMING.md) -----------------------------------------
# Lines: kh-timing v1 module=M pid=P phase=PH rc=RC start=US total=US step=US ...
logins = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))   # (cond, module) -> pid -> step -> µs
cond = None
tpath = os.path.join(out_dir, "timing.log")
bad = 0
for line in open(tpath) if os.path.exists(tpath) else []:
    if line.startswith("# cond="):
        cond = re.match(r"# cond=(\S+)", line).group(1)
        continue
    if not line.startswith("kh-timing v1 "):
        continue
    kv = dict(x.split("=", 1) for x in line.split()[2:] if "=" in x)
    mod = {"pam_kubehsm": "kubehsm", "pam_floor": "floor",
           "pam_floor_design": "floorx"}.get(kv.pop("module", ""), "?")
    pid, phase, rc = kv.pop("pid"), kv.pop("phase"), kv.pop("rc")
    kv.pop("start", None)
    if rc != "0":
        bad += 1
    acc = logins[(cond, mod)][pid]
    acc["in_module"] += int(kv.pop("total"))
    acc["phase_" + phase] += 0
    for k, v in kv.items():
        acc[k] += int(v)

STEPS = [("user", "user lookup (NSS)"), ("policy", "policy file: read, parse, check modes"),
         ("p11_load", "PKCS#11 module: load, C_Initialize, slots"),
         ("find", "find token + certificate"), ("validate", "validate certificate (chain, time, KU), map"),
         ("conv", "PIN conversation (pamtester: stdin)"), ("login", "C_Login"),
         ("challenge", "challenge: sign on token + verify"), ("identity", "session identity (groups, PEM)"),
         ("handoff", "hand-off (pam_set_data, stash put/take)"), ("p11_close", "PKCS#11 close/unload"),
         ("join", "join check (kubehsm login)"), ("polkit_load", "polkit plugin load (GLib, GIO, libpolkit)"),
         ("polkit", "polkit check (bus, CheckAuthorization)"), ("issuer", "issuer: PIN file, module, C_Login, key, chain"),
         ("keygen", "session key generation (EC P-256)"), ("mint", "mint session certificate (issuer signs)"),
         ("relay", "relay delivery"), ("store", "keyring store"), ("logout", "close_session: logout / revoke")]
cols = [(c, m) for m in ("kubehsm", "floor", "floorx") for c, _ in CONDS if logins.get((c, m))]
bd_rows = []
if cols:
    known = {k for k, _ in STEPS}
    extra = sorted({k for c in cols for l in logins[c].values() for k in l
                    if k not in known and k != "in_module" and not k.startswith("phase_")})
    for key, label in STEPS + [(k, k) for k in extra]:
        if not any(key in l for c in cols for l in logins[c].values()):
            continue
        # "–": the module never ran that step (a step absent from some logins counts 0 there)
        bd_rows.append([label] + [f"{med([l.get(key, 0) for l in logins[c].values()]) / 1e3:.2f}"
                                  if any(key in l for l in logins[c].values()) else "–" for c in cols])
    in_mod = {c: med([l["in_module"] for l in logins[c].values()]) / 1e3 for c in cols}
    steps_sum = {c: med([sum(v for k, v in l.items() if k != "in_module" and not k.startswith("phase_"))
                         for l in logins[c].values()]) / 1e3 for c in cols}
    bd_rows.append(["other (inside the entry points, in no step)"] +
                   [f"{in_mod[c] - steps_sum[c]:.2f}" for c in cols])
    bd_rows.append(["**inside the module's entry points**"] + [f"**{in_mod[c]:.2f}**" for c in cols])
    bd_rows.append(["login (pamtester, timed runs, timing off)"] +
                   [f"{walls.get(c[0], {}).get(c[1], float('nan')) * 1e3:.2f}" for c in cols])
    bd_rows.append(["outside: process, libpam, loading the PAM module and its libraries, exit"] +
                   [f"{walls.get(c[0], {}).get(c[1], float('nan')) * 1e3 - in_mod[c]:.2f}" for c in cols])
    bd_rows.append(["logins"] + [str(len(logins[c])) for c in cols])
    for c in cols:
        summary["breakdown"][f"{c[0]}/{c[1]}"] = {
            "logins": len(logins[c]), "in_module_ms": in_mod[c],
            "steps_ms": {k: med([l.get(k, 0) for l in logins[c].values()]) / 1e3
                         for k in {k for l in logins[c].values() for k in l if not k.startswith("phase_")}}}
summary["breakdown_failed_lines"] = bad
json.dump(summary, open(os.path.join(out_dir, "summary.json"), "w"), indent=1)

# ---- RESULTS.md's login section ------------------------------------------------------------
m = machine
quick = m.get("mode") == "quick"
o = [BEGIN, "## Login: pam_kubehsm, pam_p11 and the floor module (issues #8, #24)", "",
     f"Generated by `bench/login_row.sh`" + (" **--quick (few runs: a smoke test, not a measurement)**"
                                              if quick else "") +
     f" on {m.get('date')}, commit `{m.get('kubehsm_commit')}`, {m.get('cpu')} × {m.get('nproc')}, "
     f"loadavg {m.get('loadavg_start')} → {m.get('loadavg_end')}; pam_p11 {m.get('pam_p11')}, "
     f"SoftHSM {m.get('softhsm')}.", ""]
o += busy_note(m, "the per-round ratios",
                "the pooled same-run ratios, the CPU-time ratios and the system call counts are")
o += ["`pamtester SERVICE USER authenticate open_session close_session`, PIN on stdin, as root, "
     "through pam_kubehsm (policy as shipped: `polkit.mode` \"if-available\"), Debian's pam_p11 "
     "(authentication only) and `bench/floor/pam_floor.c` (pam_kubehsm's whole job with raw "
     "PKCS#11: certificate validation, C_Login, challenge, issuer login and C_Sign, EC key, one "
     "`add_key` with timeout, chown and setperm, linked by a vfork child as the user, invalidated "
     "at close), on the same SoftHSM token of the same user; and *the design's floor*: the same "
     "floor module doing what pam_kubehsm's design and shipped policy also ask — its two keyring "
     "calls (link at open, invalidate at close) made by a program of its own, "
     "`bench/floor/keyring_floor.c`, which becomes the user and makes the one call, spawned and "
     "waited for with a deadline as pam_kubehsm spawns `kubehsm-keyops`; and, when a system bus "
     "is there, one CheckAuthorization of `org.kubehsm.cache-credentials` with pam_kubehsm's "
     "details through libpolkit-gobject-1's synchronous API (`bench/floor/floor_polkit.c`, "
     "loaded only then).  Conditions: *no polkitd* — no system "
     "bus at all (an empty `/run/dbus`); *polkitd running* — a system bus at "
     "`/run/dbus/system_bus_socket` with polkitd and the kubehsm actions.  "
     f"{m.get('rounds')} rounds × {m.get('runs_per_round')} runs per module and condition "
     f"(+{m.get('warmup')} warm-ups), one hyperfine invocation per condition and round, conditions "
     "and modules rotated every round.  Ratio = median of all runs ÷ median of all runs; round "
     "min–max = the spread of the per-round ratios.", "",
     "| ratio | measured | round min–max | target | met? | medians |", "|---|---|---|---|---|---|"]
o += ["| " + " | ".join(r) + " |" for r in rows]
if cpu_rows:
    o += ["", "CPU time of the same runs (user + system of every process of the login, hyperfine's "
          "mean per round; medians of the rounds) — what contention for the CPUs does not stretch:", "",
          "| ratio | CPU time | round min–max | medians |", "|---|---|---|---|"]
    o += ["| " + " | ".join(r) + " |" for r in cpu_rows]
wn, wp = walls.get("nopolkit", {}), walls.get("polkit", {})


def reach(without, with_):
    """What the design's floor leaves of the ≤ 1.2 target, per condition."""
    if without > 1.2 and with_ > 1.2:
        return "the ≤ 1.2 target is out of reach of this design on this machine."
    if with_ > 1.2:
        return (f"with polkitd the ≤ 1.2 target is out of reach of this design on this machine; "
                f"without it the design's floor leaves pam_kubehsm {1.2 / without:.2f}× of its "
                "own to spend.")
    return "the design's floor leaves room under ≤ 1.2 in both conditions."
if all(k in w for w in (wn, wp) for k in ("kubehsm", "floor", "floorx", "pam_p11")):
    def ms(w, a, b):
        return (w[a] - w[b]) * 1e3
    o += ["", "**What stops the login targets.** The floor module makes its two keyring calls as "
          "the user in a vfork child on the module's own memory, the cheapest way and one "
          "pam_kubehsm's design rules out (DESIGN.md: user-side keyring work runs in a child that "
          "fully becomes the user; `cache/kh_keyops.c`).  A vfork parent sleeps until its child "
          "executes or exits, so a user who stops the child (theirs to signal once it has become "
          "them) would hold root's process, a login, `kubehsm admin revoke` or the relay's forget, "
          "for ever; a CLONE_VM child that root can wait for with a deadline shares root's memory "
          "and thread-local state (`errno`) with a process the user may signal, and valgrind "
          "cannot run it; a fork copies root's memory into it.  pam_kubehsm therefore executes a "
          "helper that carries nothing of root's, at open and at close.  And the floor module asks "
          "no one, while the policy as shipped asks polkit whenever polkitd runs, through "
          "libpolkit-gobject-1 (GLib, GIO) and polkitd's own answer.  The design's floor does both: "
          f"it costs {ms(wn, 'floorx', 'floor'):.2f} ms per login more than the floor without polkitd "
          f"(the two helper executions) and {ms(wp, 'floorx', 'floor'):.2f} ms more with it, and is "
          f"{wn['floorx'] / wn['pam_p11']:.2f}× and {wp['floorx'] / wp['pam_p11']:.2f}× pam_p11 "
          "before pam_kubehsm does anything of its own: "
          + reach(wn['floorx'] / wn['pam_p11'], wp['floorx'] / wp['pam_p11']) +
          "  Beyond the design's floor pam_kubehsm costs "
          f"{ms(wn, 'kubehsm', 'floorx'):.2f} ms ({wn['kubehsm'] / wn['floorx']:.2f}×) and "
          f"{ms(wp, 'kubehsm', 'floorx'):.2f} ms ({wp['kubehsm'] / wp['floorx']:.2f}×) per login: "
          "that part is pam_kubehsm's own, and the breakdown below shows where: libp11, which "
          "asks for one attribute per call where the floor asks for all of an object's in one, "
          "and looks up the public key of each private key it lists (on SoftHSM every call "
          "re-reads the token's generation file under a lock: finding the certificate, the "
          "challenge and the issuer); the hand-off stash for a session step in another process; "
          "the uid's index, its lock and the ended marker around the keyring calls; the policy, "
          "read once per login; and a larger module with more libraries to load (*outside*).  "
          "Its polkit check costs what the library's own does (the two polkit rows of each)."]
o += ["", f"### System calls per login (`strace -c -f`, median of {m.get('strace_logins')} logins, "
      "the starting shell's subtracted)", "",
      "| module | " + " | ".join(d for _, d in CONDS) + " |", "|---|" + "---|" * len(CONDS)]
o += ["| " + " | ".join(r) + " |" for r in sys_rows]
o += ["", "pam_p11 looks at the tokens in slot order until it finds the user's certificate; SoftHSM's "
      "slot order is random from run to run (its token directories' names).  This run: "
      + ("not recorded." if "first_slot" not in m else
         "the user's token first." if m.get("first_slot") == "user" else
         "the issuer's token first, so pam_p11 also searched it (a few hundred system calls more "
         "than with the user's first).")]
o += ["", "### Breakdown, from the modules themselves (ms, medians)", "",
      "Each module's entry points time their own steps when its service line carries the option "
      "`timing=FILE` (specification: `bench/TIMING.md`); those logins run apart from the timed ones "
      f"({m.get('runs_per_round')} per module, condition and round).  Steps of the same name in "
      "auth, open_session and close_session add up.  *Outside* = the timed login's median less "
      "the time inside the entry points."]
if m.get("kubehsm_timing") != "1":
    o += ["", "**pam_kubehsm does not implement the timing hook yet** (it refuses the option): "
          "only the floor's column is shown until it does."]
if bd_rows:
    o += ["", "| step | " + " | ".join(f"{LABEL[mm]}, {dict(CONDS)[c]}" for c, mm in cols) + " |",
          "|---|" + "---|" * len(cols)]
    o += ["| " + " | ".join(r) + " |" for r in bd_rows]
if bad:
    o += ["", f"({bad} timing lines reported a failing entry point.)"]
o += ["", f"Raw data (not in the repository): `{out_dir}/` — hyperfine JSON per round in `raw/`, "
      "`timing.log`, `strace/`, `summary.json`.", "", END]
path = os.path.join(bench, "RESULTS.md")
text = open(path).read() if os.path.exists(path) else ""
if BEGIN in text and END in text:
    text = text[:text.index(BEGIN)] + "\n".join(o) + text[text.index(END) + len(END):]
else:
    text = text.rstrip("\n") + "\n\n" + "\n".join(o) + "\n"
open(path, "w").write(text)
print("\n".join(o[o.index("| ratio | measured | round min–max | target | met? | medians |"):-1]))
