/*
 * kh_pin_file — read a PIN file safely (see kh_pin_file.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/kh_mem.h"
#include "lib/kh_pin_file.h"
#include "lib/kh_pkcs11.h"


int
kh_p11_read_pin_file(const char *path, char **pin, kh_error *err)
{
	/* Room for the longest PIN, its newline, and one byte to see overlong files. */
	const size_t cap = KH_P11_PIN_MAX + 2;
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	ssize_t r;
	int fd, rc = -1;

	*pin = NULL;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return kh_fail(err, errno == ELOOP ? KH_ERR_PERM : KH_ERR_CONFIG,
			       "PIN file %s: %s%s", path, strerror(errno),
			       errno == ELOOP ? " (symbolic links are refused)" : "");
	if (fstat(fd, &st) != 0) {
		kh_fail(err, KH_ERR_CONFIG, "PIN file %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		kh_fail(err, KH_ERR_PERM, "PIN file %s is not a regular file", path);
		goto out;
	}
	/* The loader checked the path when it loaded the policy; this is the
	 * file actually read, which someone may have replaced since. */
	if (st.st_uid != geteuid()) {
		kh_fail(err, KH_ERR_PERM, "PIN file %s is owned by uid %lu, not by uid %lu "
			"that reads it", path, (unsigned long)st.st_uid, (unsigned long)geteuid());
		goto out;
	}
	if ((st.st_mode & 077) != 0) {
		kh_fail(err, KH_ERR_PERM, "PIN file %s has mode %04o: group/others could read "
			"the PIN; chmod 0600 %s", path, (unsigned int)(st.st_mode & 07777), path);
		goto out;
	}
	if (st.st_size > (off_t)(KH_P11_PIN_MAX + 1)) {
		kh_fail(err, KH_ERR_CONFIG, "PIN file %s is longer than %d bytes", path, KH_P11_PIN_MAX);
		goto out;
	}
	buf = malloc(cap + 1);
	if (buf == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	while (len < cap) {
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			kh_fail(err, KH_ERR_CONFIG, "PIN file %s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > KH_P11_PIN_MAX + 1) {
		kh_fail(err, KH_ERR_CONFIG, "PIN file %s is longer than %d bytes", path, KH_P11_PIN_MAX);
		goto out;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	if (len == 0 || len > KH_P11_PIN_MAX || memchr(buf, '\0', len) != NULL ||
	    memchr(buf, '\n', len) != NULL) {
		kh_fail(err, KH_ERR_CONFIG,
			"PIN file %s must hold one PIN of 1 to %d bytes on one line", path,
			KH_P11_PIN_MAX);
		goto out;
	}
	*pin = buf;
	buf = NULL;
	rc = 0;
out:
	if (buf != NULL)
		kh_secure_free(buf, cap + 1);
	(void)close(fd);
	return rc;
}
