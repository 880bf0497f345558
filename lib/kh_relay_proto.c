/*
 * kh_relay_proto — encode and decode the kubehsm-relayd control protocol.
 *
 * Both ends of the protocol are trusted more than a kube client (root on
 * control.sock, any local user on user.sock), but the decoder treats every
 * datagram as hostile all the same: strict jansson, every field typed and
 * bounded, unknown fields refused.  Documents that carry the session key
 * are built and parsed while the caller has kh_json_wipe_on_free enabled.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/kh_json.h"
#include "lib/kh_mem.h"
#include "lib/kh_json_doc.h"
#include "lib/kh_relay_proto.h"
#include "lib/kh_words.h"

#define KH_RELAY_USER_MAX    256
#define KH_RELAY_ERROR_MAX   1024
#define KH_RELAY_PEM_MAX     16384
/* 2^31: uids are 32-bit, and (uid_t)-1 is never a user. */
#define KH_RELAY_UID_MAX     ((json_int_t)UINT32_MAX - 1)

static const struct {
	enum kh_relay_op op;
	const char *name;
} kh_relay_ops[] = {
	{ KH_RELAY_OP_DELIVER, "deliver" },
	{ KH_RELAY_OP_FORGET, "forget" },
	{ KH_RELAY_OP_LIST, "list" },
};

static const char *const kh_relay_reasons[] = {
	[KH_RELAY_REVOKED] = "revoked",
	[KH_RELAY_LOGOUT] = "logout",
};

const char *
kh_relay_reason_name(enum kh_relay_reason reason)
{
	if ((size_t)reason >= sizeof(kh_relay_reasons) / sizeof(kh_relay_reasons[0]))
		return "?";
	return kh_relay_reasons[reason];
}

const char *
kh_relay_op_name(enum kh_relay_op op)
{
	size_t i;

	for (i = 0; i < sizeof(kh_relay_ops) / sizeof(kh_relay_ops[0]); i++) {
		if (kh_relay_ops[i].op == op)
			return kh_relay_ops[i].name;
	}
	return "?";
}

/* ------------------------------------------------------------------ */
/* field checks                                                         */

/* Every member of obj must be one of names. */
static int
kh_relay_known_fields(json_t *obj, const char *const *names, const char *where,
		      kh_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		const char *const *n;

		for (n = names; *n != NULL; n++) {
			if (strcmp(key, *n) == 0)
				break;
		}
		if (*n == NULL)
			return kh_fail(err, KH_ERR_INPUT, "%sunknown field \"%.40s\"", where, key);
	}
	return 0;
}

static int
kh_relay_get_int(json_t *obj, const char *key, const char *where, json_int_t min,
		 json_int_t max, bool required, json_int_t *out, bool *present, kh_error *err)
{
	json_t *v = json_object_get(obj, key);

	if (present != NULL)
		*present = v != NULL;
	if (v == NULL) {
		if (required)
			return kh_fail(err, KH_ERR_INPUT, "%s%s is missing", where, key);
		return 0;
	}
	if (!json_is_integer(v))
		return kh_fail(err, KH_ERR_INPUT, "%s%s must be an integer, not %s", where, key,
			       kh_json_type_name(v));
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return kh_fail(err, KH_ERR_INPUT, "%s%s is out of range", where, key);
	*out = json_integer_value(v);
	return 0;
}

static bool
kh_relay_printable(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			return false;
	}
	return true;
}

/* The relay's messages may leave the issuer empty (the cluster's own). */
static bool
kh_relay_issuer_ok(const char *s, size_t len)
{
	return len == 0 || kh_issuer_id_valid(s, len);
}

/*
 * A bounded string member copied into *dst.  kind: 'u' a user name
 * (1..256 printable), 'i' an issuer id (0..32 of [A-Za-z0-9._-]), 'p' PEM
 * text with `marker` in it, 'e' an error line, 'o' an origin member
 * (0..KH_RELAY_ORIGIN_MAX printable).
 */
static int
kh_relay_get_text(json_t *obj, const char *key, const char *where, char kind,
		  const char *marker, bool required, char **dst, kh_error *err)
{
	json_t *v;
	const char *s;
	size_t len, max;
	int rc;

	*dst = NULL;
	rc = required ? kh_json_required_string(obj, key, where, &v, err)
		      : kh_json_string(obj, key, where, &v, err);
	if (rc <= 0)
		return rc;
	s = json_string_value(v);
	len = json_string_length(v);
	max = kind == 'u' ? KH_RELAY_USER_MAX : kind == 'i' ? KH_ISSUER_ID_MAX :
	      kind == 'p' ? KH_RELAY_PEM_MAX : kind == 'o' ? KH_RELAY_ORIGIN_MAX :
	      KH_RELAY_ERROR_MAX;
	if (len > max || (kind == 'u' && len == 0))
		return kh_fail(err, KH_ERR_INPUT, "%s%s has a bad length", where, key);
	if ((kind == 'u' || kind == 'e' || kind == 'o') && !kh_relay_printable(s, len))
		return kh_fail(err, KH_ERR_INPUT, "%s%s contains a control character", where, key);
	if (kind == 'i' && !kh_relay_issuer_ok(s, len))
		return kh_fail(err, KH_ERR_INPUT, "%s%s is not an issuer id", where, key);
	if (kind == 'p' && (memmem(s, len, marker, strlen(marker)) == NULL))
		return kh_fail(err, KH_ERR_INPUT, "%s%s is not %s PEM text", where, key,
			       strcmp(key, "key") == 0 ? "private key" : "certificate");
	*dst = strndup(s, len);
	if (*dst == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 1;
}

/* ------------------------------------------------------------------ */
/* session                                                              */

static bool
kh_relay_origin_set(const struct kh_relay_origin *o)
{
	return o->service != NULL || o->rhost != NULL || o->tty != NULL;
}

/* {"service":..,"rhost":..,"tty":..} with the members that are set. */
static json_t *
kh_relay_origin_json(const struct kh_relay_origin *o)
{
	json_t *j = json_object();

	if (j == NULL ||
	    (o->service != NULL && json_object_set_new(j, "service", json_string(o->service)) != 0) ||
	    (o->rhost != NULL && json_object_set_new(j, "rhost", json_string(o->rhost)) != 0) ||
	    (o->tty != NULL && json_object_set_new(j, "tty", json_string(o->tty)) != 0)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

static int
kh_relay_origin_from_json(json_t *o, struct kh_relay_origin *out, kh_error *err)
{
	static const char *const fields[] = { "service", "rhost", "tty", NULL };
	const char *where = "session.origin: ";

	if (o == NULL)
		return 0;
	if (!json_is_object(o))
		return kh_fail(err, KH_ERR_INPUT, "session.origin must be an object");
	if (kh_relay_known_fields(o, fields, where, err) != 0 ||
	    kh_relay_get_text(o, "service", where, 'o', NULL, false, &out->service, err) < 0 ||
	    kh_relay_get_text(o, "rhost", where, 'o', NULL, false, &out->rhost, err) < 0 ||
	    kh_relay_get_text(o, "tty", where, 'o', NULL, false, &out->tty, err) < 0)
		return -1;
	return 0;
}

static json_t *
kh_relay_session_json(const struct kh_relay_session *s)
{
	json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:s, s:s}",
			      "uid", (json_int_t)s->uid,
			      "user", s->user,
			      "issuer", s->issuer != NULL ? s->issuer : "",
			      "expires", (json_int_t)s->expires,
			      "chain", s->chain_pem,
			      "key", s->key_pem);

	if (o != NULL && s->delivered != 0 &&
	    json_object_set_new(o, "delivered", json_integer((json_int_t)s->delivered)) != 0) {
		json_decref(o);
		return NULL;
	}
	if (o != NULL && kh_relay_origin_set(&s->origin) &&
	    json_object_set_new(o, "origin", kh_relay_origin_json(&s->origin)) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int
kh_relay_dump(json_t *doc, size_t max, const char *what, char **out, size_t *len,
	      kh_error *err)
{
	char *buf;
	size_t n;

	*out = NULL;
	*len = 0;
	if (doc == NULL)
		return kh_fail(err, KH_ERR_INPUT, "cannot encode the %s (a field is missing)", what);
	buf = kh_json_dump_secret(doc, &n);
	json_decref(doc);
	if (buf == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot encode the %s", what);
	if (n > max) {
		kh_secure_free(buf, n);
		return kh_fail(err, KH_ERR_INPUT, "the %s is too large (%zu bytes, at most %zu)",
			       what, n, max);
	}
	*out = buf;
	*len = n;
	return 0;
}

static bool
kh_relay_session_complete(const struct kh_relay_session *s)
{
	return s->user != NULL && s->chain_pem != NULL && s->key_pem != NULL;
}

int
kh_relay_session_encode(const struct kh_relay_session *s, char **out, size_t *len,
			kh_error *err)
{
	if (!kh_relay_session_complete(s))
		return kh_fail(err, KH_ERR_INPUT, "incomplete relay session");
	return kh_relay_dump(kh_relay_session_json(s), KH_RELAY_SESSION_MAX, "relay session",
			     out, len, err);
}

static int
kh_relay_session_from_json(json_t *o, struct kh_relay_session *s, kh_error *err)
{
	static const char *const fields[] = {
		"uid", "user", "issuer", "expires", "delivered", "chain", "key", "origin", NULL,
	};
	const char *where = "session: ";
	json_int_t uid = 0, expires = 0, delivered = 0;

	memset(s, 0, sizeof(*s));
	if (!json_is_object(o))
		return kh_fail(err, KH_ERR_INPUT, "session must be an object");
	if (kh_relay_known_fields(o, fields, where, err) != 0 ||
	    kh_relay_get_int(o, "uid", where, 0, KH_RELAY_UID_MAX, true, &uid, NULL, err) != 0 ||
	    kh_relay_get_int(o, "expires", where, 1, INT64_MAX / 2, true, &expires, NULL,
			     err) != 0 ||
	    kh_relay_get_int(o, "delivered", where, 0, INT64_MAX / 2, false, &delivered, NULL,
			     err) != 0 ||
	    kh_relay_get_text(o, "user", where, 'u', NULL, true, &s->user, err) < 0 ||
	    kh_relay_get_text(o, "issuer", where, 'i', NULL, true, &s->issuer, err) < 0 ||
	    kh_relay_get_text(o, "chain", where, 'p', "-----BEGIN CERTIFICATE-----", true,
			      &s->chain_pem, err) < 0 ||
	    kh_relay_get_text(o, "key", where, 'p', "PRIVATE KEY-----", true,
			      &s->key_pem, err) < 0 ||
	    kh_relay_origin_from_json(json_object_get(o, "origin"), &s->origin, err) != 0) {
		kh_relay_session_clear(s);
		return -1;
	}
	s->uid = (uid_t)uid;
	s->expires = (int64_t)expires;
	s->delivered = (int64_t)delivered;
	return 0;
}

int
kh_relay_session_decode(const char *buf, size_t len, struct kh_relay_session *s,
			kh_error *err)
{
	json_t *doc;
	int rc;

	memset(s, 0, sizeof(*s));
	if (kh_json_load_object(buf, len, KH_RELAY_SESSION_MAX, "relay session", &doc, err) != 0)
		return -1;
	rc = kh_relay_session_from_json(doc, s, err);
	json_decref(doc);
	return rc;
}

void
kh_relay_session_clear(struct kh_relay_session *s)
{
	if (s == NULL)
		return;
	free(s->user);
	free(s->issuer);
	free(s->chain_pem);
	kh_secure_strfree(s->key_pem);
	free(s->origin.service);
	free(s->origin.rhost);
	free(s->origin.tty);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------ */
/* requests                                                             */

int
kh_relay_request_encode(const struct kh_relay_request *req, char **out, size_t *len,
			kh_error *err)
{
	json_t *doc, *sess;

	*out = NULL;
	doc = json_pack("{s:i, s:s}", "v", KH_RELAY_PROTO_VERSION, "op",
			kh_relay_op_name(req->op));
	if (doc == NULL || req->op == KH_RELAY_OP_NONE) {
		json_decref(doc);
		return kh_fail(err, KH_ERR_INPUT, "no relay operation");
	}
	switch (req->op) {
	case KH_RELAY_OP_DELIVER:
		if (!kh_relay_session_complete(&req->session)) {
			json_decref(doc);
			return kh_fail(err, KH_ERR_INPUT, "incomplete relay session");
		}
		sess = kh_relay_session_json(&req->session);
		if (sess == NULL || json_object_set_new(doc, "session", sess) != 0) {
			json_decref(doc);
			return kh_fail(err, KH_ERR_INTERNAL, "cannot encode the relay session");
		}
		break;
	case KH_RELAY_OP_FORGET:
		if ((req->has_uid &&
		     json_object_set_new(doc, "uid", json_integer((json_int_t)req->uid)) != 0) ||
		    (req->issuer != NULL &&
		     json_object_set_new(doc, "issuer", json_string(req->issuer)) != 0) ||
		    (req->reason != KH_RELAY_REVOKED &&
		     json_object_set_new(doc, "reason",
					 json_string(kh_relay_reason_name(req->reason))) != 0)) {
			json_decref(doc);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
		break;
	default:
		break;
	}
	return kh_relay_dump(doc, KH_RELAY_MSG_MAX, "relay request", out, len, err);
}

static int
kh_relay_get_reason(json_t *doc, enum kh_relay_reason *out, kh_error *err)
{
	json_t *v;
	size_t i;
	int rc = kh_json_string(doc, "reason", "", &v, err);

	*out = KH_RELAY_REVOKED;
	if (rc <= 0)
		return rc;
	for (i = 0; i < sizeof(kh_relay_reasons) / sizeof(kh_relay_reasons[0]); i++) {
		if (strcmp(json_string_value(v), kh_relay_reasons[i]) == 0) {
			*out = (enum kh_relay_reason)i;
			return 0;
		}
	}
	return kh_fail(err, KH_ERR_INPUT, "reason must be \"logout\" or \"revoked\"");
}

static int
kh_relay_check_version(json_t *doc, kh_error *err)
{
	json_int_t v = 0;

	if (kh_relay_get_int(doc, "v", "", 0, INT_MAX, true, &v, NULL, err) != 0)
		return -1;
	if (v != KH_RELAY_PROTO_VERSION)
		return kh_fail(err, KH_ERR_UNSUPPORTED, "relay protocol version %lld is not %d",
			       (long long)v, KH_RELAY_PROTO_VERSION);
	return 0;
}

int
kh_relay_request_decode(const char *buf, size_t len, struct kh_relay_request *req,
			kh_error *err)
{
	static const char *const deliver_fields[] = { "v", "op", "session", NULL };
	static const char *const forget_fields[] = { "v", "op", "uid", "issuer", "reason", NULL };
	static const char *const list_fields[] = { "v", "op", NULL };
	json_t *doc, *opv;
	json_int_t uid = 0;
	const char *op;
	size_t i;
	int rc = -1;

	memset(req, 0, sizeof(*req));
	if (kh_json_load_object(buf, len, KH_RELAY_MSG_MAX, "relay request", &doc, err) != 0)
		return -1;
	if (kh_relay_check_version(doc, err) != 0 ||
	    kh_json_required_string(doc, "op", "", &opv, err) < 0)
		goto out;
	op = json_string_value(opv);
	for (i = 0; i < sizeof(kh_relay_ops) / sizeof(kh_relay_ops[0]); i++) {
		if (strcmp(op, kh_relay_ops[i].name) == 0)
			req->op = kh_relay_ops[i].op;
	}
	switch (req->op) {
	case KH_RELAY_OP_DELIVER:
		if (kh_relay_known_fields(doc, deliver_fields, "", err) != 0)
			goto out;
		if (json_object_get(doc, "session") == NULL) {
			kh_fail(err, KH_ERR_INPUT, "deliver without a session");
			goto out;
		}
		rc = kh_relay_session_from_json(json_object_get(doc, "session"), &req->session, err);
		break;
	case KH_RELAY_OP_FORGET:
		if (kh_relay_known_fields(doc, forget_fields, "", err) != 0 ||
		    kh_relay_get_int(doc, "uid", "", 0, KH_RELAY_UID_MAX, false, &uid,
				     &req->has_uid, err) != 0 ||
		    kh_relay_get_text(doc, "issuer", "", 'i', NULL, false, &req->issuer, err) < 0 ||
		    kh_relay_get_reason(doc, &req->reason, err) != 0)
			goto out;
		req->uid = (uid_t)uid;
		rc = 0;
		break;
	case KH_RELAY_OP_LIST:
		rc = kh_relay_known_fields(doc, list_fields, "", err);
		break;
	default:
		kh_fail(err, KH_ERR_INPUT, "unknown relay operation \"%.32s\"", op);
		break;
	}
out:
	json_decref(doc);
	if (rc != 0)
		kh_relay_request_clear(req);
	return rc;
}

void
kh_relay_request_clear(struct kh_relay_request *req)
{
	if (req == NULL)
		return;
	free(req->issuer);
	kh_relay_session_clear(&req->session);
	memset(req, 0, sizeof(*req));
}

/* ------------------------------------------------------------------ */
/* replies                                                              */

static json_t *
kh_relay_list_json(const struct kh_relay_reply *rep)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr != NULL && i < rep->nlist; i++) {
		const struct kh_relay_listing *l = &rep->list[i];
		json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:I}",
				      "uid", (json_int_t)l->uid,
				      "user", l->user != NULL ? l->user : "",
				      "issuer", l->issuer != NULL ? l->issuer : "",
				      "expires", (json_int_t)l->expires,
				      "connections", (json_int_t)l->connections);

		if (o == NULL || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

int
kh_relay_reply_encode(const struct kh_relay_reply *rep, char **out, size_t *len,
		      kh_error *err)
{
	json_t *doc = json_pack("{s:i, s:b}", "v", KH_RELAY_PROTO_VERSION, "ok", rep->ok);
	json_t *list;

	if (doc == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	if (!rep->ok &&
	    json_object_set_new(doc, "error", json_string(rep->error != NULL ? rep->error :
							   "failed")) != 0)
		goto oom;
	if (rep->has_counts &&
	    (json_object_set_new(doc, "sessions", json_integer(rep->sessions)) != 0 ||
	     json_object_set_new(doc, "connections", json_integer(rep->connections)) != 0))
		goto oom;
	if (rep->has_list) {
		list = kh_relay_list_json(rep);
		if (list == NULL || json_object_set_new(doc, "list", list) != 0)
			goto oom;
	}
	return kh_relay_dump(doc, KH_RELAY_LIST_MAX, "relay reply", out, len, err);
oom:
	json_decref(doc);
	return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
}

static int
kh_relay_listing_from_json(json_t *o, struct kh_relay_listing *l, kh_error *err)
{
	static const char *const fields[] = {
		"uid", "user", "issuer", "expires", "connections", NULL,
	};
	json_int_t uid = 0, expires = 0, conns = 0;

	if (!json_is_object(o))
		return kh_fail(err, KH_ERR_INPUT, "list entries must be objects");
	if (kh_relay_known_fields(o, fields, "list: ", err) != 0 ||
	    kh_relay_get_int(o, "uid", "list: ", 0, KH_RELAY_UID_MAX, true, &uid, NULL, err) != 0 ||
	    kh_relay_get_int(o, "expires", "list: ", 0, INT64_MAX / 2, true, &expires, NULL,
			     err) != 0 ||
	    kh_relay_get_int(o, "connections", "list: ", 0, UINT_MAX, true, &conns, NULL,
			     err) != 0 ||
	    kh_relay_get_text(o, "user", "list: ", 'e', NULL, true, &l->user, err) < 0 ||
	    kh_relay_get_text(o, "issuer", "list: ", 'i', NULL, true, &l->issuer, err) < 0)
		return -1;
	l->uid = (uid_t)uid;
	l->expires = (int64_t)expires;
	l->connections = (unsigned)conns;
	return 0;
}

int
kh_relay_reply_decode(const char *buf, size_t len, struct kh_relay_reply *rep,
		      kh_error *err)
{
	static const char *const fields[] = {
		"v", "ok", "error", "sessions", "connections", "list", NULL,
	};
	json_t *doc, *list, *okv;
	json_int_t n = 0;
	bool present = false;
	size_t i;
	int rc = -1;

	memset(rep, 0, sizeof(*rep));
	if (kh_json_load_object(buf, len, KH_RELAY_LIST_MAX, "relay reply", &doc, err) != 0)
		return -1;
	okv = json_object_get(doc, "ok");
	if (kh_relay_check_version(doc, err) != 0 ||
	    kh_relay_known_fields(doc, fields, "reply: ", err) != 0)
		goto out;
	if (!json_is_boolean(okv)) {
		kh_fail(err, KH_ERR_INPUT, "reply: ok must be true or false");
		goto out;
	}
	rep->ok = json_is_true(okv);
	if (kh_relay_get_text(doc, "error", "reply: ", 'e', NULL, !rep->ok, &rep->error,
			      err) < 0 ||
	    kh_relay_get_int(doc, "sessions", "reply: ", 0, UINT_MAX, false, &n, &present,
			     err) != 0)
		goto out;
	rep->sessions = (unsigned)n;
	rep->has_counts = present;
	if (kh_relay_get_int(doc, "connections", "reply: ", 0, UINT_MAX, present, &n, NULL,
			     err) != 0)
		goto out;
	rep->connections = (unsigned)n;
	list = json_object_get(doc, "list");
	if (list != NULL) {
		if (!json_is_array(list)) {
			kh_fail(err, KH_ERR_INPUT, "reply: list must be an array");
			goto out;
		}
		rep->has_list = true;
		rep->list = calloc(json_array_size(list) + 1, sizeof(*rep->list));
		if (rep->list == NULL) {
			kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			goto out;
		}
		for (i = 0; i < json_array_size(list); i++) {
			rep->nlist++;
			if (kh_relay_listing_from_json(json_array_get(list, i), &rep->list[i],
						       err) != 0)
				goto out;
		}
	}
	rc = 0;
out:
	json_decref(doc);
	if (rc != 0)
		kh_relay_reply_clear(rep);
	return rc;
}

void
kh_relay_reply_clear(struct kh_relay_reply *rep)
{
	size_t i;

	if (rep == NULL)
		return;
	free(rep->error);
	for (i = 0; i < rep->nlist; i++) {
		free(rep->list[i].user);
		free(rep->list[i].issuer);
	}
	free(rep->list);
	memset(rep, 0, sizeof(*rep));
}
