"""The kubehsm session record, for tests that read or forge one.

Layout (cache/kh_record.h, version 2): one line of compact JSON holding
every small field and, under "parts", the length of each part; then the
parts, back to back, in the order exec, chain, token_cert.  The exec part
is the ExecCredential the login rendered (without its apiVersion), which
holds the certificate chain and the session key; the chain part is used
only when kubehsm-relayd holds the key (then there is no exec part).

As a module: load(text) -> dict (header fields, plus "chain", "key" and
"token_cert" — taken out of the exec part — and "exec", the exec part as
stored); dump(dict) -> text, rendering the exec part from "chain", "key"
and "expires" exactly as kubehsm does (so a forged expiry stays consistent;
a chain or key that is not a string is rendered as that JSON value, for the
reader to refuse).  As a command: record.py get FIELD reads a record on
stdin and prints one field (a PEM text as it is); record.py json prints the
whole record as one JSON object (nothing for no input).
"""
import datetime
import json
import sys

PARTS = ("exec", "chain", "token_cert")


def stamp(t):
    """RFC 3339 for t; for a t no calendar holds (a forged 2**63), a text
    kubehsm never writes, so the reader refuses the record either way."""
    try:
        return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return "out of range"


def render(expires, chain, key):
    """The exec part for a session: kh_exec_answer_render's bytes."""
    return ('{"kind":"ExecCredential","status":{"expirationTimestamp":%s,'
            '"clientCertificateData":%s,"clientKeyData":%s}}\n'
            % (json.dumps(stamp(expires)), json.dumps(chain, separators=(",", ":")),
               json.dumps(key, separators=(",", ":"))))


def load(text):
    if isinstance(text, bytes):
        text = text.decode()
    header, body = text.split("\n", 1)
    r = json.loads(header)
    lengths = r.pop("parts")
    off = 0
    for name in PARTS:
        r[name] = body[off:off + lengths[name]]
        off += lengths[name]
    if off != len(body):
        raise ValueError("record has %d bytes after its parts" % (len(body) - off))
    if r["exec"]:
        status = json.loads(r["exec"])["status"]
        r["chain"], r["key"] = status["clientCertificateData"], status["clientKeyData"]
    else:
        r["key"] = ""
    return r


def dump(r):
    """The record for r.  With a key, the exec part is rendered from r's
    chain, key and expires; without one (""), the chain is its own part."""
    header = {k: v for k, v in r.items() if k not in PARTS + ("key",)}
    key = r.get("key", "")
    if key != "":
        parts = {"exec": render(r["expires"], r.get("chain"), key), "chain": ""}
    else:
        parts = {"exec": "", "chain": r.get("chain", "")}
    parts["token_cert"] = r.get("token_cert", "")
    header["parts"] = {n: len(parts[n]) for n in PARTS}
    return json.dumps(header, separators=(",", ":")) + "\n" + "".join(parts[n] for n in PARTS)


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "json":
        text = sys.stdin.read()
        if text:
            print(json.dumps(load(text), separators=(",", ":")))
    elif len(sys.argv) == 3 and sys.argv[1] == "get":
        v = load(sys.stdin.read())[sys.argv[2]]
        sys.stdout.write(v if isinstance(v, str) else json.dumps(v) + "\n")
    else:
        sys.exit("usage: record.py json <record | record.py get FIELD <record")
