#!/usr/bin/python3
"""memscan PID NEEDLE: count occurrences of NEEDLE in a live process's memory.

NEEDLE is text, or hex:HEXDIGITS for binary bytes (a raw key scalar).

Reads only the process's own writable mappings (heap, anonymous, data) of at
most 256 MiB each through /proc/PID/mem: enough to find a secret left in
freed memory, and bounded even for a sanitizer build, whose shadow memory
is terabytes of reserved address space.  Prints the count; exit 2 on error.
"""
import sys

LIMIT = 256 << 20


def main():
    pid, needle = int(sys.argv[1]), sys.argv[2].encode()
    if needle.startswith(b"hex:"):
        needle = bytes.fromhex(needle[4:].decode())
    count = scanned = 0
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if not fields[1].startswith("rw") or end - start > LIMIT:
                continue
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except OSError:
                continue
            scanned += len(data)
            count += data.count(needle)
    if scanned == 0:
        sys.exit("memscan: nothing readable in process %d" % pid)
    print(count)


if __name__ == "__main__":
    main()
