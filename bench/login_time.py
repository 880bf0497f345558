#!/usr/bin/python3
"""Time one kube session's start three ways on a pty (see bench/login.sh).

A: pamtester (auth, open_session, close_session) as root for the user;
B: `kubehsm login` as the user, token on the host;
C: `kubehsm login` as the user, token behind p11-kit's socket.
Rounds rotate the order (A B C, B C A, C A B, ...).  Prints medians and
ratios; exits non-zero if any run failed.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import pexpect

PIN_RE = r"PIN for token '[^']*': ?"


def as_user(user, argv):
    return ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups",
            "--reset-env"] + argv


def timed(argv, pin, env=None):
    """Seconds from spawn to exit; the PIN typed at its prompt."""
    t0 = time.monotonic()
    p = pexpect.spawn(argv[0], argv[1:], env=env, timeout=60, encoding="utf-8")
    p.expect(PIN_RE)
    p.sendline(pin)
    p.expect(pexpect.EOF)
    p.close()
    dt = time.monotonic() - t0
    if p.exitstatus != 0:
        raise RuntimeError("%s: exit %s: %s" % (" ".join(argv), p.exitstatus,
                                                  (p.before or "")[-300:]))
    return dt


def main():
    ap = argparse.ArgumentParser()
    for a in ("--user", "--pin", "--service", "--socket", "--kubehsm", "--login-program"):
        ap.add_argument(a, required=True)
    ap.add_argument("--rounds", type=int, default=15)
    o = ap.parse_args()

    kenv = ["env", "KUBEHSM_LOGIN_PROGRAM=" + o.login_program, o.kubehsm, "login"]
    logout = as_user(o.user, [o.kubehsm, "logout"])
    hidden = o.socket + ".off"

    def forwarded(on):
        # The p11-kit server's socket at the user's forward path, or aside.
        src, dst = (hidden, o.socket) if on else (o.socket, hidden)
        if os.path.lexists(src):
            os.rename(src, dst)

    variants = {
        "A": lambda: timed(["pamtester", o.service, o.user, "authenticate",
                            "open_session", "close_session"], o.pin),
        "B": lambda: (forwarded(False), timed(as_user(o.user, kenv), o.pin))[1],
        "C": lambda: (forwarded(True), timed(as_user(o.user, kenv), o.pin))[1],
    }
    names = sorted(variants)
    times = {n: [] for n in names}
    for r in range(o.rounds + 1):           # round 0 warms up, not counted
        order = names[r % 3:] + names[:r % 3]
        for n in order:
            subprocess.run(logout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            dt = variants[n]()
            if r > 0:
                times[n].append(dt)
    subprocess.run(logout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    med = {n: statistics.median(times[n]) for n in names}
    labels = {"A": "PAM login (pamtester, token on the host)",
              "B": "kubehsm login (pkexec, token on the host)",
              "C": "kubehsm login (pkexec, token through p11-kit's socket)"}
    print("# kubehsm login timing, %d rounds (medians; min-max)" % o.rounds)
    for n in names:
        print("%s  %-55s %7.1f ms  (%.1f-%.1f)" % (n, labels[n], med[n] * 1e3,
                                                  min(times[n]) * 1e3, max(times[n]) * 1e3))
    print("B/A  kubehsm login / PAM login, same token:        %.2f" % (med["B"] / med["A"]))
    print("C/A  forwarded kubehsm login / PAM login:          %.2f" % (med["C"] / med["A"]))
    print("C/B  forwarded / host token, both kubehsm login:   %.2f" % (med["C"] / med["B"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
