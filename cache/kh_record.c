/*
 * kh_record — encode and decode the keyring session record.
 *
 * The decoder treats the payload as hostile: the kernel guarantees who
 * wrote it only as far as the key's owner and permissions, which the cache
 * checks separately.  Every field is required, typed, bounded; unknown
 * fields are refused so a future format cannot be half-understood.
 *
 * Layout (see kh_record.h): one line of JSON with every small field and the
 * length of each part, then the parts themselves, back to back.  The parts
 * are four fifths of the record and stay out of the header's JSON lexer
 * (which copies and checks byte by byte): `kubehsm exec` reads this record
 * on every kube request, and serves its exec part as it is.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/kh_exec_proto.h"
#include "lib/kh_json.h"
#include "lib/kh_mem.h"
#include "cache/kh_record.h"

#define KH_RECORD_KIND      "kubehsm-session"
#define KH_NAME_MAX         256     /* user names, kube names, groups */
#define KH_URI_MAX          1024

static const char *const record_fields[] = {
	"kind", "v", "uid", "user", "issuer", "scope", "kube_user", "groups",
	"created", "expires", "logins", "token_uri", "parts", NULL,
};

/* The parts after the header line, in this order; "parts" in the header
 * gives each one's length in bytes. */
enum { KH_PART_EXEC, KH_PART_CHAIN, KH_PART_TOKEN_CERT, KH_PART_COUNT };
static const char *const part_names[KH_PART_COUNT] = { "exec", "chain", "token_cert" };

/* Issuer ids appear in key descriptions; "" is the default issuer's. */
static bool
issuer_id_valid(const char *id)
{
	return id[0] == '\0' || kh_issuer_id_valid(id, strlen(id));
}

int
kh_record_description(const char *kind, const char *issuer_id, char *buf,
		      size_t buflen, kh_error *err)
{
	int n;

	if (issuer_id == NULL)
		issuer_id = "";
	if (!issuer_id_valid(issuer_id))
		return kh_fail(err, KH_ERR_INPUT, "invalid issuer id '%.40s'",
			       issuer_id);
	if (issuer_id[0] == '\0')
		n = snprintf(buf, buflen, "kubehsm:%s:v%d", kind, KH_RECORD_DESC_VERSION);
	else
		n = snprintf(buf, buflen, "kubehsm:%s:v%d:%s", kind,
			     KH_RECORD_DESC_VERSION, issuer_id);
	if (n < 0 || (size_t)n >= buflen)
		return kh_fail(err, KH_ERR_INTERNAL, "key description too long");
	return 0;
}

/* Text fields must be printable: they reach logs, terminals and JSON. */
static int
text_valid(const char *s, size_t len, size_t max, int allow_newlines)
{
	size_t i;

	if (len == 0 || len > max || strlen(s) != len)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n' && allow_newlines)
			continue;
		if (c < 0x20 || c == 0x7f)
			return 0;
	}
	return 1;
}

/* The bytes PEM text may hold: printable ASCII, line ends, and anything
 * past ASCII (comments in a certificate file may be UTF-8).  A table: exec
 * checks the token certificate on every kube request. */
static const unsigned char pem_text_byte[256] = {
	['\n'] = 1, [0x20 ... 0x7e] = 1, [0x80 ... 0xff] = 1,
};

/* PEM text of len bytes at s (not necessarily NUL-terminated): printable,
 * lines, no NUL, starting with an armour line. */
static int
pem_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	if (len < 11 || len > KH_RECORD_MAX || memcmp(s, "-----BEGIN ", 11) != 0)
		return 0;
	while (p < end && pem_text_byte[*p])
		p++;
	return p == end;
}

/* ---- encode ------------------------------------------------------------ */

/* A header text field as get_text will read it back (NULL: empty). */
static int
header_text_ok(const char *s, size_t max, int allow_empty)
{
	size_t len = s != NULL ? strnlen(s, max + 1) : 0;

	if (len == 0)
		return allow_empty;
	return text_valid(s, len, max, 0);
}

static int
record_shape_ok(const struct kh_record *rec, kh_error *err)
{
	size_t i;

	/* key_pem may be NULL: with session.deliver = "relay" only the relay has it. */
	if (rec->user == NULL || rec->kube_user == NULL || rec->cert_chain_pem == NULL ||
	    rec->token_cert_pem == NULL)
		return kh_fail(err, KH_ERR_INPUT, "session record is incomplete");
	/* What the decoder would refuse is not written: a record kubehsm exec
	 * cannot read would only show up at the user's first kubectl. */
	if (!header_text_ok(rec->user, KH_NAME_MAX, 0) ||
	    !header_text_ok(rec->kube_user, KH_NAME_MAX, 0) ||
	    !header_text_ok(rec->issuer_id, KH_ISSUER_ID_MAX, 1) ||
	    !header_text_ok(rec->token_uri, KH_URI_MAX, 1))
		return kh_fail(err, KH_ERR_INPUT, "session record: a user name, issuer id or "
			       "token URI that is empty, too long or not printable (token URI: "
			       "at most %d bytes)", KH_URI_MAX);
	if (rec->ngroups > KH_RECORD_MAX_GROUPS)
		return kh_fail(err, KH_ERR_INPUT, "too many groups (%zu, at most %d)",
			       rec->ngroups, KH_RECORD_MAX_GROUPS);
	for (i = 0; i < rec->ngroups; i++)
		if (rec->groups[i] == NULL ||
		    !text_valid(rec->groups[i], strlen(rec->groups[i]), KH_NAME_MAX, 0))
			return kh_fail(err, KH_ERR_INPUT, "invalid group name");
	if (rec->expires <= rec->created)
		return kh_fail(err, KH_ERR_INPUT, "session expires before it is created");
	if (rec->logins > KH_LOGINS_MAX)
		return kh_fail(err, KH_ERR_INPUT, "login count out of range");
	return 0;
}

static json_t *
groups_to_json(const struct kh_record *rec)
{
	json_t *arr = json_array();
	size_t i;

	if (arr == NULL)
		return NULL;
	for (i = 0; i < rec->ngroups; i++) {
		if (json_array_append_new(arr, json_string(rec->groups[i])) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* The header line: every field but the parts, whose lengths it gives. */
static json_t *
header_to_json(const struct kh_record *rec, const size_t part_len[KH_PART_COUNT])
{
	return json_pack("{s:s, s:i, s:I, s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:I,"
			 " s:s, s:{s:I, s:I, s:I}}",
			 "kind", KH_RECORD_KIND,
			 "v", KH_RECORD_VERSION,
			 "uid", (json_int_t)rec->uid,
			 "user", rec->user,
			 "issuer", rec->issuer_id ? rec->issuer_id : "",
			 "scope", kh_scope_name(rec->scope),
			 "kube_user", rec->kube_user,
			 "groups", groups_to_json(rec),
			 "created", (json_int_t)rec->created,
			 "expires", (json_int_t)rec->expires,
			 "logins", (json_int_t)rec->logins,
			 "token_uri", rec->token_uri ? rec->token_uri : "",
			 "parts",
			 part_names[KH_PART_EXEC], (json_int_t)part_len[KH_PART_EXEC],
			 part_names[KH_PART_CHAIN], (json_int_t)part_len[KH_PART_CHAIN],
			 part_names[KH_PART_TOKEN_CERT], (json_int_t)part_len[KH_PART_TOKEN_CERT]);
}

/*
 * The parts: with the session key, the rendered exec answer (the chain and
 * the key live only there); without it (the relay holds the key), the
 * chain as PEM.  *answer is the rendered answer to free (secret), or NULL.
 */
static int
encode_parts(const struct kh_record *rec, const char *part[KH_PART_COUNT],
	     size_t part_len[KH_PART_COUNT], char **answer, size_t *answer_len,
	     kh_error *err)
{
	static const char *const what[] = { "chain", "key", "token_cert" };
	const char *const pems[] = { rec->cert_chain_pem, rec->key_pem, rec->token_cert_pem };
	size_t i;

	*answer = NULL;
	*answer_len = 0;
	for (i = 0; i < KH_PART_COUNT; i++) {
		part[i] = NULL;
		part_len[i] = 0;
	}
	for (i = 0; i < 3; i++)
		if (pems[i] != NULL && !pem_valid(pems[i], strnlen(pems[i], KH_RECORD_MAX + 1)))
			return kh_fail(err, KH_ERR_INPUT, "session record: the %s is not PEM "
				       "text of at most %d bytes", what[i], KH_RECORD_MAX);
	if (rec->key_pem != NULL) {
		if (kh_exec_answer_render((time_t)rec->expires, rec->cert_chain_pem,
					  rec->key_pem, answer, answer_len, err) != 0)
			return -1;
		part[KH_PART_EXEC] = *answer;
		part_len[KH_PART_EXEC] = *answer_len;
	} else {
		part[KH_PART_CHAIN] = rec->cert_chain_pem;
		part_len[KH_PART_CHAIN] = strlen(rec->cert_chain_pem);
	}
	part[KH_PART_TOKEN_CERT] = rec->token_cert_pem;
	part_len[KH_PART_TOKEN_CERT] = strlen(rec->token_cert_pem);
	return 0;
}

int
kh_record_encode(const struct kh_record *rec, char **out, size_t *len,
		 kh_error *err)
{
	const char *part[KH_PART_COUNT];
	size_t part_len[KH_PART_COUNT], hlen, total, off, i, answer_len;
	char *header, *text, *answer;
	json_t *doc;

	*out = NULL;
	*len = 0;
	if (record_shape_ok(rec, err) != 0 ||
	    encode_parts(rec, part, part_len, &answer, &answer_len, err) != 0)
		return -1;
	doc = header_to_json(rec, part_len);
	header = doc != NULL ? kh_json_dump_secret(doc, &hlen) : NULL;   /* compact: no raw newline */
	json_decref(doc);
	if (header == NULL) {
		kh_secure_free(answer, answer_len + 1);
		return kh_fail(err, KH_ERR_INTERNAL,
			       "cannot encode the session record (invalid UTF-8 or out of memory)");
	}
	total = hlen + 1;   /* each part <= KH_RECORD_MAX: no overflow */
	for (i = 0; i < KH_PART_COUNT; i++)
		total += part_len[i];
	if (total > KH_RECORD_MAX) {
		free(header);
		kh_secure_free(answer, answer_len + 1);
		return kh_fail(err, KH_ERR_INPUT,
			       "session record is %zu bytes, over the %d-byte limit "
			       "(too many groups or too long a certificate chain)",
			       total, KH_RECORD_MAX);
	}
	text = malloc(total + 1);
	if (text == NULL) {
		free(header);
		kh_secure_free(answer, answer_len + 1);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	memcpy(text, header, hlen);
	text[hlen] = '\n';
	off = hlen + 1;
	for (i = 0; i < KH_PART_COUNT; i++) {
		if (part_len[i] > 0)
			memcpy(text + off, part[i], part_len[i]);
		off += part_len[i];
	}
	text[total] = '\0';
	free(header);   /* holds no secret: the key is not in the header */
	kh_secure_free(answer, answer_len + 1);
	*out = text;
	*len = total;
	return 0;
}

/* ---- decode ------------------------------------------------------------ */

static int
get_text(json_t *doc, const char *name, size_t max, int allow_empty,
	 char **out, kh_error *err)
{
	json_t *v = json_object_get(doc, name);
	const char *s;
	size_t len;

	if (!json_is_string(v))
		return kh_fail(err, KH_ERR_REFUSED, "record field '%s' is missing or not a string", name);
	s = json_string_value(v);
	len = json_string_length(v);
	if (!(allow_empty && len == 0) && !text_valid(s, len, max, 0))
		return kh_fail(err, KH_ERR_REFUSED, "record field '%s' is invalid", name);
	*out = strdup(s);
	return *out ? 0 : kh_fail(err, KH_ERR_INTERNAL, "out of memory");
}

/* Copy PEM part i out of the record body. */
static int
take_pem(const char *part, size_t len, size_t i, char **out, kh_error *err)
{
	if (!pem_valid(part, len))   /* also refuses an embedded NUL */
		return kh_fail(err, KH_ERR_REFUSED, "record %s is not PEM text", part_names[i]);
	*out = strndup(part, len);
	return *out != NULL ? 0 : kh_fail(err, KH_ERR_INTERNAL, "out of memory");
}

static int
get_int(json_t *doc, const char *name, json_int_t min, json_int_t max,
	json_int_t *out, kh_error *err)
{
	json_t *v = json_object_get(doc, name);

	if (!json_is_integer(v))
		return kh_fail(err, KH_ERR_REFUSED, "record field '%s' is missing or not an integer", name);
	*out = json_integer_value(v);
	if (*out < min || *out > max)
		return kh_fail(err, KH_ERR_REFUSED, "record field '%s' is out of range", name);
	return 0;
}

static int
check_known_fields(json_t *doc, kh_error *err)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(doc, key, v) {
		for (i = 0; record_fields[i] != NULL; i++)
			if (strcmp(key, record_fields[i]) == 0)
				break;
		if (record_fields[i] == NULL)
			return kh_fail(err, KH_ERR_REFUSED, "record has an unknown field");
	}
	return 0;
}

static int
decode_groups(json_t *doc, struct kh_record *rec, kh_error *err)
{
	json_t *arr = json_object_get(doc, "groups"), *v;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) > KH_RECORD_MAX_GROUPS)
		return kh_fail(err, KH_ERR_REFUSED, "record field 'groups' is invalid");
	rec->groups = calloc(json_array_size(arr) + 1, sizeof(char *));
	if (rec->groups == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v) ||
		    !text_valid(json_string_value(v), json_string_length(v), KH_NAME_MAX, 0))
			return kh_fail(err, KH_ERR_REFUSED, "record field 'groups' is invalid");
		rec->groups[i] = strdup(json_string_value(v));
		if (rec->groups[i] == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		rec->ngroups = i + 1;
	}
	return 0;
}

static int
decode_fields(json_t *doc, struct kh_record *rec, kh_error *err)
{
	json_int_t v, uid, created, expires, logins;
	const char *kind, *scope;

	kind = json_string_value(json_object_get(doc, "kind"));
	if (kind == NULL || strcmp(kind, KH_RECORD_KIND) != 0)
		return kh_fail(err, KH_ERR_REFUSED, "not a kubehsm session record");
	if (get_int(doc, "v", 0, INT32_MAX, &v, err) != 0)
		return -1;
	if (v != KH_RECORD_VERSION)
		return kh_fail(err, KH_ERR_REFUSED,
			       "session record version %" JSON_INTEGER_FORMAT
			       " is not understood (this kubehsm reads version %d)",
			       v, KH_RECORD_VERSION);
	if (check_known_fields(doc, err) != 0)
		return -1;
	rec->version = (int)v;
	if (get_int(doc, "uid", 0, (json_int_t)UINT32_MAX - 1, &uid, err) != 0 ||
	    get_int(doc, "created", 0, INT64_MAX, &created, err) != 0 ||
	    get_int(doc, "expires", 0, INT64_MAX, &expires, err) != 0 ||
	    get_int(doc, "logins", 0, KH_LOGINS_MAX, &logins, err) != 0)
		return -1;
	rec->uid = (uid_t)uid;
	rec->created = created;
	rec->expires = expires;
	rec->logins = (unsigned)logins;
	if (expires <= created)
		return kh_fail(err, KH_ERR_REFUSED, "record expires before it was created");

	scope = json_string_value(json_object_get(doc, "scope"));
	if (scope != NULL && strcmp(scope, "user") == 0)
		rec->scope = KH_SCOPE_USER;
	else if (scope != NULL && strcmp(scope, "session") == 0)
		rec->scope = KH_SCOPE_SESSION;
	else
		return kh_fail(err, KH_ERR_REFUSED, "record field 'scope' is invalid");

	if (get_text(doc, "user", KH_NAME_MAX, 0, &rec->user, err) != 0 ||
	    get_text(doc, "issuer", KH_ISSUER_ID_MAX, 1, &rec->issuer_id, err) != 0 ||
	    get_text(doc, "kube_user", KH_NAME_MAX, 0, &rec->kube_user, err) != 0 ||
	    get_text(doc, "token_uri", KH_URI_MAX, 1, &rec->token_uri, err) != 0 ||
	    decode_groups(doc, rec, err) != 0)
		return -1;
	if (!issuer_id_valid(rec->issuer_id))
		return kh_fail(err, KH_ERR_REFUSED, "record field 'issuer' is invalid");
	return 0;
}

/* The parts after the header: exactly the lengths "parts" names, in order,
 * filling the rest of the record; one of exec and chain, never both. */
static int
decode_parts(json_t *doc, const char *body, size_t body_len, enum kh_record_take take,
	     struct kh_record *rec, kh_error *err)
{
	json_t *lens = json_object_get(doc, "parts");
	const char *part[KH_PART_COUNT];
	size_t n[KH_PART_COUNT], off = 0, i;
	json_int_t v;

	if (!json_is_object(lens) || json_object_size(lens) != KH_PART_COUNT)
		return kh_fail(err, KH_ERR_REFUSED, "record field 'parts' is invalid");
	for (i = 0; i < KH_PART_COUNT; i++) {
		if (get_int(lens, part_names[i], i == KH_PART_TOKEN_CERT ? 1 : 0, KH_RECORD_MAX,
			    &v, err) != 0)
			return -1;
		if ((size_t)v > body_len - off)
			return kh_fail(err, KH_ERR_REFUSED,
				       "session record is malformed (shorter than its parts)");
		part[i] = body + off;
		n[i] = (size_t)v;
		off += n[i];
	}
	if (off != body_len)
		return kh_fail(err, KH_ERR_REFUSED,
			       "session record is malformed (bytes after its parts)");
	if ((n[KH_PART_EXEC] == 0) == (n[KH_PART_CHAIN] == 0))
		return kh_fail(err, KH_ERR_REFUSED, "session record is malformed "
			       "(it must hold either the exec answer or the certificate chain)");
	if (!pem_valid(part[KH_PART_TOKEN_CERT], n[KH_PART_TOKEN_CERT]))
		return kh_fail(err, KH_ERR_REFUSED, "record token_cert is not PEM text");
	if (n[KH_PART_CHAIN] > 0 &&
	    take_pem(part[KH_PART_CHAIN], n[KH_PART_CHAIN], KH_PART_CHAIN, &rec->cert_chain_pem,
		     err) != 0)
		return -1;
	if (n[KH_PART_EXEC] > 0) {
		/* The exact shape the writer renders, with this record's own
		 * expiry: what exec serves is well-formed and says when the
		 * session ends. */
		if (kh_exec_answer_check(part[KH_PART_EXEC], n[KH_PART_EXEC],
					 (time_t)rec->expires, err) != 0)
			return -1;
		if (take == KH_RECORD_TAKE_ANSWER) {
			rec->exec_answer = strndup(part[KH_PART_EXEC], n[KH_PART_EXEC]);
			if (rec->exec_answer == NULL)
				return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
			rec->exec_answer_len = n[KH_PART_EXEC];
		} else if (kh_exec_answer_pems(part[KH_PART_EXEC], n[KH_PART_EXEC],
					       take == KH_RECORD_TAKE_KEY ? NULL : &rec->cert_chain_pem,
					       &rec->key_pem, err) != 0) {
			return -1;
		}
	}
	if (take != KH_RECORD_TAKE_ANSWER &&
	    (take_pem(part[KH_PART_TOKEN_CERT], n[KH_PART_TOKEN_CERT], KH_PART_TOKEN_CERT,
		      &rec->token_cert_pem, err) != 0))
		return -1;
	return 0;
}

int
kh_record_decode_take(const char *buf, size_t len, enum kh_record_take take,
		      struct kh_record **out, kh_error *err)
{
	struct kh_record *rec;
	json_error_t jerr;
	const char *nl;
	json_t *doc;
	size_t hlen;

	*out = NULL;
	if (len == 0 || len > KH_RECORD_MAX)
		return kh_fail(err, KH_ERR_REFUSED,
			       "session record size %zu is outside 1..%d bytes", len, KH_RECORD_MAX);
	nl = memchr(buf, '\n', len);
	if (nl == NULL)
		return kh_fail(err, KH_ERR_REFUSED, "session record is malformed (no header line)");
	hlen = (size_t)(nl - buf);
	doc = json_loadb(buf, hlen, KH_JSON_DECODE_FLAGS, &jerr);
	if (doc == NULL)
		return kh_fail(err, KH_ERR_REFUSED, "session record is malformed (%s)", jerr.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return kh_fail(err, KH_ERR_REFUSED, "session record is not a JSON object");
	}
	rec = calloc(1, sizeof(*rec));
	if (rec == NULL) {
		json_decref(doc);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	if (decode_fields(doc, rec, err) != 0 ||
	    decode_parts(doc, nl + 1, len - hlen - 1, take, rec, err) != 0) {
		json_decref(doc);
		kh_record_free(rec);
		return -1;
	}
	json_decref(doc);
	*out = rec;
	return 0;
}

int
kh_record_decode(const char *buf, size_t len, struct kh_record **out, kh_error *err)
{
	return kh_record_decode_take(buf, len, KH_RECORD_TAKE_PEMS, out, err);
}

int
kh_record_decode_answer(const char *buf, size_t len, struct kh_record **out,
			kh_error *err)
{
	return kh_record_decode_take(buf, len, KH_RECORD_TAKE_ANSWER, out, err);
}

int
kh_record_check(const struct kh_record *rec, uid_t uid, int64_t now,
		kh_error *err)
{
	if (rec->uid != uid)
		return kh_fail(err, KH_ERR_REFUSED,
			       "session record names uid %u, not the caller's uid %u",
			       (unsigned)rec->uid, (unsigned)uid);
	if (now >= rec->expires)
		return kh_fail(err, KH_ERR_EXPIRED, "the kube session expired");
	return 0;
}

struct kh_record *
kh_record_dup(const struct kh_record *rec)
{
	struct kh_record *d = calloc(1, sizeof(*d));
	size_t i;

	if (d == NULL)
		return NULL;
	*d = *rec;
	d->groups = NULL;
	d->ngroups = 0;
	d->user = kh_strdup_or_null(rec->user);
	d->issuer_id = kh_strdup_or_null(rec->issuer_id);
	d->kube_user = kh_strdup_or_null(rec->kube_user);
	d->cert_chain_pem = kh_strdup_or_null(rec->cert_chain_pem);
	d->key_pem = kh_strdup_or_null(rec->key_pem);
	d->token_cert_pem = kh_strdup_or_null(rec->token_cert_pem);
	d->token_uri = kh_strdup_or_null(rec->token_uri);
	d->exec_answer = rec->exec_answer != NULL ? strndup(rec->exec_answer, rec->exec_answer_len)
						   : NULL;
	d->groups = calloc(rec->ngroups + 1, sizeof(char *));
	if (d->groups == NULL)
		goto fail;
	for (i = 0; i < rec->ngroups; i++) {
		d->groups[i] = strdup(rec->groups[i]);
		if (d->groups[i] == NULL)
			goto fail;
		d->ngroups = i + 1;
	}
	if ((rec->user && !d->user) || (rec->issuer_id && !d->issuer_id) ||
	    (rec->kube_user && !d->kube_user) || (rec->cert_chain_pem && !d->cert_chain_pem) ||
	    (rec->key_pem && !d->key_pem) || (rec->token_cert_pem && !d->token_cert_pem) ||
	    (rec->token_uri && !d->token_uri) || (rec->exec_answer && !d->exec_answer))
		goto fail;
	return d;
fail:
	kh_record_free(d);
	return NULL;
}

void
kh_record_free(struct kh_record *rec)
{
	size_t i;

	if (rec == NULL)
		return;
	free(rec->user);
	free(rec->issuer_id);
	free(rec->kube_user);
	for (i = 0; i < rec->ngroups; i++)
		free(rec->groups[i]);
	free(rec->groups);
	free(rec->cert_chain_pem);
	kh_secure_strfree(rec->key_pem);
	if (rec->exec_answer != NULL)
		kh_secure_free(rec->exec_answer, rec->exec_answer_len + 1);
	free(rec->token_cert_pem);
	free(rec->token_uri);
	free(rec);
}
