#!/bin/bash
# pam_secrets: the PINs and the session key are not left in the memory of a
# process that ran pam_kubehsm.so.
#
# tests/probes/pam_driver (root, a real /etc/pam.d service, SoftHSM2 tokens) reads
# a recognisable user PIN from stdin into a page of its own and prints that
# page's address — the only copy the application itself holds, excluded from
# every scan.  It authenticates and opens a session (the record is cached),
# then pauses, and the test scans every writable mapping of the live
# process (/proc/PID/mem) for:
#   - the user's token PIN (a marker string),
#   - the host issuer's PIN (another marker, read by the module from its file),
#   - the session private key: a base64 line of the key PEM the record holds,
#     and the PEM header "BEGIN PRIVATE KEY".
# Positive controls: paused inside the PIN conversation, the scan must find
# the driver's heap copy of the answer it hands the module (proof that the
# scan sees the heap where such secrets live), and it must find the session
# key line in a process known to hold it.  Paused before pam_end, the PIN is
# already gone (the module wipes it right after C_Login).  After pam_end
# (the module's cleanup has run, every allocation of the login is freed) no
# copy of any of them may be found anywhere in the process: not in freed heap
# chunks the module wiped, and not in the copies kept by libp11, OpenSSL or
# SoftHSM either (where one of those held a copy, the failing assertion names
# the mapping and address).
. "$KH_SRCDIR/tests/harness/tap.sh"
. "$KH_SRCDIR/tests/harness/users.sh"
. "$KH_SRCDIR/tests/harness/pki.sh"
. "$KH_SRCDIR/tests/integration/pam/pam_common.sh"
need_root
need_cmd softhsm2-util pkcs11-tool openssl keyctl python3 setpriv
[ -f "$PAM_KUBEHSM" ] || skip_all "pam/.libs/pam_kubehsm.so not built"
DRIVER=$KH_BUILDDIR/tests/probes/pam_driver
[ -x "$DRIVER" ] || skip_all "tests/probes/pam_driver not built (make check builds it)"

PIN=KHPIN7c3e9a1d
ISSUER_PIN=KHISSUER5b8f2e
pam_common_setup || { echo "Bail out! setup"; exit 1; }
SVC=kh-secrets-$$
pam_service "/etc/pam.d/$SVC"
on_exit "rm -f /etc/pam.d/$SVC"
pam_driver_env

# scan PID LO HI NEEDLE...: "needle mapping count addresses" per mapping
# holding a needle; the driver's own PIN page [LO, HI) is left out.
scan() {
	python3 - "$@" <<'PY'
import sys
pid, lo, hi = int(sys.argv[1]), int(sys.argv[2], 16), int(sys.argv[3], 16)
needles = [n.encode() for n in sys.argv[4:]]
scanned = 0
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        f = line.split()
        s, e = (int(x, 16) for x in f[0].split("-"))
        if not f[1].startswith("rw") or e - s > (256 << 20):
            continue   # read-only text, or sanitizer shadow reservations
        try:
            mem.seek(s)
            d = bytearray(mem.read(e - s))
        except OSError:
            continue
        scanned += len(d)
        if s < hi and e > lo:
            a, b = max(s, lo) - s, min(e, hi) - s
            d[a:b] = bytes(b - a)
        for n in needles:
            i, at = d.find(n), []
            while i >= 0:
                at.append(hex(s + i)); i = d.find(n, i + 1)
            if at:
                print(n.decode(), f[5] if len(f) > 5 else "[anon]", len(at), " ".join(at[:4]))
if scanned < 4096:
    sys.exit("scan: nothing readable")
PY
}

# login WHEN: run the driver (authenticate + open_session) pausing at WHEN;
# sets $DPID and $PINLO/$PINHI.
login() {
	local o=$KH_TMP/driver.$1
	printf '%s\n' "$PIN" | env "${DRV_ENV[@]}" KH_PIN_STDIN=1 KH_PAUSE="$1" \
		"$DRIVER" "$SVC" "$ALICE" 1 authenticate open_session >"$o" 2>&1 &
	DPID=$!
	for _ in $(seq 1 300); do grep -q '^paused$' "$o" && break; sleep 0.1; done
	grep -q '^paused$' "$o" || { diag "$(cat "$o")"; return 1; }
	read -r _ PINLO PINHI < <(grep '^pin-buffer:' "$o")
}
stop() { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
on_exit 'stop'

# has NEEDLE SCAN-OUTPUT: does the scan name NEEDLE (fixed string)?
has() { awk -v n="$1" '$1 == n { f = 1 } END { exit !f }' <<<"$2"; }
hasnt() { ! has "$@"; }

# --- positive controls ---------------------------------------------------------
# In the conversation: the driver's answer (a heap copy of the PIN it hands
# to the module, which must wipe it) is live — the scan must see it there.
login conv
ok $? "control: the driver paused inside the PIN conversation"
conv=$(scan "$DPID" "$PINLO" "$PINHI" "$PIN")
diag "during the conversation: ${conv:-nothing}"
# (malloc's [heap]; in a sanitizer build ASan's allocator, an anonymous mapping)
has "$PIN" "$conv" && grep -Eq "^$PIN \[(heap|anon)\] " <<<"$conv"
ok $? "control: during the conversation the scan finds the PIN answer in the heap"
stop
# Before pam_end: the module has used the PIN (C_Login) and minted the
# session; it keeps no PIN for the rest of the login.
login before-end
ok $? "the driver authenticated, opened the session and paused before pam_end"
before=$(scan "$DPID" "$PINLO" "$PINHI" "$PIN" "$ISSUER_PIN")
diag "before pam_end: ${before:-nothing}"
hasnt "$PIN" "$before"
ok $? "before pam_end already no copy of the user PIN is left (wiped right after use)"
stop
keyline() { pam_record "$ALICE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"].splitlines()[1])'; }
KEYLINE=$(keyline)
[ ${#KEYLINE} -ge 40 ]
ok $? "control: the login cached a record holding the session key"
has "$KEYLINE" "$(scan "$$" 0 0 "$KEYLINE")"
ok $? "control: the scanner finds the session key line in a process that holds it (this shell)"
as_user "$ALICE" keyctl clear @u >/dev/null 2>&1

# --- after pam_end ---------------------------------------------------------------
login after-end
ok $? "the driver ran a login and pam_end, and paused"
KEYLINE=$(keyline)
[ ${#KEYLINE} -ge 40 ]
ok $? "that login cached its own session key"
after=$(scan "$DPID" "$PINLO" "$PINHI" "$PIN" "$ISSUER_PIN" "$KEYLINE" "BEGIN PRIVATE KEY")
diag "after pam_end: ${after:-nothing}"
hasnt "$PIN" "$after"
ok $? "after pam_end no copy of the user's token PIN is left in the process"
hasnt "$ISSUER_PIN" "$after"
ok $? "after pam_end no copy of the issuer PIN is left in the process"
hasnt "$KEYLINE" "$after"
ok $? "after pam_end no copy of the session key is left in the process"
hasnt "BEGIN PRIVATE KEY" "$after"
ok $? "after pam_end no private key PEM is left in the process"
stop
as_user "$ALICE" keyctl clear @u >/dev/null 2>&1
done_testing
