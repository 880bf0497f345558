/*
 * kh_keyops_wire — what the keyring helper (kubehsm-keyops) and its caller
 * (kh_keyops.c) say to each other over one stream socket.  Internal to
 * cache/; both ends come from the same build, and the version says so.
 *
 * Request (caller -> helper): struct wire_request, then nops times
 * struct wire_op followed by desclen bytes of description.  Nothing in it
 * is secret: key serials, keyring names, descriptions, a uid and a gid.
 *
 * Answers (helper -> caller): struct wire_head frames, each followed by
 * desclen bytes of description and len bytes of payload (a key's content,
 * possibly SECRET), ending with a WIRE_DONE frame, or a WIRE_SETUP frame
 * when the helper could not start (not the user, another protocol).
 */
#ifndef KH_KEYOPS_WIRE_H
#define KH_KEYOPS_WIRE_H

#include <stdint.h>

#include "cache/kh_keyops.h"

#define WIRE_MAGIC     0x4b484b4fu       /* "KHKO" */
#define WIRE_VERSION   2u
#define WIRE_DONE      UINT32_MAX        /* the helper finished every operation */
#define WIRE_SETUP     (UINT32_MAX - 1)  /* the helper could not become the user */

#define KH_KEYOPS_MAX_OPS     1024
#define KH_KEYOPS_PAYLOAD_MAX 8192       /* a record is at most 6144 bytes */

struct wire_request {
	uint32_t magic;
	uint32_t version;
	uint32_t uid;
	uint32_t gid;
	uint32_t nops;
};

struct wire_op {
	uint32_t kind;
	int32_t key;
	int32_t ring;
	uint32_t read;
	uint32_t desclen;      /* < KH_KEYOPS_DESC_MAX */
};

struct wire_head {
	uint32_t magic;
	uint32_t op;
	int32_t err;
	int32_t key;
	uint32_t owner;
	uint32_t perm;
	uint32_t desclen;
	uint32_t len;
};

/* The helper's side: read one request from fd, become the uid it names,
 * run its operations and answer on fd.  Returns the helper's exit status. */
int kh_keyops_serve(int fd);

#endif
