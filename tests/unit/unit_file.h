/*
 * unit_file — reading a test's data file, for any unit test.
 *
 * Fixtures captured from real clients and the sample policy are read whole;
 * a file that cannot be read fails the test, naming the path.
 */
#ifndef UNIT_FILE_H
#define UNIT_FILE_H

#include <stddef.h>

/* The whole of path, NUL-terminated (caller frees); *len (may be NULL)
 * gets its length.  An empty or unreadable file fails the test. */
char *unit_read_file(const char *path, size_t *len);

#endif
