#!/usr/bin/python3
"""bench/issuer_report.py BENCH_DIR NAME=ISSUER_OUT... [--rush NAME=RUSH_OUT...]

Prints the issue #30 tables (markdown) from the raw data of bench/issuer.sh
(one directory per build measured, e.g. before=... after=...) and of
bench/rush.sh.  Ratios are of medians of all runs of one invocation's
commands (same run, interleaved); round min-max is the spread of the
per-round ratios.
"""
import collections
import glob
import json
import os
import statistics
import sys

SETUP = {"C_Initialize", "C_Finalize", "C_GetInfo", "C_GetSlotList", "C_GetSlotInfo",
         "C_GetTokenInfo", "C_OpenSession", "C_CloseSession", "C_CloseAllSessions",
         "C_Login", "C_Logout", "C_GetMechanismList", "C_GetMechanismInfo",
         "C_GetSessionInfo"}
LOOKUP = {"C_FindObjectsInit", "C_FindObjects", "C_FindObjectsFinal",
          "C_GetAttributeValue"}
SIGN = {"C_SignInit", "C_Sign", "C_SignUpdate", "C_SignFinal"}


def kv(line):
    return dict(x.split("=", 1) for x in line.split() if "=" in x)


def machine(d):
    return dict(line.rstrip("\n").split("=", 1)
                for line in open(os.path.join(d, "machine.txt")) if "=" in line)


def calls_per_login(d):
    """{(module, size): {label: (calls, {fn: count})}} from calls.txt (the
    first login's; the script makes three and they agree)."""
    per = collections.defaultdict(lambda: collections.defaultdict(dict))
    spread = collections.defaultdict(set)
    for line in open(os.path.join(d, "calls.txt")):
        f = kv(line)
        key = (f["module"], int(f["size"]))
        fns = {k: int(v.split("/")[0]) for k, v in f.items() if k.startswith("C_")}
        per[key][f["pid"]][f["label"]] = (int(f["calls"]), fns)
    out = {}
    for key, pids in per.items():
        logins = list(pids.values())
        for lg in logins:
            spread[key].add(sum(c for c, _ in lg.values()))
        out[key] = logins[0]
    return out, spread


def hyperfine_runs(d, cond):
    """{command: [times ms]} pooled, and per-round {command: median}."""
    pooled = collections.defaultdict(list)
    rounds = []
    for path in sorted(glob.glob(os.path.join(d, "raw", cond + ".r*.json"))):
        res = json.load(open(path))["results"]
        rm = {}
        for r in res:
            pooled[r["command"]].extend(t * 1000 for t in r["times"])
            rm[r["command"]] = statistics.median(r["times"]) * 1000
        rounds.append(rm)
    return pooled, rounds


def ratio(pooled, rounds, a, b):
    if a not in pooled or b not in pooled:
        return None
    m = statistics.median(pooled[a]) / statistics.median(pooled[b])
    rr = [r[a] / r[b] for r in rounds if a in r and b in r]
    return m, min(rr), max(rr), statistics.median(pooled[a]), statistics.median(pooled[b]), \
        len(pooled[a])


def per_call_us(d, cond, label):
    """Mean wall time per call (delay included) over the timed runs."""
    if label == "users":
        cond = "users-" + cond.split("-")[-1]
    path = os.path.join(d, "raw", "timed-calls-%s.log" % cond)
    calls = us = 0
    if not os.path.exists(path):
        return None
    for line in open(path):
        f = kv(line)
        if f.get("label") == label:
            calls += int(f["calls"])
            us += int(f["us"])
    return us / calls if calls else None


def fmt_int(n):
    return "{:,}".format(n)


def top_fns(fns, k=3):
    items = sorted(fns.items(), key=lambda x: -x[1])[:k]
    return ", ".join("%s %s" % (n, fmt_int(c)) for n, c in items)


def section_counts(runs):
    print("| build | module | other objects on the issuer's token | calls to the users' module "
          "| calls to the issuer's module | of which | per login, all |")
    print("|---|---|---|---|---|---|---|")
    for name, d in runs:
        calls, spread = calls_per_login(d)
        for (m, n) in sorted(calls, key=lambda k: (k[0] != "kubehsm", k[1])):
            lg = calls[(m, n)]
            u = lg.get("users", (0, {}))
            i = lg.get("issuer", (0, {}))
            s = spread[(m, n)]
            note = "" if len(s) == 1 else " (%s–%s over 3 logins)" % (min(s), max(s))
            print("| %s | %s | %s | %s | %s | %s | %s%s |" % (
                name, "pam_kubehsm" if m == "kubehsm" else "floor", fmt_int(n),
                fmt_int(u[0]), fmt_int(i[0]), top_fns(i[1]), fmt_int(u[0] + i[0]), note))


def section_timing(runs):
    print("| build | other objects | delay per call | pam_kubehsm | floor | pam_kubehsm ÷ floor "
          "| round min–max | target | met? | mean time per call, delay included (users / issuer) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, d in runs:
        mc = machine(d)
        untimed = {}
        p = os.path.join(d, "untimed.txt")
        if os.path.exists(p):
            for line in open(p):
                m, c, calls, ms0 = line.split()
                untimed[(m, c)] = (int(calls), int(ms0))
        for delay in mc["delays"].split():
            for n in mc["sizes"].split():
                cond = "n%s-d%s" % (n, delay)
                pooled, rounds = hyperfine_runs(d, cond)
                r = ratio(pooled, rounds, "kubehsm", "floor")
                pc = "%s / %s µs" % tuple(
                    ("%.0f" % v) if v is not None else "–"
                    for v in (per_call_us(d, cond, "users"), per_call_us(d, cond, "issuer")))
                target = "≤ 1.2" if delay != "0" else "—"
                if r is None:
                    calls, ms0 = untimed.get(("kubehsm", cond), (0, 0))
                    fl = statistics.median(pooled["floor"]) if "floor" in pooled else None
                    est = ms0 + calls * int(delay) / 1000
                    print("| %s | %s | %s ms | not timed: ≈ %s ms (%s calls; %s ms at delay 0) "
                          "| %s | ≈ %s | | %s | %s | %s |" % (
                              name, fmt_int(int(n)), int(delay) / 1000, fmt_int(int(est)),
                              fmt_int(calls), fmt_int(ms0),
                              "%.0f ms" % fl if fl else "–",
                              "%.0f" % (est / fl) if fl else "–", target,
                              "**not met**" if delay != "0" else "", pc))
                    continue
                m, lo, hi, a, b, nruns = r
                met = "" if delay == "0" else ("met" if m <= 1.2 else "**not met**")
                print("| %s | %s | %s ms | %.0f ms | %.0f ms | %.2f | %.2f–%.2f | %s | %s | %s |" % (
                    name, fmt_int(int(n)), int(delay) / 1000, a, b, m, lo, hi, target, met, pc))


def net_split(d):
    """{module: {setup, lookup, sign, other, calls}} medians (ms) of the issuer's
    share per login over the logins counted alone."""
    per = collections.defaultdict(lambda: collections.defaultdict(list))
    p = os.path.join(d, "net-calls.txt")
    if not os.path.exists(p):
        return None
    for line in open(p):
        f = kv(line)
        acc = collections.Counter()
        cnt = collections.Counter()
        for k, v in f.items():
            if not k.startswith("C_"):
                continue
            c, us = (int(x) for x in v.split("/"))
            g = "setup" if k in SETUP else "lookup" if k in LOOKUP else "sign" if k in SIGN \
                else "other"
            acc[g] += us
            cnt[g] += c
        for g in ("setup", "lookup", "sign", "other"):
            per[f["module"]][g].append(acc[g] / 1000)
            per[f["module"]][g + "_calls"].append(cnt[g])
        per[f["module"]]["calls"].append(int(f["calls"]))
        per[f["module"]]["total"].append(int(f["us"]) / 1000)
    return {m: {k: statistics.median(v) for k, v in g.items()} for m, g in per.items()}


def section_net(runs):
    print("| build | module | login, median | ÷ floor (round min–max) | issuer calls | "
          "set-up (C_Initialize … C_Login, C_Logout, C_Finalize) | lookup | signature | "
          "issuer total |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, d in runs:
        split = net_split(d)
        if split is None:
            continue
        pooled, rounds = hyperfine_runs(d, "net")
        r = ratio(pooled, rounds, "kubehsm", "floor")
        for m in ("kubehsm", "floor"):
            s = split.get(m)
            if s is None:
                continue
            med = statistics.median(pooled[m]) if m in pooled else float("nan")
            rr = "%.2f (%.2f–%.2f)" % r[:3] if (r and m == "kubehsm") else "1"
            print("| %s | %s | %.0f ms | %s | %d | %.1f ms (%d calls) | %.1f ms (%d) | "
                  "%.1f ms (%d) | %.1f ms |" % (
                      name, "pam_kubehsm" if m == "kubehsm" else "floor", med, rr, s["calls"],
                      s["setup"], s["setup_calls"], s["lookup"], s["lookup_calls"], s["sign"],
                      s["sign_calls"], s["total"]))


def section_rush(rushes):
    print("| build | logins | lost | lone login p50 | rush p50 | rush p99 | p50 ÷ lone | "
          "p99 ÷ lone | where the lost ones failed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, d in rushes:
        s = kv(open(os.path.join(d, "summary.txt")).read())
        whys = "%s at authenticate (the user's token), %s at open_session (the issuer)" % (
            s.get("lost_auth", "?"), s.get("lost_open_session", "?"))
        lone = float(s["lone_p50_ms"])
        if "rush_p50_ms" in s:
            p50, p99 = float(s["rush_p50_ms"]), float(s["rush_p99_ms"])
            print("| %s | %s | %s | %.0f ms | %.0f ms | %.0f ms | %.1f | %.1f | %s |" % (
                name, s["rush_n"], s["rush_lost"], lone, p50, p99, p50 / lone, p99 / lone, whys))


def main():
    args = sys.argv[2:]
    runs, rushes = [], []
    cur = runs
    for a in args:
        if a == "--rush":
            cur = rushes
            continue
        name, d = a.split("=", 1)
        cur.append((name, d))
    if runs:
        print("### PKCS#11 calls per login (delay 0; three logins each)\n")
        section_counts(runs)
        print("\n### Login time, a delay per PKCS#11 call\n")
        section_timing(runs)
        print("\n### The network HSM: the issuer's token over p11-kit RPC, 1 ms round trip\n")
        section_net(runs)
    if rushes:
        print("\n### The morning rush\n")
        section_rush(rushes)


if __name__ == "__main__":
    main()
