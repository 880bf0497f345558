#!/usr/bin/python3
"""piv_card.py - a minimal NIST SP 800-73-4 PIV card for vsmartcard's vpcd.

A test double for PIV smartcards: it speaks vpcd's socket protocol and
answers the APDUs that OpenSC's PIV driver and Yubico's ykcs11 send, so that
both PKCS#11 modules see a "real" card through pcscd.  It is NOT a secure
token: private keys, PIN and PUK sit in plain files of the card directory.
Never point it at real key material.

Card directory (CARDDIR):
    card.json    {"pin": "123456", "puk": "12345678", "serial": 12345678,
                  "tries": 3, "puk_tries": 3,
                  "policy": {"9c": "always"}}         (all keys optional)
    SLOT.key     PEM private key (RSA 1024-4096 or EC P-256/P-384), SLOT in
    SLOT.crt     9a 9c 9d 9e 82..95; a certificate without a key is allowed
    state.json   written by the card: retry counters (and PIN/PUK once they
                 were changed through the card), survives restarts
    events.log   written by the card, one event per line (see EVENTS below)

vpcd protocol (see virtualsmartcard/VirtualSmartcard.py): every message is a
2-byte big-endian length and a payload.  A 1-byte payload is a control code
(0 power off, 1 power on, 2 reset, 4 "send the ATR"); anything else is a
C-APDU that must be answered with the R-APDU.  vpcd runs inside pcscd and
listens; we are the client and reconnect whenever it goes away.

EVENTS (events.log), so that tests can count what the card really saw:
    connected / disconnected / stop          vpcd socket life, emulator exit
    power-on / power-off / reset             control codes from vpcd
    select                                   PIV application selected
    select-other AIDHEX SW                   any other SELECT (SW 9000/6A82)
    get-data TAG SW                          GET DATA of object TAG
    verify ok | verify fail tries=N | verify blocked
                                             VERIFY carrying a PIN
    verify-status verified|tries=N|blocked   VERIFY without data (status query)
    verify-reset                             VERIFY P1=FF (deauthenticate)
    sign SLOT | sign-denied SLOT | ecdh SLOT GENERAL AUTHENTICATE
    unblock ok | unblock fail tries=N | unblock blocked
    change-pin ok | change-pin fail tries=N | change-pin blocked (also change-puk)
    yk-version / yk-serial / yk-metadata SLOT / yk-attest SLOT   (--yubikey;
                                             yk-version also with --get-version)
    unsupported CLA INS SW                   anything else
"""

import argparse
import fcntl
import functools
import hmac
import json
import operator
import os
import signal
import socket
import ssl
import struct
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa, utils

# ---------------------------------------------------------------- constants

PIV_AID = bytes.fromhex("A000000308000010000100")
# A SELECT may name the PIV application by any prefix of its AID at least as
# long as the RID (5 bytes): OpenSC sends 9 bytes, ykpiv sends 5.
PIV_AID_MIN_PREFIX = 5

# YubiKey-only applications (--yubikey).  ykpiv selects the management
# application to drop the PIV security state (ykpiv_get_pin_retries) and, on
# firmware < 5, the OTP application to read the serial number.
YK_MGMT_AID = bytes.fromhex("A000000527471117")
YK_OTP_AID = bytes.fromhex("A000000527200101")

# ATR of this card when it is not a YubiKey: T=0/T=1, historical bytes in
# compact-TLV with the PIV AID (tag F, 9 bytes), which makes OpenSC type it
# SC_CARD_TYPE_PIV_II_HIST.  No other OpenSC driver claims this ATR.
_ATR_BODY = bytes.fromhex("3B8B8001" "80F9A00000030800001000")
# T=1 is announced, so the ATR ends with TCK = XOR of T0..last byte.
ATR_PIV_HIST = _ATR_BODY + bytes([functools.reduce(operator.xor, _ATR_BODY[1:])])
# YubiKey 5 (USB) ATR, copied from ykpiv.h YKPIV_ATR_YK5: ykpiv then reports
# DEVTYPE_YK5 and OpenSC types the card SC_CARD_TYPE_PIV_II_YUBIKEY4.
ATR_YK5 = bytes.fromhex("3BFD1300008131FE158073C021C057597562694B657940")
ATR_YK4 = bytes.fromhex("3BF81300008131FE15597562696B657934D4")   # "Yubikey4"

# Default YubiKey firmware version for --yubikey.  It decides what ykpiv
# asks: >= 5.0 GET SERIAL (F8), below that the OTP application; >= 5.3
# answers GET METADATA (F7), older firmware rejects it with 6D00.
YK_VERSION = "5.4.3"

# PIV algorithm identifiers (SP 800-78-4; 0x16 for RSA-4096 is YubiKey's).
ALG_RSA = {1024: 0x06, 2048: 0x07, 3072: 0x05, 4096: 0x16}
ALG_EC = {"secp256r1": (0x11, 32, hashes.SHA256()),
          "secp384r1": (0x14, 48, hashes.SHA384())}

# Key reference -> BER-TLV tag of its certificate object (SP 800-73-4
# part 1).  Retired key management keys 82..95 map to 5FC10D..5FC120.
CERT_TAG = {0x9A: 0x5FC105, 0x9C: 0x5FC10A, 0x9D: 0x5FC10B, 0x9E: 0x5FC101}
CERT_TAG.update({0x82 + i: 0x5FC10D + i for i in range(20)})

TAG_CHUID, TAG_CCC, TAG_DISCOVERY, TAG_HISTORY = 0x5FC102, 0x5FC107, 0x7E, 0x5FC10C

# Default PIN policy per key reference, as SP 800-73-4 part 1 specifies.
# "always" = PIN Always (a VERIFY immediately before every use),
# "once" = PIN verified in this session, "never" = no condition.
DEFAULT_POLICY = {0x9A: "once", 0x9C: "always", 0x9D: "once", 0x9E: "never"}
DEFAULT_POLICY.update({0x82 + i: "once" for i in range(20)})

# A fixed FASC-N whose agency code is 9999 (D4 E7 39 D...): OpenSC then takes
# the GUID, not the FASC-N, as the card's serial number.
FASCN = bytes.fromhex("D4E739DA739CED39CE739D836858210842108421C84210C3EB")

SW_OK = b"\x90\x00"


def sw(v):
    return struct.pack(">H", v)


class CardError(Exception):
    """Abort the current command with status word `sw`."""

    def __init__(self, status):
        super().__init__("SW %04X" % status)
        self.sw = status


# ---------------------------------------------------------------- BER-TLV

def tlv(tag, value):
    """BER-TLV with a definite length; multi-byte tags given as an int."""
    t = tag.to_bytes((tag.bit_length() + 7) // 8 or 1, "big")
    n = len(value)
    if n < 0x80:
        ln = bytes([n])
    elif n < 0x100:
        ln = bytes([0x81, n])
    elif n < 0x10000:
        ln = bytes([0x82]) + n.to_bytes(2, "big")
    else:
        ln = bytes([0x83]) + n.to_bytes(3, "big")
    return t + ln + value


def parse_tlv(data):
    """Parse a flat BER-TLV sequence into [(tag, value)]; raises 6A80."""
    out, i = [], 0
    while i < len(data):
        tag = data[i]
        i += 1
        if tag & 0x1F == 0x1F:               # multi-byte tag
            while True:
                if i >= len(data):
                    raise CardError(0x6A80)
                tag = (tag << 8) | data[i]
                i += 1
                if not data[i - 1] & 0x80:
                    break
        if i >= len(data):
            raise CardError(0x6A80)
        n = data[i]
        i += 1
        if n & 0x80:
            k = n & 0x7F
            if k == 0 or k > 3 or i + k > len(data):
                raise CardError(0x6A80)
            n = int.from_bytes(data[i:i + k], "big")
            i += k
        if i + n > len(data):
            raise CardError(0x6A80)
        out.append((tag, data[i:i + n]))
        i += n
    return out


# ---------------------------------------------------------------- APDU

class Apdu:
    """An ISO 7816-4 command APDU, short or extended (7816-3 cases 1-4)."""

    def __init__(self, raw):
        if len(raw) < 4:
            raise CardError(0x6700)
        self.cla, self.ins, self.p1, self.p2 = raw[:4]
        self.data, self.le, self.extended = b"", 0, False
        body = raw[4:]
        if not body:                                    # case 1
            return
        if len(body) == 1:                              # case 2 short
            self.le = body[0] or 256
            return
        if body[0] != 0 or len(body) < 3:               # short Lc
            lc = body[0]
            if lc == 0:
                raise CardError(0x6700)
            if len(body) == 1 + lc:                     # case 3 short
                self.data = body[1:]
            elif len(body) == 2 + lc:                   # case 4 short
                self.data, self.le = body[1:-1], body[-1] or 256
            else:
                raise CardError(0x6700)
            return
        self.extended = True
        if len(body) == 3:                              # case 2 extended
            self.le = int.from_bytes(body[1:3], "big") or 65536
            return
        lc = int.from_bytes(body[1:3], "big")
        if len(body) == 3 + lc:                         # case 3 extended
            self.data = body[3:]
        elif len(body) == 5 + lc:                       # case 4 extended
            self.data = body[3:-2]
            self.le = int.from_bytes(body[-2:], "big") or 65536
        else:
            raise CardError(0x6700)


# ---------------------------------------------------------------- the card

class Key:
    """A private key in a slot with what GENERAL AUTHENTICATE needs."""

    def __init__(self, ref, private_key):
        self.ref, self.priv = ref, private_key
        if isinstance(private_key, rsa.RSAPrivateKey):
            if private_key.key_size not in ALG_RSA:
                raise ValueError("unsupported RSA size %d" % private_key.key_size)
            self.alg = ALG_RSA[private_key.key_size]
            self.nbytes = private_key.key_size // 8
            self.ec = None
        elif isinstance(private_key, ec.EllipticCurvePrivateKey):
            if private_key.curve.name not in ALG_EC:
                raise ValueError("unsupported curve %s" % private_key.curve.name)
            self.alg, self.nbytes, self.hash = ALG_EC[private_key.curve.name]
            self.ec = private_key.curve
        else:
            raise ValueError("unsupported key type")

    def raw_rsa(self, block):
        """The PIV RSA operation: block^d mod n on an already padded block."""
        if len(block) != self.nbytes:
            raise CardError(0x6A80)
        n = self.priv.private_numbers()
        m = int.from_bytes(block, "big")
        if m >= n.public_numbers.n:
            raise CardError(0x6A80)
        # CRT, ~4x faster than pow(m, d, n) in pure Python.
        m1 = pow(m, n.dmp1, n.p)
        m2 = pow(m, n.dmq1, n.q)
        h = (n.iqmp * (m1 - m2)) % n.p
        return (m2 + h * n.q).to_bytes(self.nbytes, "big")

    def ecdsa(self, digest):
        """ECDSA over a caller-supplied hash, DER-encoded as PIV returns it.

        SP 800-73-4 passes the hash truncated/padded to the field size;
        ECDSA's bits2int makes a shorter input equal to a left-zero-padded
        one and uses the leftmost bits of a longer one."""
        if len(digest) > self.nbytes:
            digest = digest[:self.nbytes]
        digest = digest.rjust(self.nbytes, b"\x00")
        return self.priv.sign(digest, ec.ECDSA(utils.Prehashed(self.hash)))

    def ecdh(self, point):
        try:
            peer = ec.EllipticCurvePublicKey.from_encoded_point(self.ec, point)
        except ValueError:
            raise CardError(0x6A80)
        return self.priv.exchange(ec.ECDH(), peer)

    def yk_pubkey(self):
        """Public key in YubiKey metadata/GENERATE form (81/82 or 86)."""
        pub = self.priv.public_key()
        if self.ec is None:
            nums = pub.public_numbers()
            e = nums.e.to_bytes((nums.e.bit_length() + 7) // 8, "big")
            return tlv(0x81, nums.n.to_bytes(self.nbytes, "big")) + tlv(0x82, e)
        return tlv(0x86, pub.public_bytes(serialization.Encoding.X962,
                                          serialization.PublicFormat.UncompressedPoint))


class PivCard:
    def __init__(self, carddir, yubikey=False, trace=False, yk_version=YK_VERSION,
                 get_version=False):
        self.dir = carddir
        self.yubikey = yubikey
        # A plain applet that answers GET VERSION: what ykcs11 >= 2.7 needs.
        self.get_version = get_version
        self.yk_version = tuple(int(x) for x in yk_version.split("."))
        if len(self.yk_version) != 3 or not all(0 <= x <= 255 for x in self.yk_version):
            raise ValueError("--yk-version must be MAJOR.MINOR.PATCH")
        self.trace = trace
        cfg_path = os.path.join(carddir, "card.json")
        cfg = {}
        if os.path.exists(cfg_path):
            with open(cfg_path) as f:
                cfg = json.load(f)
        self.serial = int(cfg.get("serial", 1))
        self.max_pin_tries = int(cfg.get("tries", 3))
        self.max_puk_tries = int(cfg.get("puk_tries", 3))
        if not (1 <= self.max_pin_tries <= 15 and 1 <= self.max_puk_tries <= 15):
            raise ValueError("tries must be 1..15 (63Cx carries 4 bits)")
        self.policy = dict(DEFAULT_POLICY)
        for slot, pol in cfg.get("policy", {}).items():
            if pol not in ("always", "once", "never"):
                raise ValueError("policy for %s must be always|once|never" % slot)
            self.policy[int(slot, 16)] = pol

        # Counters and the current PIN/PUK live in state.json; card.json only
        # gives the factory values.
        self.state_path = os.path.join(carddir, "state.json")
        st = {}
        if os.path.exists(self.state_path):
            with open(self.state_path) as f:
                st = json.load(f)
        self.pin = str(st.get("pin", cfg.get("pin", "123456"))).encode()
        self.puk = str(st.get("puk", cfg.get("puk", "12345678"))).encode()
        for name, value in (("pin", self.pin), ("puk", self.puk)):
            # Sent FF-padded to 8 bytes, so 1..8 bytes and no FF inside.
            if not 1 <= len(value) <= 8 or b"\xff" in value:
                raise ValueError("%s must be 1..8 bytes" % name)
        self.pin_tries = int(st.get("pin_tries", self.max_pin_tries))
        self.puk_tries = int(st.get("puk_tries", self.max_puk_tries))
        self.pin_changed = "pin" in st
        self.puk_changed = "puk" in st

        self.keys, self.certs = {}, {}
        for ref in CERT_TAG:
            base = os.path.join(carddir, "%02x" % ref)
            if os.path.exists(base + ".key"):
                with open(base + ".key", "rb") as f:
                    self.keys[ref] = Key(ref, serialization.load_pem_private_key(f.read(), None))
            if os.path.exists(base + ".crt"):
                # ssl's PEM->DER is plain base64; importing cryptography.x509
                # instead would add ~0.2-0.6 s to every emulator start.
                with open(base + ".crt") as f:
                    self.certs[ref] = ssl.PEM_cert_to_DER_cert(f.read())

        self.events = open(os.path.join(carddir, "events.log"), "a", buffering=1)
        self.busy = False               # inside process(): defer SIGTERM
        self.stop_requested = False
        self.power_reset()

    # ------------------------------------------------------------ helpers

    def event(self, text):
        # Line-buffered and flushed: tests read this file while we run.
        self.events.write(text + "\n")
        self.events.flush()

    def save_state(self):
        """Persist counters atomically (write + rename).

        Atomic against the emulator being killed, which is what tests do.
        No fsync: surviving a host crash is not worth ~10 ms per VERIFY."""
        st = {"pin_tries": self.pin_tries, "puk_tries": self.puk_tries}
        if self.pin_changed:
            st["pin"] = self.pin.decode()
        if self.puk_changed:
            st["puk"] = self.puk.decode()
        tmp = self.state_path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(st, f)
        os.replace(tmp, self.state_path)

    def power_reset(self):
        """Power-on/reset: all volatile security state is gone."""
        self.piv_selected = True        # PIV is the default application
        self.pin_verified = False
        self.pin_always = False         # "VERIFY was the previous command"
        self.pending = b""              # response data not yet fetched (61xx)
        self.chain = None               # ((ins, p1, p2), data) of a CLA 10 chain

    def deauthenticate(self):
        self.pin_verified = False
        self.pin_always = False

    def atr(self):
        if not self.yubikey:
            return ATR_PIV_HIST
        return ATR_YK5 if self.yk_version >= (5, 0, 0) else ATR_YK4

    @staticmethod
    def unpad(block):
        """An 8-byte FF-padded PIN/PUK -> bytes, or 6A80 if malformed."""
        if len(block) != 8:
            raise CardError(0x6A80)
        value = block.rstrip(b"\xff")
        if b"\xff" in value or not value:
            raise CardError(0x6A80)
        return value

    @staticmethod
    def same(a, b):
        return hmac.compare_digest(a.ljust(8, b"\xff"), b.ljust(8, b"\xff"))

    # ------------------------------------------------------------ transport

    def process(self, raw):
        """One C-APDU in, one R-APDU out; never raises."""
        try:
            apdu = Apdu(raw)
        except CardError as e:
            return sw(e.sw)
        if self.trace:
            self.trace_apdu(">", apdu, raw)
        try:
            resp = self.dispatch(apdu)
        except CardError as e:
            resp = sw(e.sw)
        if self.trace:
            self.trace_apdu("<", apdu, resp)
        return resp

    def trace_apdu(self, direction, apdu, raw):
        # PINs and PUKs travel in VERIFY / CHANGE REFERENCE / RESET RETRY:
        # never write them into a log.
        if direction == ">" and apdu.ins in (0x20, 0x24, 0x2C) and apdu.data:
            shown = raw[:5].hex().upper() + " <%d bytes redacted>" % len(apdu.data)
        else:
            shown = raw.hex().upper()
        print("%.3f %s %s" % (time.time(), direction, shown), file=sys.stderr, flush=True)

    def respond(self, data, apdu):
        """Return data honouring Le; the rest waits for GET RESPONSE (61xx).

        Extended-length commands get everything they asked for at once."""
        limit = apdu.le if apdu.le else (65536 if apdu.extended else 256)
        if len(data) <= limit:
            self.pending = b""
            return data + SW_OK
        self.pending = data[limit:]
        # 61 00 means "256 or more".
        return data[:limit] + sw(0x6100 | (len(self.pending) if len(self.pending) < 256 else 0))

    def dispatch(self, apdu):
        # GET RESPONSE fetching the rest of the previous answer is part of
        # that command: it changes no state.
        if apdu.ins == 0xC0 and apdu.cla == 0x00 and self.pending:
            return self.respond(self.pending, apdu)
        self.pending = b""

        # "PIN Always" (SP 800-73-4): a VERIFY entitles exactly the next
        # command to use such a key.  Every command consumes the right,
        # except the intermediate blocks of a chained GENERAL AUTHENTICATE.
        if apdu.cla == 0x10 and apdu.ins == 0x87:
            always = self.pin_always
        else:
            always, self.pin_always = self.pin_always, False

        if apdu.cla not in (0x00, 0x10):
            self.event("unsupported %02X %02X 6E00" % (apdu.cla, apdu.ins))
            raise CardError(0x6E00)

        # Command chaining (ISO 7816-4): collect the blocks until CLA 00.
        if apdu.cla == 0x10:
            head = (apdu.ins, apdu.p1, apdu.p2)
            if self.chain and self.chain[0] != head:
                self.chain = None
            self.chain = (head, (self.chain[1] if self.chain else b"") + apdu.data)
            if len(self.chain[1]) > 65536:
                self.chain = None
                raise CardError(0x6700)
            return SW_OK
        if self.chain:
            head, data = self.chain
            self.chain = None
            if head == (apdu.ins, apdu.p1, apdu.p2):
                apdu.data = data + apdu.data
            # A different command abandons the chain, as a card would.

        ins = apdu.ins
        if ins == 0xC0:                 # GET RESPONSE with nothing pending
            raise CardError(0x6985)
        if ins == 0xA4:
            return self.cmd_select(apdu)
        if not self.piv_selected:
            if self.yubikey and ins == 0x01 and apdu.p1 == 0x10:
                # OTP application: "get serial" (YubiKey NEO/4 path).
                self.event("yk-serial")
                return self.serial.to_bytes(4, "big") + SW_OK
            self.event("unsupported %02X %02X 6D00" % (apdu.cla, ins))
            raise CardError(0x6D00)
        if ins == 0xCB:
            return self.cmd_get_data(apdu)
        if ins == 0x20:
            return self.cmd_verify(apdu)
        if ins == 0x87:
            return self.cmd_general_authenticate(apdu, always)
        if ins == 0x2C:
            return self.cmd_reset_retry(apdu)
        if ins == 0x24:
            return self.cmd_change_reference(apdu)
        if ins == 0xFD and self.get_version and not self.yubikey:
            # ykpiv >= 2.7 (_ykpiv_select_application) fails the connect,
            # and ykcs11 shows "no token", when GET VERSION fails; 2.2
            # ignored it.  Nothing else YubiKey-specific is answered.
            self.event("yk-version")
            return self.respond(bytes(self.yk_version), apdu)
        if self.yubikey and (ins in (0xFD, 0xF9)
                             or (ins == 0xF8 and self.yk_version >= (5, 0, 0))
                             or (ins == 0xF7 and self.yk_version >= (5, 3, 0))):
            return self.cmd_yubikey(apdu)
        self.event("unsupported %02X %02X 6D00" % (apdu.cla, ins))
        raise CardError(0x6D00)

    # ------------------------------------------------------------ commands

    def cmd_select(self, apdu):
        if apdu.p1 != 0x04:
            self.event("select-other p1=%02X 6A86" % apdu.p1)
            raise CardError(0x6A86)
        aid = apdu.data
        if len(aid) >= PIV_AID_MIN_PREFIX and PIV_AID.startswith(aid):
            if not self.piv_selected:
                self.deauthenticate()
            self.piv_selected = True
            self.event("select")
            if apdu.p2 & 0x0C == 0x0C:  # "no response data" requested
                return SW_OK
            # Application property template (SP 800-73-4 part 2, 3.1.1).
            apt = tlv(0x61,
                      tlv(0x4F, PIV_AID[5:])
                      + tlv(0x79, tlv(0x4F, PIV_AID[:5]))
                      + tlv(0x50, b"kubehsm test PIV")
                      + tlv(0xAC, b"".join(tlv(0x80, bytes([a])) for a in
                                          (0x07, 0x11, 0x14, 0x05, 0x06)) + tlv(0x06, b"\x00")))
            return self.respond(apt, apdu)
        if self.yubikey and aid in (YK_MGMT_AID, YK_OTP_AID):
            # Leaving PIV drops its security state, as on a real YubiKey.
            self.deauthenticate()
            self.piv_selected = False
            self.event("select-other %s 9000" % aid.hex().upper())
            return SW_OK
        # A failed SELECT leaves the current application selected.
        self.event("select-other %s 6A82" % aid.hex().upper())
        raise CardError(0x6A82)

    def data_object(self, tag):
        """Content of a PIV data object (without the 53 wrapper) or None."""
        if tag == TAG_CHUID:
            # GUID: a fixed head, then the serial in BCD, left-padded to 8
            # bytes.  OpenSC shows the last 8 GUID bytes as the token
            # serial, i.e. "0000000012345678" for serial 12345678.
            guid = b"KUBEHSM\x01" + bytes.fromhex("%016d" % self.serial)
            return (tlv(0x30, FASCN) + tlv(0x34, guid) + tlv(0x35, b"20991231")
                    + tlv(0x3E, b"") + tlv(0xFE, b""))
        if tag == TAG_CCC:
            card_id = bytes.fromhex("A000000116FF") + self.serial.to_bytes(15, "big")
            return (tlv(0xF0, card_id) + tlv(0xF1, b"\x21") + tlv(0xF2, b"\x21")
                    + tlv(0xF3, b"") + tlv(0xF4, b"\x00") + tlv(0xF5, b"\x10")
                    + tlv(0xF6, b"") + tlv(0xF7, b"") + tlv(0xFA, b"") + tlv(0xFB, b"")
                    + tlv(0xFC, b"") + tlv(0xFD, b"") + tlv(0xFE, b""))
        if tag == TAG_HISTORY:
            retired = sum(1 for r in self.certs if 0x82 <= r <= 0x95)
            return tlv(0xC1, bytes([retired])) + tlv(0xC2, b"\x00") + tlv(0xFE, b"")
        for ref, ctag in CERT_TAG.items():
            if ctag == tag and ref in self.certs:
                # 71 = CertInfo 00: uncompressed; FE = error detection code.
                return tlv(0x70, self.certs[ref]) + tlv(0x71, b"\x00") + tlv(0xFE, b"")
        return None

    def cmd_get_data(self, apdu):
        if (apdu.p1, apdu.p2) != (0x3F, 0xFF):
            raise CardError(0x6A86)
        items = parse_tlv(apdu.data)
        if len(items) != 1 or items[0][0] != 0x5C or not 1 <= len(items[0][1]) <= 3:
            raise CardError(0x6A80)
        tag = int.from_bytes(items[0][1], "big")
        if tag == TAG_DISCOVERY:
            # The discovery object is returned under its own tag, not 53.
            # PIN usage policy 40 00: only the PIV application PIN.
            obj = tlv(0x7E, tlv(0x4F, PIV_AID) + tlv(0x5F2F, b"\x40\x00"))
        else:
            content = self.data_object(tag)
            if content is None:
                self.event("get-data %X 6A82" % tag)
                raise CardError(0x6A82)
            obj = tlv(0x53, content)
        self.event("get-data %X 9000" % tag)
        return self.respond(obj, apdu)

    def cmd_verify(self, apdu):
        if apdu.p1 == 0xFF:
            # SP 800-73-4: P1=FF, no data -> reset the security status.
            if apdu.data or apdu.p2 != 0x80:
                raise CardError(0x6A86 if apdu.p2 != 0x80 else 0x6700)
            self.deauthenticate()
            self.event("verify-reset")
            return SW_OK
        if apdu.p1 != 0x00:
            raise CardError(0x6A86)
        if apdu.p2 != 0x80:
            # No global PIN, no OCC; the PUK is only usable via 2C/24.
            raise CardError(0x6A88)
        if not apdu.data:
            if self.pin_verified:
                self.event("verify-status verified")
                return SW_OK
            if self.pin_tries == 0:
                self.event("verify-status blocked")
                raise CardError(0x6983)
            self.event("verify-status tries=%d" % self.pin_tries)
            raise CardError(0x63C0 | self.pin_tries)
        if self.pin_tries == 0:
            self.event("verify blocked")
            raise CardError(0x6983)
        candidate = self.unpad(apdu.data)
        # Like a real card, count the attempt on disk *before* comparing:
        # killing the emulator mid-VERIFY can cost a try, never save one.
        self.pin_tries -= 1
        self.save_state()
        if self.same(candidate, self.pin):
            self.pin_tries = self.max_pin_tries
            self.save_state()
            self.pin_verified = True
            self.pin_always = True
            self.event("verify ok")
            return SW_OK
        self.deauthenticate()
        self.event("verify fail tries=%d" % self.pin_tries)
        raise CardError(0x63C0 | self.pin_tries)

    def check_pin_format(self, value):
        # FIPS 201: 6-8 characters; real cards also insist on digits, but
        # tests may want other PINs, so only the length is enforced.
        if not 6 <= len(value) <= 8:
            raise CardError(0x6A80)

    def cmd_reset_retry(self, apdu):
        if (apdu.p1, apdu.p2) != (0x00, 0x80):
            raise CardError(0x6A86)
        if len(apdu.data) != 16:
            raise CardError(0x6A80)
        if self.puk_tries == 0:
            self.event("unblock blocked")
            raise CardError(0x6983)
        puk, new_pin = self.unpad(apdu.data[:8]), self.unpad(apdu.data[8:])
        self.check_pin_format(new_pin)
        self.puk_tries -= 1                 # counted before comparing
        self.save_state()
        if not self.same(puk, self.puk):
            self.event("unblock fail tries=%d" % self.puk_tries)
            raise CardError(0x63C0 | self.puk_tries)
        self.pin, self.pin_changed = new_pin, True
        self.pin_tries, self.puk_tries = self.max_pin_tries, self.max_puk_tries
        self.save_state()
        self.event("unblock ok")
        return SW_OK

    def cmd_change_reference(self, apdu):
        if apdu.p1 != 0x00 or apdu.p2 not in (0x80, 0x81):
            raise CardError(0x6A86)
        if len(apdu.data) != 16:
            raise CardError(0x6A80)
        is_pin = apdu.p2 == 0x80
        name = "change-pin" if is_pin else "change-puk"
        tries = self.pin_tries if is_pin else self.puk_tries
        if tries == 0:
            self.event(name + " blocked")
            raise CardError(0x6983)
        old, new = self.unpad(apdu.data[:8]), self.unpad(apdu.data[8:])
        self.check_pin_format(new)
        tries -= 1                          # counted before comparing
        if is_pin:
            self.pin_tries = tries
        else:
            self.puk_tries = tries
        self.save_state()
        if not self.same(old, self.pin if is_pin else self.puk):
            if is_pin:
                self.deauthenticate()
            self.event("%s fail tries=%d" % (name, tries))
            raise CardError(0x63C0 | tries)
        if is_pin:
            self.pin, self.pin_changed, self.pin_tries = new, True, self.max_pin_tries
        else:
            self.puk, self.puk_changed, self.puk_tries = new, True, self.max_puk_tries
        self.save_state()
        self.event(name + " ok")
        return SW_OK

    def cmd_general_authenticate(self, apdu, always):
        ref = apdu.p2
        key = self.keys.get(ref)
        if key is None:
            raise CardError(0x6A88)
        if apdu.p1 != key.alg:
            raise CardError(0x6A80)
        pol = self.policy.get(ref, "once")
        allowed = {"never": True, "once": self.pin_verified, "always": always}[pol]
        if not allowed:
            self.event("sign-denied %02x" % ref)
            raise CardError(0x6982)
        outer = parse_tlv(apdu.data)
        if len(outer) != 1 or outer[0][0] != 0x7C:
            raise CardError(0x6A80)
        fields = dict(parse_tlv(outer[0][1]))
        if fields.get(0x82) != b"":
            # Only the "please compute a response" form is implemented; a
            # witness/challenge exchange (9B management key) is not.
            raise CardError(0x6A80)
        if 0x81 in fields:
            if key.ec is None:
                result = key.raw_rsa(fields[0x81])
            else:
                result = key.ecdsa(fields[0x81])
            self.event("sign %02x" % ref)
        elif 0x85 in fields and key.ec is not None:
            result = key.ecdh(fields[0x85])
            self.event("ecdh %02x" % ref)
        else:
            raise CardError(0x6A80)
        return self.respond(tlv(0x7C, tlv(0x82, result)), apdu)

    def cmd_yubikey(self, apdu):
        """The YubiKey PIV extensions ykpiv uses to identify a device."""
        ins = apdu.ins
        if ins == 0xFD:                                     # GET VERSION
            self.event("yk-version")
            return self.respond(bytes(self.yk_version), apdu)
        if ins == 0xF8:                                     # GET SERIAL
            self.event("yk-serial")
            return self.respond(self.serial.to_bytes(4, "big"), apdu)
        if ins == 0xF9:                                     # ATTEST
            # Only generated keys can be attested; ours are all imported.
            self.event("yk-attest %02x 6A80" % apdu.p1)
            raise CardError(0x6A80)
        # GET METADATA (firmware 5.3+), P2 = key reference.
        ref = apdu.p2
        self.event("yk-metadata %02x" % ref)
        if ref in (0x80, 0x81):
            is_pin = ref == 0x80
            cur = self.pin if is_pin else self.puk
            default = b"123456" if is_pin else b"12345678"
            changed = self.pin_changed if is_pin else self.puk_changed
            md = (tlv(0x01, b"\xff") + tlv(0x02, b"\x00\x00")
                  + tlv(0x05, b"\x01" if (cur == default and not changed) else b"\x00")
                  + tlv(0x06, bytes([self.max_pin_tries if is_pin else self.max_puk_tries,
                                     self.pin_tries if is_pin else self.puk_tries])))
            return self.respond(md, apdu)
        key = self.keys.get(ref)
        if key is None:
            raise CardError(0x6A82)
        pin_policy = {"never": 1, "once": 2, "always": 3}[self.policy.get(ref, "once")]
        md = (tlv(0x01, bytes([key.alg])) + tlv(0x02, bytes([pin_policy, 1]))
              + tlv(0x03, b"\x02")                          # imported
              + tlv(0x04, key.yk_pubkey()))
        return self.respond(md, apdu)


# ---------------------------------------------------------------- vpcd link

def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        # Debian 12's vpcd (virtualsmartcard 0.8; fixed upstream in 2023,
        # commit 76e2679) writes the length prefix and the payload with two
        # send()s on a Nagle socket: if we delay our ACK of the prefix, the
        # payload waits ~40 ms for it.  Quick-ACK mode is not sticky, so set
        # it before every read.  Measured: ~44 ms per APDU without, <1 ms
        # with.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("vpcd closed the connection")
        buf += chunk
    return buf


def serve(card, host, port):
    """Talk to vpcd until it goes away; return to let the caller reconnect."""
    sock = socket.create_connection((host, port), timeout=5)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    card.event("connected")
    # A fresh connection is a freshly inserted card.
    card.power_reset()
    try:
        while True:
            (n,) = struct.unpack(">H", recv_exact(sock, 2))
            msg = recv_exact(sock, n) if n else b""
            if n == 1:
                code = msg[0]
                if card.trace:
                    print("%.3f * control %d" % (time.time(), code), file=sys.stderr, flush=True)
                if code == 0:
                    card.power_reset()
                    card.event("power-off")
                elif code == 1:
                    card.power_reset()
                    card.event("power-on")
                elif code == 2:
                    card.power_reset()
                    card.event("reset")
                elif code == 4:
                    atr = card.atr()
                    sock.sendall(struct.pack(">H", len(atr)) + atr)
                continue
            if n == 0:
                continue
            # A SIGTERM during process() is deferred (see main): the state
            # file and events.log must not be left half-updated.
            card.busy = True
            try:
                resp = card.process(msg)
            finally:
                card.busy = False
            sock.sendall(struct.pack(">H", len(resp)) + resp)
            if card.stop_requested:
                raise SystemExit(0)
    finally:
        sock.close()
        card.event("disconnected")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True, help="vpcd port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--dir", required=True, help="card directory")
    ap.add_argument("--trace", action="store_true", help="log every APDU to stderr")
    ap.add_argument("--yubikey", action="store_true",
                    help="YubiKey 5 ATR and GET VERSION/SERIAL/METADATA")
    ap.add_argument("--yk-version", default=YK_VERSION,
                    help="firmware version reported with --yubikey or --get-version "
                         "(default %(default)s)")
    ap.add_argument("--get-version", action="store_true",
                    help="a plain PIV applet (PIV ATR) that answers YubiKey's GET VERSION "
                         "(INS FD) and nothing else YubiKey-specific: ykcs11 >= 2.7 "
                         "takes no card for a token without it")
    args = ap.parse_args()

    # One emulator per card directory: two would fork the counters.
    lock = open(os.path.join(args.dir, ".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit("piv_card: %s is in use by another emulator" % args.dir)

    card = PivCard(args.dir, yubikey=args.yubikey, trace=args.trace,
                   yk_version=args.yk_version, get_version=args.get_version)

    def stop(signum, frame):
        # Raising here unwinds whatever runs, e.g. a blocking recv(); only
        # inside an APDU do we wait until the answer is sent.
        if card.busy:
            card.stop_requested = True
        else:
            raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    try:
        while True:
            try:
                serve(card, args.host, args.port)
            except (ConnectionError, OSError) as e:
                if args.trace:
                    print("piv_card: %s; retrying" % e, file=sys.stderr, flush=True)
            time.sleep(0.1)
    finally:
        card.event("stop")


if __name__ == "__main__":
    main()
