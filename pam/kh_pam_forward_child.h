/*
 * kh_pam_forward_child — the forwarded token's conversation, held by a
 * process that is the user (see kh_pam_forward_child.c for why).
 *
 * Root's side: start the child (which sends a hello: the token it chose
 * and that token's certificate, or why none), later send it the PIN with a
 * fresh challenge (its answer: the signature, or why not), end it.  The
 * wire format and its parsers are here too, for the unit tests
 * (tests/unit/pam/test_forward_child.c): every field is a 32-bit big-endian
 * length and that many bytes, a frame is a 32-bit length and its fields,
 * and every length has a hard cap below.  Anything else is refused.
 *
 * Return convention: int functions return 0 on success and -1 with err set.
 */
#ifndef KH_PAM_FORWARD_CHILD_H
#define KH_PAM_FORWARD_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/x509.h>

#include "lib/kh_challenge.h"
#include "lib/kh_error.h"
#include "lib/kh_pkcs11.h"
#include "lib/kh_token.h"

/* Hard caps of the answer fields. */
#define KH_FWD_CERT_MAX   16384      /* certificate DER */
#define KH_FWD_SIG_MAX    1024       /* signature */
#define KH_FWD_STR_MAX    256        /* label, serial, manufacturer, model */
#define KH_FWD_MSG_MAX    (KH_ERROR_MAX - 1)   /* the child's error message */
#define KH_FWD_FRAME_MAX  (KH_FWD_CERT_MAX + 8192)
/* How long root waits for each answer of the child. */
#define KH_FWD_TIMEOUT_MS 60000

/* Where the child's answer says it failed. */
enum kh_fwd_stage {
	KH_FWD_STAGE_NONE = 0,   /* it did not */
	KH_FWD_STAGE_LOGIN,      /* C_Login (code: KH_ERR_AUTH wrong PIN, KH_ERR_LOCKED) */
	KH_FWD_STAGE_KEY,        /* finding the certificate's private key */
	KH_FWD_STAGE_SIGN,       /* signing the challenge */
};

/* What the child found, before any PIN. */
struct kh_fwd_hello {
	enum kh_errcode code;            /* KH_OK: a token was chosen */
	enum kh_token_outcome outcome;   /* kh_token_choose's, when code is not KH_OK */
	unsigned pin_flags;              /* KH_P11_PIN_* */
	unsigned long slot_id;
	char *label, *serial, *manufacturer, *model;   /* control characters replaced */
	unsigned char *cert_der;         /* the chosen certificate (code KH_OK) */
	size_t cert_len;
	char *cert_label;                /* its CKA_LABEL */
	unsigned char id[KH_P11_ID_MAX]; /* its CKA_ID */
	size_t id_len;
	char msg[KH_ERROR_MAX];          /* why, when code is not KH_OK */
};

/* The child's one answer to the PIN. */
struct kh_fwd_answer {
	enum kh_errcode code;            /* KH_OK: logged in and signed */
	enum kh_fwd_stage stage;         /* where it failed */
	unsigned pin_flags;              /* read again after a failed login */
	unsigned char *sig;
	size_t sig_len;
	char msg[KH_ERROR_MAX];
};

/* One child, from start to end. */
struct kh_fwd;

/* What the child needs: all of it is root's, copied into it by fork. */
struct kh_fwd_spec {
	const char *module;              /* pkcs11.forward.module */
	const char *socket;              /* the user's checked socket */
	const struct kh_token_rules *rules;
	const char *user;
	const char *key_label;           /* token.key_label expanded */
	uid_t uid;
	gid_t gid;
};

/*
 * Start the child and read its hello (*hello: free with
 * kh_fwd_hello_clear).  NULL with err when it could not be started or its
 * hello is malformed or late (the child is then gone already).  A child
 * that found no token is no failure here: hello->code says so.
 */
struct kh_fwd *kh_fwd_start(const struct kh_fwd_spec *spec, struct kh_fwd_hello *hello,
			    kh_error *err);

/*
 * Send the PIN and a fresh random challenge; read the answer (free with
 * kh_fwd_answer_clear).  -1 with err when the answer is malformed or late,
 * or the child is gone; 0 otherwise, the child's own result in *answer.
 * The child has then ended.  With answer->code KH_OK, the signature is
 * not yet checked: kh_fwd_verify.
 */
int kh_fwd_prove(struct kh_fwd *f, const char *pin, struct kh_fwd_answer *answer,
		 kh_error *err);

/* The answer's signature over this child's challenge, with cert's public
 * key (which root parsed and validated).  KH_ERR_AUTH when it does not
 * verify. */
int kh_fwd_verify(const struct kh_fwd *f, X509 *cert, const struct kh_fwd_answer *answer,
		  kh_error *err);

/* Kill (if it has not ended) and reap the child; wipe and free.  NULL is fine. */
void kh_fwd_end(struct kh_fwd *f);

/* ---- the wire format, exposed for the unit tests ------------------------- */

struct kh_fwd_buf {
	unsigned char *data;
	size_t len, cap;
};

/* Append a frame to b.  -1 only when out of memory or a field is over its cap. */
int kh_fwd_encode_hello(struct kh_fwd_buf *b, const struct kh_fwd_hello *h);
int kh_fwd_encode_answer(struct kh_fwd_buf *b, const struct kh_fwd_answer *a);
int kh_fwd_encode_request(struct kh_fwd_buf *b, const char *pin,
			  const unsigned char *challenge, size_t len);
/* Wipe and free b's data (it may have held the PIN). */
void kh_fwd_buf_clear(struct kh_fwd_buf *b);

/* Parse one frame's payload (without its length prefix), exactly len
 * bytes.  KH_ERR_REFUSED for anything malformed, truncated or over a cap. */
int kh_fwd_parse_hello(const unsigned char *buf, size_t len, struct kh_fwd_hello *h,
		       kh_error *err);
int kh_fwd_parse_answer(const unsigned char *buf, size_t len, struct kh_fwd_answer *a,
			kh_error *err);
/* The child's side: the PIN (into pin, KH_P11_PIN_MAX + 1 bytes) and the
 * challenge (KH_CHALLENGE_LEN bytes). */
int kh_fwd_parse_request(const unsigned char *buf, size_t len, char *pin,
			 unsigned char *challenge, kh_error *err);
void kh_fwd_hello_clear(struct kh_fwd_hello *h);
void kh_fwd_answer_clear(struct kh_fwd_answer *a);

/* The hello's certificate, parsed by root: exactly cert_len bytes of DER.
 * KH_ERR_REFUSED when it is anything else.  X509_free the result. */
X509 *kh_fwd_hello_cert(const struct kh_fwd_hello *h, kh_error *err);

/* The signature check of kh_fwd_verify on an explicit challenge. */
int kh_fwd_verify_challenge(X509 *cert, const unsigned char *challenge, size_t len,
			    const struct kh_fwd_answer *answer, kh_error *err);

#endif
