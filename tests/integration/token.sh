#!/bin/bash
# tests/integration/token.sh — lib/kh_pkcs11 + lib/kh_x509 against SoftHSM2.
. "$KH_SRCDIR/tests/lib/tap.sh"
skip_all "being written"
