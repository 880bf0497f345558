#!/usr/bin/python3
"""pcsc_client.py - a minimal PC/SC client for tests (ctypes on libpcsclite).

    pcsc_client.py hold READER READYFILE
        connect (shared) and stay connected until SIGTERM; touch READYFILE
        once connected.  pcscd powers a card off ~0.5-1 s after its last
        client leaves, which wipes the card's PIN state: a holder plays
        "another application using the card".
    pcsc_client.py apdu READER HEX [HEX...]
        send the APDUs inside one PC/SC transaction and print one line per
        answer: "DATAHEX SW" (e.g. "7C...  9000" or " 6982").  Nothing else
        reaches the card, unlike opensc-tool, whose OpenSC card driver adds
        its own APDUs (SELECTs of other applets, GET DATA 7E before every
        command) and honours OPENSC_CONF's disconnect_action.

Like every libpcsclite client it talks to the pcscd named by
PCSCLITE_CSOCK_NAME.  It leaves the card as it is on disconnect.
"""

import ctypes
import signal
import sys

lib = ctypes.CDLL("libpcsclite.so.1")

# pcsc-lite on Linux: SCARDCONTEXT and SCARDHANDLE are long, DWORD is
# unsigned long (64-bit), unlike the Windows API.
LONG, DWORD = ctypes.c_long, ctypes.c_ulong
SCOPE_SYSTEM, SHARE_SHARED, PROTOCOL_ANY, LEAVE_CARD = 2, 2, 3, 0


class IoRequest(ctypes.Structure):
    _fields_ = [("dwProtocol", DWORD), ("cbPciLength", DWORD)]


def check(name, rv):
    if rv:
        sys.exit("pcsc_client: %s failed: 0x%08x" % (name, rv & 0xFFFFFFFF))


def connect(reader):
    ctx, card, proto = LONG(), LONG(), DWORD()
    check("SCardEstablishContext",
          lib.SCardEstablishContext(DWORD(SCOPE_SYSTEM), None, None, ctypes.byref(ctx)))
    check("SCardConnect",
          lib.SCardConnect(ctx, reader.encode(), DWORD(SHARE_SHARED), DWORD(PROTOCOL_ANY),
                           ctypes.byref(card), ctypes.byref(proto)))
    return ctx, card, proto.value


def disconnect(ctx, card):
    lib.SCardDisconnect(card, DWORD(LEAVE_CARD))
    lib.SCardReleaseContext(ctx)


def hold(reader, ready):
    ctx, card, _ = connect(reader)

    def release(*_):
        disconnect(ctx, card)
        sys.exit(0)
    signal.signal(signal.SIGTERM, release)
    signal.signal(signal.SIGINT, release)
    open(ready, "w").close()
    while True:
        signal.pause()


def apdus(reader, hexes):
    ctx, card, proto = connect(reader)
    pci = IoRequest(proto, ctypes.sizeof(IoRequest))
    check("SCardBeginTransaction", lib.SCardBeginTransaction(card))
    try:
        for h in hexes:
            cmd = bytes.fromhex(h)
            buf = ctypes.create_string_buffer(65538)
            n = DWORD(len(buf))
            check("SCardTransmit",
                  lib.SCardTransmit(card, ctypes.byref(pci), cmd, DWORD(len(cmd)), None,
                                    buf, ctypes.byref(n)))
            resp = buf.raw[:n.value]
            print(resp[:-2].hex().upper(), resp[-2:].hex().upper())
    finally:
        lib.SCardEndTransaction(card, DWORD(LEAVE_CARD))
        disconnect(ctx, card)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "apdu":
        apdus(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
