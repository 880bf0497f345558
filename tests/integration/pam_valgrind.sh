#!/bin/bash
. "$KH_SRCDIR/tests/lib/tap.sh"
skip_all "being written"
