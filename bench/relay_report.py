#!/usr/bin/python3
"""bench/relay_report.py BENCHDIR RESDIR — turn bench/relay.sh's raw data
(RESDIR, outside the tree) into summary.json there and the kubehsm-relayd
section of BENCHDIR/RESULTS.md (between the relay markers, which
bench/report.py keeps when it rewrites the file).  Called by bench/relay.sh."""
import csv, glob, json, os, re, statistics, sys
from collections import defaultdict

bench, res = sys.argv[1], sys.argv[2]
raw = os.path.join(res, "raw")
machine = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(res, "machine.txt")) if "=" in l)
med = statistics.median
BEGIN, END = "<!-- relay:begin -->", "<!-- relay:end -->"
rows, targets = [], []


def row(what, measured, spread, target, met, note):
    rows.append((what, measured, spread, target,
                 "—" if met is None else "met" if met else "**not met**", note))
    targets.append({"target": what, "measured": measured, "round_min_max": spread,
                    "goal": target, "met": met, "note": note})


def span(xs, fmt):
    return (fmt + "–" + fmt) % (min(xs), max(xs)) if xs else ""


# 1. kubectl: relay / static certificate
pooled, rounds = defaultdict(list), []
for f in sorted(glob.glob(os.path.join(raw, "kubectl.r*.json")),
                key=lambda f: int(re.search(r"\.r(\d+)\.json$", f).group(1))):
    rnd = {}
    for r in json.load(open(f))["results"]:
        pooled[r["command"]].extend(r["times"])
        rnd[r["command"]] = med(r["times"])
    rounds.append(rnd)
a, b = med(pooled["relay"]), med(pooled["static-cert"])
row("R1. kubectl.1.33 get --raw /version: through the relay / static certificate straight to the server",
    f"{a / b:.2f}", span([x["relay"] / x["static-cert"] for x in rounds], "%.2f"), "≤ 0.95",
    a / b <= 0.95, f"{a * 1e3:.1f} ms vs {b * 1e3:.1f} ms, {len(pooled['relay'])} runs each")

# 2. per request, kept-alive connection
req = defaultdict(lambda: defaultdict(list))
for r in csv.DictReader(open(os.path.join(res, "requests.csv"))):
    req[int(r["round"])][r["path"]].append(float(r["seconds"]))
allp = {p: [t for rd in req.values() for t in rd[p]] for p in ("relay", "haproxy", "direct")}
for base in ("direct", "haproxy"):
    d = (med(allp["relay"]) - med(allp[base])) * 1e3
    per = [(med(rd["relay"]) - med(rd[base])) * 1e3 for rd in req.values()]
    # relay − haproxy has no target of its own: it is there to compare.
    row(f"R2{'a' if base == 'direct' else 'b'}. per request on a kept-alive connection (curl): relay − {base}"
        + (" on a reused TLS connection" if base == "direct" else " (for comparison)"),
        f"{d:+.3f} ms", span(per, "%+.3f"), "≤ +0.3 ms" if base == "direct" else "—",
        d <= 0.3 if base == "direct" else None,
        f"median {med(allp['relay']) * 1e3:.3f} ms vs {med(allp[base]) * 1e3:.3f} ms, "
        f"{len(allp['relay'])} requests each")

# 3. 100 MiB streams
st = defaultdict(lambda: defaultdict(dict))
for r in csv.DictReader(open(os.path.join(res, "stream.csv"))):
    st[r["records"]][int(r["round"])][r["path"]] = (float(r["bytes_per_s"]), float(r["proxy_cpu_s"]),
                                                   int(r["bytes"]))
for rec in ("16k", "4k"):
    rd = st[rec]
    thr = {p: [x[p][0] for x in rd.values()] for p in ("relay", "haproxy", "direct")}
    cpu = {p: [x[p][1] * (100 << 20) / x[p][2] for x in rd.values()] for p in ("relay", "haproxy")}
    q = med(thr["relay"]) / med(thr["direct"])
    row(f"R3. 100 MiB, {rec[:-1]} KiB upstream TLS records: relay / direct throughput", f"{q:.2f}",
        span([x["relay"][0] / x["direct"][0] for x in rd.values()], "%.2f"), "≥ 0.95", q >= 0.95,
        f"{med(thr['relay']) / 2**20:.0f} MiB/s vs {med(thr['direct']) / 2**20:.0f} MiB/s, "
        f"{len(thr['relay'])} rounds")
    q = med(thr["relay"]) / med(thr["haproxy"])
    row(f"R3. 100 MiB, {rec[:-1]} KiB upstream TLS records: relay / haproxy throughput", f"{q:.2f}",
        span([x["relay"][0] / x["haproxy"][0] for x in rd.values()], "%.2f"), "≥ 1.0", q >= 1.0,
        f"haproxy {med(thr['haproxy']) / 2**20:.0f} MiB/s")
    c_r, c_h = med(cpu["relay"]), med(cpu["haproxy"])
    row(f"R3. 100 MiB, {rec[:-1]} KiB upstream TLS records: CPU per 100 MiB, relay vs haproxy",
        f"{c_r * 1e3:.0f} ms vs {c_h * 1e3:.0f} ms", span([r / h for r, h in zip(cpu["relay"], cpu["haproxy"])], "%.2f"),
        "relay ≤ haproxy", c_r <= c_h, f"ratio {c_r / c_h:.2f} (user + system time of the process)")

# 4. 20 users x 50 concurrent requests
load = list(csv.DictReader(open(os.path.join(res, "load.csv"))))
users = {r["user"] for r in load}
nround = len({r["round"] for r in load})
total = sum(int(r["answers"]) + int(r["failed"]) for r in load)
other = sum(int(r["other"]) for r in load)
failed = sum(int(r["failed"]) for r in load)
walls = sorted({float(r["wall_s"]) for r in load})
row(f"R4. {len(users)} users × 50 concurrent requests ({nround} rounds): failures, answers for another user",
    f"{failed} / {other}", "", "0 / 0", failed == 0 and other == 0,
    f"{total} requests; a round of {len(users) * 50} took {med(walls):.2f} s (median)")

# 5. memory
rss = {(r["proxy"], r["state"]): r for r in csv.DictReader(open(os.path.join(res, "rss.csv")))}
kib = lambda p, s: int(rss[(p, s)]["rss_kib"])
base = lambda p, s: int(rss[(p, s)]["baseline_kib"])
n = int(rss[("relay", "idle")]["connections"])
idle = kib("relay", "idle")
row(f"R5a. relay RSS with {n} kept-alive client connections that each made one request and sit idle",
    f"{idle / 1024:.1f} MiB", "", "≤ 16 MiB", idle <= 16 * 1024,
    f"fresh process {base('relay', 'idle') / 1024:.1f} MiB; upstream connections open: "
    f"{rss[('relay', 'idle')]['upstream']}; haproxy {kib('haproxy', 'idle') / 1024:.1f} MiB "
    f"(fresh {base('haproxy', 'idle') / 1024:.1f} MiB)")
per_r = (kib("relay", "inflight") - base("relay", "inflight")) * 1024 / n
per_h = (kib("haproxy", "inflight") - base("haproxy", "inflight")) * 1024 / n
row(f"R5b. bytes per connection with a request in flight on each of {n}: relay / haproxy",
    f"{per_r / per_h:.2f}", "", "≤ 0.5", per_r <= 0.5 * per_h,
    f"{per_r / 1024:.1f} KiB vs {per_h / 1024:.1f} KiB per connection (RSS over a fresh process); "
    f"upstream connections: relay {rss[('relay', 'inflight')]['upstream']}, "
    f"haproxy {rss[('haproxy', 'inflight')]['upstream']}")

# 6. audit on / off
au = defaultdict(lambda: defaultdict(list))
for r in csv.DictReader(open(os.path.join(res, "audit.csv"))):
    au[int(r["round"])][r["audit"]].append(float(r["seconds"]))
on = [t for rd in au.values() for t in rd["on"]]
off = [t for rd in au.values() for t in rd["off"]]
d = (med(on) - med(off)) * 1e3
row("R6. per request, audit log on − off (curl, kept-alive)", f"{d:+.3f} ms",
    span([(med(rd["on"]) - med(rd["off"])) * 1e3 for rd in au.values()], "%+.3f"), "≤ +0.05 ms",
    d <= 0.05, f"median {med(on) * 1e3:.3f} ms vs {med(off) * 1e3:.3f} ms, {len(on)} requests each; "
    f"{machine.get('audit_lines', '?')} lines written")

summary = {"machine": machine, "targets": targets}
json.dump(summary, open(os.path.join(res, "summary.json"), "w"), indent=1)

out = [BEGIN, "## kubehsm-relayd (issues #15, #23)", "",
       f"Generated by `bench/relay.sh` (or `bench/run.sh --relay`) on {machine.get('date')}, "
       f"mode {machine.get('mode')}, commit `{machine.get('kubehsm_commit')}`, "
       f"haproxy {machine.get('haproxy')} (one thread), "
       f"loadavg {machine.get('loadavg_start')} → {machine.get('loadavg_end')}. "
       "Direct, relay and haproxy reach the same nginx mTLS endpoint with the same session "
       "certificate; every comparison is interleaved round by round in one run. Raw data stays "
       "in the build tree (`BENCH_OUT`).", "",
       "| target | measured | round min–max | target | met? | medians / notes |",
       "|---|---|---|---|---|---|"]
out += ["| " + " | ".join(r) + " |" for r in rows]
out += ["", END]
path = os.path.join(bench, "RESULTS.md")
text = open(path).read() if os.path.exists(path) else ""
if BEGIN in text and END in text:
    text = text[:text.index(BEGIN)] + "\n".join(out) + text[text.index(END) + len(END):]
else:
    text = text.rstrip("\n") + "\n\n" + "\n".join(out) + "\n"
open(path, "w").write(text)
for r in rows:
    print(f"{r[4]:>12}  {r[0]}: {r[1]} ({r[5]})")
