"""The kubehsm session record, for tests that read or forge one.

Layout (cache/kh_record.h): one line of compact JSON holding every small
field and, under "pem", the length of each PEM text; then the PEM texts,
back to back, in the order chain, key, token_cert.

As a module: load(text) -> dict (header fields plus the PEM texts under
their names), dump(dict) -> text.  As a command: record.py get FIELD reads
a record on stdin and prints one field (a PEM text as it is); record.py
json prints the whole record as one JSON object (nothing for no input).
"""
import json
import sys

PEMS = ("chain", "key", "token_cert")


def load(text):
    if isinstance(text, bytes):
        text = text.decode()
    header, body = text.split("\n", 1)
    r = json.loads(header)
    lengths = r.pop("pem")
    off = 0
    for name in PEMS:
        r[name] = body[off:off + lengths[name]]
        off += lengths[name]
    if off != len(body):
        raise ValueError("record has %d bytes after its PEM texts" % (len(body) - off))
    return r


def dump(r):
    """The record for r; a PEM field that is not a string stays in the
    header (where the decoder must refuse it)."""
    header = {k: v for k, v in r.items() if k not in PEMS or not isinstance(v, str)}
    texts = [(n, r[n]) for n in PEMS if isinstance(r.get(n), str)]
    header["pem"] = {n: len(t) for n, t in texts}
    return json.dumps(header, separators=(",", ":")) + "\n" + "".join(t for _, t in texts)


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
