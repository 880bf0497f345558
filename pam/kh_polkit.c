#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polkit/polkit.h>

#include "pam/kh_polkit.h"

/*
 * How it stays bounded: libpolkit's *_sync calls spin a private main
 * context we cannot add a timer to, and CheckAuthorization is sent with an
 * infinite D-Bus timeout (it may wait for an agent).  So we drive the async
 * calls ourselves on a private GMainContext pushed as thread-default, with
 * one timer that cancels a shared GCancellable at the deadline.  If
 * cancellation itself is not delivered within KH_POLKIT_GRACE_MS, we stop
 * waiting and leave the pending operation to finish on its own (its state
 * is reference-counted, so a late completion touches nothing freed).
 */
#define KH_POLKIT_GRACE_MS 1000

/* One pending async operation; shared by the waiter and the callback. */
struct kh_pk_op {
	int refs;
	GAsyncResult *res;
};

struct kh_pk_call {
	GMainContext *ctx;
	GCancellable *cancel;
	GSource *deadline;
	GSource *giveup;
	bool timed_out;       /* the deadline passed and we cancelled */
	bool gave_up;         /* cancellation did not land in time either */
	unsigned timeout_ms;
};

static void
kh_pk_op_unref(struct kh_pk_op *op)
{
	if (--op->refs > 0)
		return;
	if (op->res != NULL)
		g_object_unref(op->res);
	g_free(op);
}

static void
kh_pk_op_done(GObject *source, GAsyncResult *res, gpointer data)
{
	struct kh_pk_op *op = data;

	op->res = g_object_ref(res);
	kh_pk_op_unref(op);
}

static gboolean
kh_pk_on_deadline(gpointer data)
{
	struct kh_pk_call *call = data;

	call->timed_out = true;
	g_cancellable_cancel(call->cancel);
	return G_SOURCE_REMOVE;
}

static gboolean
kh_pk_on_giveup(gpointer data)
{
	struct kh_pk_call *call = data;

	call->gave_up = true;
	return G_SOURCE_REMOVE;
}

static GSource *
kh_pk_timer(GMainContext *ctx, unsigned ms, GSourceFunc fn, gpointer data)
{
	GSource *src = g_timeout_source_new(ms);

	g_source_set_callback(src, fn, data, NULL);
	(void)g_source_attach(src, ctx);
	return src;
}

static void
kh_pk_call_begin(struct kh_pk_call *call, unsigned timeout_ms)
{
	memset(call, 0, sizeof(*call));
	call->timeout_ms = timeout_ms;
	call->ctx = g_main_context_new();
	call->cancel = g_cancellable_new();
	g_main_context_push_thread_default(call->ctx);
	call->deadline = kh_pk_timer(call->ctx, timeout_ms, kh_pk_on_deadline, call);
	call->giveup = kh_pk_timer(call->ctx, timeout_ms + KH_POLKIT_GRACE_MS,
				   kh_pk_on_giveup, call);
}

static void
kh_pk_call_end(struct kh_pk_call *call)
{
	int i;

	g_source_destroy(call->deadline);
	g_source_unref(call->deadline);
	g_source_destroy(call->giveup);
	g_source_unref(call->giveup);
	/* Let already-queued completions (e.g. a proxy's signal unsubscription) run. */
	for (i = 0; i < 64 && g_main_context_iteration(call->ctx, FALSE); i++)
		;
	g_main_context_pop_thread_default(call->ctx);
	g_main_context_unref(call->ctx);
	g_object_unref(call->cancel);
}

static struct kh_pk_op *
kh_pk_op_new(void)
{
	struct kh_pk_op *op = g_new0(struct kh_pk_op, 1);

	op->refs = 2;   /* the waiter and the callback */
	return op;
}

/*
 * Run the private context until op completes or we give up.  Returns the
 * result (a new reference) or NULL when we gave up.
 */
static GAsyncResult *
kh_pk_wait(struct kh_pk_call *call, struct kh_pk_op *op)
{
	GAsyncResult *res = NULL;

	while (op->res == NULL && !call->gave_up)
		(void)g_main_context_iteration(call->ctx, TRUE);
	if (op->res != NULL)
		res = g_object_ref(op->res);
	kh_pk_op_unref(op);
	return res;
}

/* Why the bus or polkitd could not be asked, for one log line. */
static void
kh_pk_why(const struct kh_pk_call *call, const GError *gerr, char *buf, size_t len)
{
	if (call->timed_out)
		(void)snprintf(buf, len, "no answer within %u ms", call->timeout_ms);
	else if (gerr != NULL)
		(void)snprintf(buf, len, "%s", gerr->message);
	else
		(void)snprintf(buf, len, "unknown failure");
}

/* Connect to the system bus; NULL (and *gerr) if unreachable. */
static GDBusConnection *
kh_pk_bus(struct kh_pk_call *call, GError **gerr)
{
	struct kh_pk_op *op = kh_pk_op_new();
	GAsyncResult *res;
	GDBusConnection *bus;

	g_bus_get(G_BUS_TYPE_SYSTEM, call->cancel, kh_pk_op_done, op);
	res = kh_pk_wait(call, op);
	if (res == NULL)
		return NULL;
	bus = g_bus_get_finish(res, gerr);
	g_object_unref(res);
	if (bus != NULL)
		/*
		 * Bus connections from g_bus_get() raise SIGTERM in the whole
		 * process when the bus goes away.  Inside sshd or login that
		 * would kill the host; polkit shares this same connection.
		 */
		g_dbus_connection_set_exit_on_close(bus, FALSE);
	return bus;
}

static PolkitAuthority *
kh_pk_authority(struct kh_pk_call *call, GError **gerr)
{
	struct kh_pk_op *op = kh_pk_op_new();
	GAsyncResult *res;
	PolkitAuthority *authority;

	polkit_authority_get_async(call->cancel, kh_pk_op_done, op);
	res = kh_pk_wait(call, op);
	if (res == NULL)
		return NULL;
	authority = polkit_authority_get_finish(res, gerr);
	g_object_unref(res);
	return authority;
}

/* NULL with *gerr == NULL means we gave up waiting. */
static PolkitAuthorizationResult *
kh_pk_ask(struct kh_pk_call *call, PolkitAuthority *authority,
	  PolkitSubject *subject, const char *action_id,
	  PolkitDetails *details, GError **gerr)
{
	struct kh_pk_op *op = kh_pk_op_new();
	GAsyncResult *res;
	PolkitAuthorizationResult *result;

	/* FLAGS_NONE: never start an authentication dialog from a login. */
	polkit_authority_check_authorization(authority, subject, action_id,
					     details,
					     POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE,
					     call->cancel, kh_pk_op_done, op);
	res = kh_pk_wait(call, op);
	if (res == NULL)
		return NULL;
	result = polkit_authority_check_authorization_finish(authority, res, gerr);
	g_object_unref(res);
	return result;
}

/* polkit action ids: lower-case ASCII letters, digits, '.' and '-'. */
static bool
kh_pk_action_id_valid(const char *id)
{
	const char *p;

	if (id == NULL || *id == '\0')
		return false;
	for (p = id; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '-'))
			return false;
	return true;
}

/*
 * Build PolkitDetails from key, value, ..., NULL.  Strings go out as D-Bus
 * strings, which must be UTF-8: GLib would print a critical and drop the
 * request otherwise, so reject them here with a message instead.
 */
static PolkitDetails *
kh_pk_details(const char *const *kv, kh_error *err)
{
	PolkitDetails *details = polkit_details_new();
	size_t i;

	for (i = 0; kv != NULL && kv[i] != NULL; i += 2) {
		if (kv[i + 1] == NULL) {
			g_object_unref(details);
			(void)kh_fail(err, KH_ERR_INPUT,
				      "polkit: detail '%s' has no value", kv[i]);
			return NULL;
		}
		if (kv[i][0] == '\0' || !g_utf8_validate(kv[i], -1, NULL) ||
		    !g_utf8_validate(kv[i + 1], -1, NULL)) {
			g_object_unref(details);
			(void)kh_fail(err, KH_ERR_INPUT,
				      "polkit: detail %zu is empty or not valid UTF-8", i / 2);
			return NULL;
		}
		polkit_details_insert(details, kv[i], kv[i + 1]);
	}
	return details;
}

/*
 * Only a bus or a polkitd that is not there at all may be skipped under
 * polkit.mode = if-available: no bus socket, nobody listening on it, no
 * polkitd on the bus.  A timeout or any other failure is not absence —
 * else a user whose caching the rules deny could load polkitd until it
 * times out and be let through.
 */
static bool
kh_pk_absent(const struct kh_pk_call *call, const GError *gerr)
{
	if (call->timed_out || gerr == NULL)
		return false;
	return g_error_matches(gerr, G_IO_ERROR, G_IO_ERROR_NOT_FOUND) ||
	       g_error_matches(gerr, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED) ||
	       g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_FILE_NOT_FOUND) ||
	       g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
	       g_error_matches(gerr, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER);
}

/* Errors that come from polkitd itself mean it was reached. */
static bool
kh_pk_from_polkitd(const GError *gerr)
{
	return gerr != NULL && gerr->domain == POLKIT_ERROR;
}

static int
kh_pk_verdict(PolkitAuthorizationResult *result, const char *action_id,
	      kh_error *err)
{
	if (polkit_authorization_result_get_is_authorized(result))
		return 1;
	if (polkit_authorization_result_get_is_challenge(result))
		(void)kh_fail(err, KH_ERR_PERM,
			      "polkit: %s needs authentication, which is not possible here; not authorized",
			      action_id);
	else
		(void)kh_fail(err, KH_ERR_PERM, "polkit: not authorized for %s",
			      action_id);
	return 0;
}

/* Everything after input validation: talk to the bus and polkitd. */
static int
kh_pk_run(enum kh_polkit_mode mode, const char *action_id,
	  PolkitSubject *subject, PolkitDetails *details, unsigned timeout_ms,
	  bool *unreachable, kh_error *err)
{
	struct kh_pk_call call;
	GDBusConnection *bus = NULL;
	PolkitAuthority *authority = NULL;
	PolkitAuthorizationResult *result = NULL;
	GError *gerr = NULL;
	char why[KH_ERROR_MAX / 2];
	int rc;

	kh_pk_call_begin(&call, timeout_ms);
	bus = kh_pk_bus(&call, &gerr);
	if (bus != NULL)
		authority = kh_pk_authority(&call, &gerr);
	if (authority != NULL)
		result = kh_pk_ask(&call, authority, subject, action_id, details, &gerr);

	if (result != NULL) {
		rc = kh_pk_verdict(result, action_id, err);
	} else if (kh_pk_from_polkitd(gerr) && !call.timed_out) {
		rc = kh_fail(err, KH_ERR_CONFIG,
			     "polkit refused to check %s: %s (is org.kubehsm.policy installed in the polkit actions directory?)",
			     action_id, gerr->message);
	} else if (kh_pk_absent(&call, gerr)) {
		kh_pk_why(&call, gerr, why, sizeof(why));
		rc = kh_polkit_unreachable(mode, action_id, why, unreachable, err);
	} else {
		kh_pk_why(&call, gerr, why, sizeof(why));
		rc = kh_fail(err, KH_ERR_PERM, "polkit did not answer (%s): %s refused, whatever "
			     "polkit.mode says (only a polkitd that is not running is skipped)",
			     why, action_id);
	}

	if (gerr != NULL)
		g_error_free(gerr);
	if (result != NULL)
		g_object_unref(result);
	if (authority != NULL)
		g_object_unref(authority);
	if (bus != NULL)
		g_object_unref(bus);
	kh_pk_call_end(&call);
	return rc;
}

int
kh_polkit_check_timeout(enum kh_polkit_mode mode, const char *action_id,
			pid_t pid, uid_t uid, const char *const *details,
			unsigned timeout_ms, bool *unreachable, kh_error *err)
{
	PolkitSubject *subject;
	PolkitDetails *pdetails;
	uint64_t start;
	int rc;

	if (unreachable != NULL)
		*unreachable = false;
	if (mode == KH_POLKIT_OFF)
		return 1;
	if (mode != KH_POLKIT_REQUIRED && mode != KH_POLKIT_IF_AVAILABLE)
		return kh_fail(err, KH_ERR_INPUT, "polkit: unknown polkit.mode %d", (int)mode);
	if (!kh_pk_action_id_valid(action_id))
		return kh_fail(err, KH_ERR_INPUT, "polkit: invalid action id");
	if (pid <= 0 || uid > (uid_t)INT_MAX)
		return kh_fail(err, KH_ERR_INPUT, "polkit: invalid subject pid %ld uid %lu",
			       (long)pid, (unsigned long)uid);
	if (timeout_ms == 0)
		timeout_ms = KH_POLKIT_TIMEOUT_MS;
	if (timeout_ms > INT_MAX - KH_POLKIT_GRACE_MS)
		return kh_fail(err, KH_ERR_INPUT, "polkit: timeout too large");
	if (kh_polkit_start_time(pid, &start, err) < 0)
		return -1;
	pdetails = kh_pk_details(details, err);
	if (pdetails == NULL)
		return -1;
	subject = polkit_unix_process_new_for_owner((gint)pid, start, (gint)uid);
	rc = kh_pk_run(mode, action_id, subject, pdetails, timeout_ms, unreachable, err);
	g_object_unref(subject);
	g_object_unref(pdetails);
	return rc;
}

int
kh_polkit_check(enum kh_polkit_mode mode, const char *action_id,
		pid_t pid, uid_t uid, const char *const *details,
		bool *unreachable, kh_error *err)
{
	return kh_polkit_check_timeout(mode, action_id, pid, uid, details, 0,
				       unreachable, err);
}

/* Join groups with ","; NULL (err set) on a name that holds ",". */
static char *
kh_pk_join_groups(const char *const *groups, size_t n, kh_error *err)
{
	GString *s = g_string_new(NULL);
	size_t i;

	for (i = 0; i < n; i++) {
		if (groups[i] == NULL || strchr(groups[i], ',') != NULL) {
			(void)g_string_free(s, TRUE);
			(void)kh_fail(err, KH_ERR_INPUT,
				      "polkit: Kubernetes group %zu is missing or contains ','", i);
			return NULL;
		}
		if (i > 0)
			g_string_append_c(s, ',');
		g_string_append(s, groups[i]);
	}
	return g_string_free(s, FALSE);
}

static const char *
kh_pk_or_empty(const char *s)
{
	return s != NULL ? s : "";
}

int
kh_polkit_check_login(enum kh_polkit_mode mode, pid_t pid, uid_t uid,
		      const struct kh_polkit_login *login,
		      bool *unreachable, kh_error *err)
{
	char *groups;
	int rc;

	if (unreachable != NULL)
		*unreachable = false;
	if (mode == KH_POLKIT_OFF)
		return 1;
	if (login == NULL)
		return kh_fail(err, KH_ERR_INPUT, "polkit: no login details");
	groups = kh_pk_join_groups(login->kube_groups, login->nkube_groups, err);
	if (groups == NULL)
		return -1;
	{
		const char *const details[] = {
			KH_POLKIT_DETAIL_SERVICE, kh_pk_or_empty(login->service),
			KH_POLKIT_DETAIL_USER, kh_pk_or_empty(login->user),
			KH_POLKIT_DETAIL_TOKEN_SERIAL, kh_pk_or_empty(login->token_serial),
			KH_POLKIT_DETAIL_KUBE_USER, kh_pk_or_empty(login->kube_user),
			KH_POLKIT_DETAIL_KUBE_GROUPS, groups,
			NULL,
		};

		rc = kh_polkit_check(mode, KH_POLKIT_ACTION_CACHE_CREDENTIALS,
				     pid, uid, details, unreachable, err);
	}
	g_free(groups);
	return rc;
}
