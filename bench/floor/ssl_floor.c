/*
 * ssl_floor — the floor of any signer built on OpenSSL: one process start
 * with libcrypto loaded and initialised (as any OpenSSL program is), one
 * read of a pre-rendered SignResponse and one write(2).  No key, no
 * signature.  Benchmark program only.
 *
 *   ssl_floor FILE
 */
#include <fcntl.h>
#include <unistd.h>

#include <openssl/crypto.h>

int
main(int argc, char **argv)
{
	static char buf[65536];
	ssize_t n;
	int fd;

	if (!OPENSSL_init_crypto(0, NULL))
		return 1;
	if (argc != 2 || (fd = open(argv[1], O_RDONLY | O_CLOEXEC)) < 0)
		return 2;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0)
		return 2;
	return write(1, buf, (size_t)n) == n ? 0 : 1;
}
