#!/usr/bin/python3
"""bench/report.py BENCHDIR RESDIR — turn the raw data in RESDIR (outside the
source tree, see bench/run.sh) into RESDIR/summary.{json,csv},
RESDIR/latency.dat (for latency.gp) and BENCHDIR/RESULTS.md.  Called by
bench/run.sh."""
import csv, glob, json, os, re, statistics, sys
from collections import defaultdict

bench, res = sys.argv[1], sys.argv[2]
raw = os.path.join(res, "raw")
machine = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(res, "machine.txt")) if "=" in l)


def load(name):
    """{command: [all times, s]}, [ {command: median} per round ]."""
    pooled, rounds = defaultdict(list), []
    files = sorted(glob.glob(os.path.join(raw, name + ".r*.json")),
                   key=lambda f: int(re.search(r"\.r(\d+)\.json$", f).group(1)))
    for f in files:
        rnd = {}
        for r in json.load(open(f))["results"]:
            pooled[r["command"]].extend(r["times"])
            rnd[r["command"]] = statistics.median(r["times"])
        rounds.append(rnd)
    return pooled, rounds


med = statistics.median
ms = lambda s: s * 1e3
summary = {"machine": machine, "commands": {}, "targets": []}
rows = []


def describe(name):
    pooled, rounds = load(name)
    for c, t in pooled.items():
        summary["commands"][f"{name}/{c}"] = {
            "runs": len(t), "median_ms": ms(med(t)), "min_ms": ms(min(t)), "max_ms": ms(max(t)),
            "rounds": len(rounds)}
    return pooled, rounds


def ratio(name, a, b, target, op, what, note=""):
    """Median ratio a/b over all runs, min-max of the per-round ratios.
    target None: a row for reference, with no target."""
    pooled, rounds = load(name)
    tstr = target_str(op, target) if target is not None else "—"
    if a not in pooled or b not in pooled:
        rows.append((what, "not measured", "", tstr, "n/a", note))
        return
    r = med(pooled[a]) / med(pooled[b])
    # A round whose baseline median is 0 (hyperfine subtracting more shell
    # start-up than a disturbed round took) has no ratio; the pooled one stands.
    per = [x[a] / x[b] for x in rounds if a in x and b in x and x[b] > 0] or [r]
    met = None if target is None else r <= target if op == "<=" else r >= target
    rows.append((what, f"{r:.2f}", f"{min(per):.2f}–{max(per):.2f}", tstr,
                 "reference" if met is None else "met" if met else "**not met**", note))
    summary["targets"].append({"target": what, "ratio": r, "round_min": min(per), "round_max": max(per),
                               "op": op, "target_value": target, "met": met,
                               "runs_a": len(pooled[a]), "runs_b": len(pooled[b]), "note": note})


def csv_rows(name):
    """The rows of a CSV file of the run, [] when this run did not make it."""
    path = os.path.join(res, name)
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


def target_str(op, t):
    return f"{'≤' if op == '<=' else '≥'} {t:g}"


def plain(what, value, target, met, note=""):
    rows.append((what, value, "", target, "met" if met else "**not met**", note))
    summary["targets"].append({"target": what, "value": value, "target_value": target, "met": met, "note": note})


for n in ("exec", "kubectl", "sign", "signtoken"):
    describe(n)

c = summary["commands"]
fmt = lambda k: f"{c[k]['median_ms']:.2f} ms" if k in c else "n/a"

# 1. exec plugin
ratio("exec", "kubehsm", "floor", 0.9, "<=", "1a. exec warm path: kubehsm exec / exec floor (dynamic C program)",
      f"{fmt('exec/kubehsm')} vs {fmt('exec/floor')}")
ratio("exec", "gke", "kubehsm", 6, ">=", "1b. exec warm path: gke-gcloud-auth-plugin (cached) / kubehsm exec",
      f"{fmt('exec/gke')} vs {fmt('exec/kubehsm')}")
ratio("exec", "kubehsm", "floor-static", None, "<=",
      "1d. kubehsm exec / the exec floor linked static-pie, as kubehsm is: the floor of the design, for reference",
      f"{fmt('exec/kubehsm')} vs {fmt('exec/floor-static')}: kubehsm's own work beyond starting a static-pie "
      "program that reads and writes the answer")
ratio("exec", "floor-static", "floor", None, "<=",
      "1e. exec floor linked static-pie / exec floor (dynamic), for reference",
      f"{fmt('exec/floor-static')} vs {fmt('exec/floor')}: what leaving out the dynamic loader buys on this "
      "machine, the most a static program can gain on 1a")
rss = {r["command"]: int(r["max_rss_kib"]) for r in csv_rows("rss.csv")}
if "kubehsm" in rss:
    plain("1c. exec peak RSS (max of 10 runs)", f"{rss['kubehsm'] / 1024:.2f} MiB", "≤ 1.5 MiB",
          rss["kubehsm"] <= 1.5 * 1024,
          f"floor {rss.get('floor', 0) / 1024:.2f} MiB, gke {rss.get('gke', 0) / 1024:.1f} MiB, "
          f"kubehsm sign {rss.get('kubehsm-sign', 0) / 1024:.1f} MiB")
else:
    rows.append(("1c. exec peak RSS (max of 10 runs)", "not measured", "", "≤ 1.5 MiB", "n/a", ""))
# 2. kubectl
ratio("kubectl", "exec-plugin", "static-cert", 1.05, "<=",
      "2. kubectl.1.33 get --raw /version: exec plugin / static cert",
      f"{fmt('kubectl/exec-plugin')} vs {fmt('kubectl/static-cert')}")
# 3. signer
ratio("sign", "kubehsm-sign", "sign-floor", 1.1, "<=",
      "3a. kubehsm sign (session key) / sign floor (same libcrypto start-up, key load and EVP sign)",
      f"{fmt('sign/kubehsm-sign')} vs {fmt('sign/sign-floor')}")
ratio("sign", "kubehsm-sign", "hop-sign-floor", None, "<=",
      "3e. kubehsm sign / (static-pie hop + sign floor): the floor of the design, for reference",
      f"{fmt('sign/kubehsm-sign')} vs {fmt('sign/hop-sign-floor')}: the sign floor started through a "
      "static-pie program that executes it, as the front end executes kubehsm-tool")
ratio("sign", "tool-sign", "sign-floor", None, "<=",
      "3f. kubehsm-tool sign (without the front end) / sign floor, for reference",
      f"{fmt('sign/tool-sign')} vs {fmt('sign/sign-floor')}: kubehsm's own work beyond the floor")
ratio("sign", "kubehsm-sign", "exec-floor", None, "<=",
      "3b. kubehsm sign (session key) / exec floor, for reference",
      f"{fmt('sign/kubehsm-sign')} vs {fmt('sign/exec-floor')}: a process that writes a pre-rendered answer")
ratio("sign", "ssl-floor", "exec-floor", None, "<=",
      "3d. OpenSSL floor (libcrypto loaded and initialised + one write) / exec floor, for reference",
      f"{fmt('sign/ssl-floor')} vs {fmt('sign/exec-floor')}: what any OpenSSL-based program pays before it signs")
ratio("signtoken", "kubehsm-sign-token", "p11-floor", 1.2, "<=",
      "3c. kubehsm sign --key token (SoftHSM) / libp11 floor",
      f"{fmt('signtoken/kubehsm-sign-token')} vs {fmt('signtoken/p11-floor')}")
# 4. login: bench/login_row.sh, its own section of RESULTS.md
rows.append(("4. login (pamtester auth+open+close): pam_kubehsm / pam_p11 and / floor, "
             "with and without polkitd", "see below", "", "≤ 1.2 / ≤ 1.1", "",
             "the login section (bench/login_row.sh), breakdown from the modules themselves"))
# 5. load
load_rows = csv_rows("load.csv")
if load_rows:
    tp = defaultdict(list)
    fails = defaultdict(int)
    for r in load_rows:
        tp[r["which"]].append(float(r["runs_per_s"]))
        fails[r["which"]] += int(r["fail"])
    per_round = defaultdict(dict)
    for r in load_rows:
        per_round[r["round"]][r["which"]] = float(r["runs_per_s"])
    pr = [x["kubehsm"] / x["floor"] for x in per_round.values() if "kubehsm" in x and "floor" in x]
    rt = med(tp["kubehsm"]) / med(tp["floor"])
    rows.append(("5a. load throughput: kubehsm / floor (20 users × 50 concurrent)", f"{rt:.2f}",
                 f"{min(pr):.2f}–{max(pr):.2f}", "≥ 0.8", "met" if rt >= 0.8 else "**not met**",
                 f"{med(tp['kubehsm']):.0f} vs {med(tp['floor']):.0f} runs/s"))
    summary["targets"].append({"target": "5a. load throughput", "ratio": rt, "round_min": min(pr),
                               "round_max": max(pr), "met": rt >= 0.8,
                               "kubehsm_runs_per_s": med(tp["kubehsm"]), "floor_runs_per_s": med(tp["floor"])})
    plain("5b. load failures (kubehsm)", str(fails["kubehsm"]), "0", fails["kubehsm"] == 0,
          f"floor failures {fails['floor']}; {sum(int(r['runs']) for r in load_rows if r['which'] == 'kubehsm')} kubehsm runs")
kr = csv_rows("keyring.csv")
if kr:
    mx = max(int(r["qnbytes"]) for r in kr)
    rec = max(int(r["record_bytes"] or 0) for r in kr)
    plain("5c. keyring bytes per user (quota qnbytes, max over users)", f"{mx} B ({mx / 1024:.2f} KiB)",
          "≤ 6 KiB", mx <= 6 * 1024, f"record payload {rec} B; keys per user {max(int(r['qnkeys']) for r in kr)}")

# Latency data for the plot: each command's runs, sorted (an empirical CDF).
pooled, _ = load("exec")
with open(os.path.join(res, "latency.dat"), "w") as f:
    for name in ("floor", "kubehsm", "gke"):
        t = sorted(pooled.get(name, []))
        f.write(f"# {name}\n")
        for i, x in enumerate(t):
            f.write(f"{ms(x):.4f} {(i + 1) / len(t):.4f}\n")
        f.write("\n\n")

json.dump(summary, open(os.path.join(res, "summary.json"), "w"), indent=1)
with open(os.path.join(res, "summary.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["target", "measured", "round_min_max", "target_value", "met", "note"])
    w.writerows([[re.sub(r"\*\*", "", x) for x in r] for r in rows])
with open(os.path.join(res, "commands.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["comparison/command", "runs", "median_ms", "min_ms", "max_ms"])
    for k, v in c.items():
        w.writerow([k, v["runs"], f"{v['median_ms']:.3f}", f"{v['min_ms']:.3f}", f"{v['max_ms']:.3f}"])

m = machine
quick = m.get("mode") == "quick"
out = []
out.append("# kubehsm benchmark results (issue #8)\n")
out.append("Generated by `bench/run.sh`" + (" **--quick (smoke test: few runs, numbers are noise-dominated — "
           "not a measurement)**" if quick else "") + f" on {m.get('date')}. Do not edit by hand: re-run.\n")
out.append("## Machine\n")
for k in ("cpu", "nproc", "memory", "kernel", "os", "loadavg_start", "loadavg_end", "hyperfine",
          "kubehsm_commit", "kubehsm_libs", "exec_credential_bytes", "sign_response_bytes"):
    out.append(f"- {k}: `{m.get(k, '?')}`")
out.append(f"- method: {m.get('rounds')} rounds × {m.get('runs_per_round')} runs per command "
           f"({m.get('fast_runs_per_round', m.get('runs_per_round'))} for exec and sign) "
           f"(+{m.get('warmup')} warm-ups per round); commands of a comparison run in one hyperfine "
           "invocation per round, their order rotated every round (A B, B A, …)\n")
out.append("## Targets\n")
out.append("Ratio = median of all runs of the subject / median of all runs of the baseline, measured "
           "interleaved in the same invocation; *round min–max* = the lowest and highest ratio of the "
           "per-round medians.\n")
out.append("| target | measured | round min–max | target | met? | medians / notes |")
out.append("|---|---|---|---|---|---|")
for r in rows:
    out.append("| " + " | ".join(r) + " |")
out.append("\nTarget 3's floor is `sign_floor` (bench/floor/sign_floor.c): one process start with "
           "libcrypto, the same session key loaded from a file and the same digest signed — with "
           "exactly the libcrypto start-up `kubehsm sign` pays (the key decoded the way lib/kh_pkey.c "
           "decodes it, PEM to DER and the provider decoder for a PKCS#8 PrivateKeyInfo of its own type, "
           "not PEM_read_PrivateKey, which sets up the decoders of every key type; signed the way "
           "lib/kh_sign.c signs).  What kubehsm costs beyond it is its own: the front end that hands "
           "`sign` to kubehsm-tool, the keyring read, the record, the policy and the JSON.  Rows 3b and "
           "3d (no target) show what a process that only writes the answer costs, and what loading "
           "and initialising libcrypto alone costs; 3e and 3f split 3a: the price of the static front end "
           "in front of `sign` (a static-pie program that only executes the next one, `hop_floor`), and "
           "what kubehsm-tool does beyond the floor.\n")
out.append("\n## All commands\n")
out.append("| comparison/command | runs | median ms | min ms | max ms |")
out.append("|---|---|---|---|---|")
for k, v in c.items():
    out.append(f"| {k} | {v['runs']} | {v['median_ms']:.2f} | {v['min_ms']:.2f} | {v['max_ms']:.2f} |")
out.append("\n![exec plugin latency](latency.png)\n")
out.append(f"Raw data (not in the repository): `{res}/` (hyperfine JSON per round in `raw/`, `rss.csv`, "
           "`load.csv`, `keyring.csv`, `summary.json`, `summary.csv`, `commands.csv`, "
           "`latency.dat`).")
# Keep the sections other scripts wrote in their own runs (relay_report.py,
# login_report.py), between their markers.
path = os.path.join(bench, "RESULTS.md")
prev = open(path).read() if os.path.exists(path) else ""
kept = [m.group(0) for m in re.finditer(r"<!-- (\w+):begin -->.*?<!-- \1:end -->", prev, re.S)]
open(path, "w").write("\n".join(out) + "\n" + "".join("\n" + k + "\n" for k in kept))
print("\n".join(out[out.index("## Targets\n"):]))
