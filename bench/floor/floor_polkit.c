/*
 * floor_polkit — the login floor's polkit check (pam_floor.so polkit=PATH):
 * one CheckAuthorization of org.kubehsm.cache-credentials with the details
 * pam_kubehsm sends, through libpolkit-gobject-1's synchronous API, the
 * library the project uses.  pam_floor loads it only when the system bus
 * socket accepts a connection, as pam_kubehsm loads its plugin under
 * polkit.mode "if-available", so a host without polkitd pays no GLib.
 * Benchmark yardstick only.
 */
#include <stddef.h>
#include <sys/types.h>

#include <polkit/polkit.h>

int floor_polkit_check(const char *action, pid_t pid, uid_t uid, const char *const *kv);

/* 1 authorized, 0 not, -1 no answer. */
int
floor_polkit_check(const char *action, pid_t pid, uid_t uid, const char *const *kv)
{
	PolkitAuthorizationResult *result = NULL;
	PolkitAuthority *authority;
	PolkitSubject *subject;
	PolkitDetails *details;
	GError *gerr = NULL;
	int rc = -1;

	authority = polkit_authority_get_sync(NULL, &gerr);
	if (authority == NULL) {
		g_clear_error(&gerr);
		return -1;
	}
	subject = polkit_unix_process_new_for_owner((gint)pid, 0, (gint)uid);
	details = polkit_details_new();
	for (size_t i = 0; kv[i] != NULL && kv[i + 1] != NULL; i += 2)
		polkit_details_insert(details, kv[i], kv[i + 1]);
	result = polkit_authority_check_authorization_sync(authority, subject, action, details,
							   POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE,
							   NULL, &gerr);
	if (result != NULL) {
		rc = polkit_authorization_result_get_is_authorized(result) ? 1 : 0;
		g_object_unref(result);
	}
	g_clear_error(&gerr);
	g_object_unref(details);
	g_object_unref(subject);
	g_object_unref(authority);
	return rc;
}
