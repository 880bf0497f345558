/*
 * kh_opensc_conf — see kh_opensc_conf.h.  A reader of scconf, OpenSC's
 * configuration syntax, as far as this question needs: blocks
 * ("name [value ...] { ... }"), settings ("name = value [, value];"),
 * quoted strings and '#' comments.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/kh_opensc_conf.h"

#define KH_OPENSC_CONF_MAX (1024 * 1024)
#define KH_WORD_MAX 128
#define KH_DEPTH_MAX 32

enum tok { T_END, T_WORD, T_OPEN, T_CLOSE, T_EQ, T_SEMI, T_COMMA, T_BAD };

struct lexer {
	const char *s;
	unsigned line;
	char word[KH_WORD_MAX];
};

static enum tok
lex(struct lexer *lx)
{
	size_t n = 0;

	for (;;) {
		while (*lx->s == ' ' || *lx->s == '\t' || *lx->s == '\r' || *lx->s == '\n') {
			if (*lx->s == '\n')
				lx->line++;
			lx->s++;
		}
		if (*lx->s != '#')
			break;
		while (*lx->s != '\0' && *lx->s != '\n')
			lx->s++;
	}
	switch (*lx->s) {
	case '\0':
		return T_END;
	case '{':
		lx->s++;
		return T_OPEN;
	case '}':
		lx->s++;
		return T_CLOSE;
	case '=':
		lx->s++;
		return T_EQ;
	case ';':
		lx->s++;
		return T_SEMI;
	case ',':
		lx->s++;
		return T_COMMA;
	case '"':
		for (lx->s++; *lx->s != '"'; lx->s++) {
			if (*lx->s == '\0' || *lx->s == '\n')
				return T_BAD;
			if (*lx->s == '\\' && lx->s[1] != '\0')
				lx->s++;
			if (n + 1 < sizeof(lx->word))
				lx->word[n++] = *lx->s;
		}
		lx->s++;
		lx->word[n] = '\0';
		return T_WORD;
	default:
		while (*lx->s != '\0' && strchr(" \t\r\n{}=;,#\"", *lx->s) == NULL) {
			if (n + 1 < sizeof(lx->word))
				lx->word[n++] = *lx->s;
			lx->s++;
		}
		lx->word[n] = '\0';
		return T_WORD;
	}
}

/* Where in the file a block or setting is, as far as the question goes. */
enum app { APP_NONE, APP_MODULE, APP_DEFAULT };

struct scan {
	/* the first "app opensc-pkcs11" and "app default" blocks, each */
	bool app_seen[3];
	/* per app: its first reader_driver pcsc block seen, and what it set */
	bool pcsc_seen[3];
	int action[3];          /* -1 unset (leave), 0 leave, 1 reset/unpower */
};

struct frame {
	enum app app;           /* the app block this is in (APP_NONE: another) */
	bool counts;            /* the first block of its kind: OpenSC reads it */
	bool is_pcsc;           /* a reader_driver pcsc block that counts */
};

static int
action_of(const char *v)
{
	return strcmp(v, "reset") == 0 || strcmp(v, "unpower") == 0 ? 1 : 0;
}

/* A block opens at depth d (0: top level) named name (first value arg). */
static struct frame
open_block(struct scan *sc, const struct frame *outer, size_t depth, const char *name,
	   const char *arg)
{
	struct frame f = { APP_NONE, false, false };

	if (depth == 0 && strcmp(name, "app") == 0) {
		f.app = strcmp(arg, "opensc-pkcs11") == 0 ? APP_MODULE :
			strcmp(arg, "default") == 0 ? APP_DEFAULT : APP_NONE;
		f.counts = f.app != APP_NONE && !sc->app_seen[f.app];
		if (f.app != APP_NONE)
			sc->app_seen[f.app] = true;
		return f;
	}
	if (depth == 1 && outer->counts && strcmp(name, "reader_driver") == 0 &&
	    strcmp(arg, "pcsc") == 0) {
		f.app = outer->app;
		f.counts = f.is_pcsc = !sc->pcsc_seen[f.app];
		sc->pcsc_seen[f.app] = true;
	}
	return f;
}

static int
parse(const char *text, const char *name, struct scan *sc, kh_error *err)
{
	struct lexer lx = { text, 1, "" };
	struct frame stack[KH_DEPTH_MAX];
	size_t depth = 0;
	char head[KH_WORD_MAX], arg[KH_WORD_MAX];
	enum tok t;

	for (;;) {
		t = lex(&lx);
		if (t == T_END)
			break;
		if (t == T_CLOSE && depth > 0) {
			depth--;
			continue;
		}
		if (t != T_WORD)
			goto bad;
		(void)snprintf(head, sizeof(head), "%s", lx.word);
		arg[0] = '\0';
		t = lex(&lx);
		if (t == T_EQ) {
			/* name = value [, value ...] ; — the first value decides */
			bool first = true;

			while ((t = lex(&lx)) == T_WORD || t == T_COMMA) {
				if (t == T_WORD && first && depth > 0 && stack[depth - 1].is_pcsc &&
				    strcmp(head, "disconnect_action") == 0 &&
				    sc->action[stack[depth - 1].app] < 0)
					sc->action[stack[depth - 1].app] = action_of(lx.word);
				first = first && t != T_WORD;
			}
			if (t != T_SEMI)
				goto bad;
			continue;
		}
		/* name [value ...] { */
		for (; t == T_WORD || t == T_COMMA; t = lex(&lx))
			if (t == T_WORD && arg[0] == '\0')
				(void)snprintf(arg, sizeof(arg), "%s", lx.word);
		if (t != T_OPEN || depth >= KH_DEPTH_MAX)
			goto bad;
		stack[depth] = open_block(sc, depth > 0 ? &stack[depth - 1] : NULL, depth, head, arg);
		depth++;
	}
	if (depth == 0)
		return 0;
bad:
	return kh_fail(err, KH_ERR_CONFIG, "%s:%u: OpenSC cannot read this either (syntax)",
		       name, lx.line);
}

int
kh_opensc_resets_card_text(const char *text, const char *name, kh_error *err)
{
	struct scan sc = { .action = { -1, -1, -1 } };
	static const enum app order[] = { APP_MODULE, APP_DEFAULT };

	if (parse(text, name, &sc, err) != 0)
		return -1;
	for (size_t i = 0; i < 2; i++)
		if (sc.pcsc_seen[order[i]])
			return sc.action[order[i]] > 0 ? 1 : 0;
	return 0;
}

int
kh_opensc_resets_card(const char *path, kh_error *err)
{
	char *text;
	struct stat st;
	ssize_t r;
	size_t len = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 :
			kh_fail(err, KH_ERR_CONFIG, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > KH_OPENSC_CONF_MAX) {
		(void)close(fd);
		return kh_fail(err, KH_ERR_CONFIG, "%s is not a regular file of at most 1 MiB", path);
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		(void)close(fd);
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	while (len < (size_t)st.st_size &&
	       ((r = read(fd, text + len, (size_t)st.st_size - len)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			len += (size_t)r;
	(void)close(fd);
	text[len] = '\0';
	rc = kh_opensc_resets_card_text(text, path, err);
	free(text);
	return rc;
}
