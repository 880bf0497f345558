# bench/floor.mk — the benchmark's floor programs (not part of the project's
# build).  make -C bench -f floor.mk [OUT=dir]
OUT ?= .
CC ?= cc
CFLAGS ?= -O2 -g -Wall -Wextra
PROGS = $(OUT)/exec_floor $(OUT)/exec_floor_static $(OUT)/sign_floor $(OUT)/ssl_floor $(OUT)/p11_floor $(OUT)/loadgen \
	$(OUT)/pam_floor.so \
	$(OUT)/hop_floor $(OUT)/keyring_floor $(OUT)/floor_polkit.so \
	$(OUT)/p11pass.so $(OUT)/p11fill $(OUT)/hsm_link

all: $(PROGS)
$(OUT)/exec_floor: floor/exec_floor.c
	$(CC) $(CFLAGS) -o $@ $<
# The same floor linked static-pie, as the kubehsm front end is: the floor of
# that design (no dynamic loader at all).
$(OUT)/exec_floor_static: floor/exec_floor.c
	$(CC) $(CFLAGS) -static-pie -o $@ $<
# Linked like the kubehsm front end (static-pie; on x86-64 its own entry).
$(OUT)/hop_floor: floor/hop_floor.c
	$(CC) $(CFLAGS) -static-pie $$(case "$$($(CC) -dumpmachine)" in x86_64-*linux*) \
		echo -Wl,-e,hop_entry ;; esac) -o $@ $<
# The login floor's keyring helper, linked as cache/kubehsm-keyops is.
$(OUT)/keyring_floor: floor/keyring_floor.c
	$(CC) $(CFLAGS) -static-pie -o $@ $<
# Its polkit check, loaded only when a system bus is there (pam_floor polkit=).
$(OUT)/floor_polkit.so: floor/floor_polkit.c
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-z,defs $$(pkg-config --cflags polkit-gobject-1) \
		-o $@ $< $$(pkg-config --libs polkit-gobject-1)
$(OUT)/loadgen: floor/loadgen.c
	$(CC) $(CFLAGS) -o $@ $<
$(OUT)/sign_floor: floor/sign_floor.c
	$(CC) $(CFLAGS) $$(pkg-config --cflags libcrypto) -o $@ $< $$(pkg-config --libs libcrypto)
$(OUT)/ssl_floor: floor/ssl_floor.c
	$(CC) $(CFLAGS) $$(pkg-config --cflags libcrypto) -o $@ $< $$(pkg-config --libs libcrypto)
$(OUT)/p11_floor: floor/p11_floor.c
	$(CC) $(CFLAGS) $$(pkg-config --cflags libp11 libcrypto) -o $@ $< $$(pkg-config --libs libp11 libcrypto)
# The login floor: a PAM module (raw PKCS#11 through p11-kit's header only).
$(OUT)/pam_floor.so: floor/pam_floor.c floor/pam_floor_p11.c floor/pam_floor_p11.h
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-z,defs $$(pkg-config --cflags p11-kit-1 libcrypto) \
		-o $@ floor/pam_floor.c floor/pam_floor_p11.c \
		$$(pkg-config --libs libcrypto libkeyutils) -lpam -ldl
# Issue #30 (bench/issuer.sh, bench/rush.sh): the pass-through PKCS#11 module
# that counts, times and delays every call; the filler that puts thousands of
# key pairs on a token; the delayed Unix-to-TCP hop of the network HSM.
$(OUT)/p11pass.so: floor/p11pass.c
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-z,defs $$(pkg-config --cflags p11-kit-1) \
		-o $@ $< -ldl
$(OUT)/p11fill: floor/p11fill.c
	$(CC) $(CFLAGS) $$(pkg-config --cflags p11-kit-1 libcrypto) -o $@ $< \
		$$(pkg-config --libs libcrypto) -ldl
$(OUT)/hsm_link: floor/hsm_link.c
	$(CC) $(CFLAGS) -o $@ $<
clean:
	rm -f $(PROGS)
.PHONY: all clean
