/*
 * kh_opensc_conf — see kh_opensc_conf.h.  A reader of scconf, OpenSC's
 * configuration syntax, as far as this question needs, that reads a file
 * the way OpenSC 0.23's scconf does (src/scconf/sclex.c and parse.c),
 * quirks included: a file read any other way can make kubehsm see a reset
 * OpenSC does not do, and silence the warning.  tests/fuzz/
 * fuzz_opensc_conf.c holds the two to agreeing.  What scconf does:
 *   - a word runs to ';', ',', a blank or a line end, so "a=b;" is the
 *     name "a=b" alone and "pcsc{" one word; a quoted string runs to the
 *     next '"' or line end, without escapes (an unterminated one keeps
 *     the character it ended on);
 *   - blocks are "name [value[, value...]] {" (two values need a comma)
 *     and settings "name = [value[, value...]];" where a missing ';'
 *     before the next setting or '}', and missing '}' at the end, are
 *     forgiven;
 *   - blocks nest at most KH_DEPTH_MAX deep (no '{' or ',' deeper);
 *   - a comment or an empty line inside a setting ends it: a value after
 *     it is an error;
 *   - names are compared without regard to case, values with;
 *   - a setting's values join those of the first setting of that name in
 *     its block: the first value of them all is the one read.
 * Refused although scconf takes it: a comment or an empty line between a
 * name and its '{' or '=' (scconf files the name with the comment, and
 * OpenSC crashes looking for a block or setting beside the nameless one).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/kh_opensc_conf.h"

#define KH_OPENSC_CONF_MAX (1024 * 1024)
#define KH_WORD_MAX 128
/* OpenSC 0.23 refuses blocks nested deeper (scconf's own limit). */
#define KH_DEPTH_MAX 16

enum tok { T_END, T_WORD, T_PUNCT, T_NEWLINE, T_COMMENT };

/* A word as scconf has it; only its first KH_WORD_MAX - 1 bytes are kept
 * (enough to compare with the names asked for), len is all of it. */
struct word {
	char s[KH_WORD_MAX];
	size_t len;
};

struct lexer {
	const char *s;
	struct word w;
	char punct;
};

static void
word_add(struct word *w, char c)
{
	if (w->len + 1 < sizeof(w->s)) {
		w->s[w->len] = c;
		w->s[w->len + 1] = '\0';
	}
	w->len++;
}

static bool
word_is(const struct word *w, const char *name)
{
	return w->len == strlen(name) && strncasecmp(w->s, name, w->len) == 0;
}

/* sclex.c's scconf_lex_engine, one token at a time. */
static enum tok
lex(struct lexer *lx)
{
	const char *s = lx->s;

	lx->w.len = 0;
	lx->w.s[0] = '\0';
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	switch (*s) {
	case '\0':
		lx->s = s;
		return T_END;
	case '#':
		while (*s != '\0' && *s != '\r' && *s != '\n')
			s++;
		lx->s = s;
		return T_COMMENT;
	case '\n':
		lx->s = s + 1;
		return T_NEWLINE;
	case ',': case '{': case '}': case '=': case ';':
		lx->punct = *s;
		lx->s = s + 1;
		return T_PUNCT;
	case '"':
		for (s++; *s != '\0' && *s != '"' && *s != '\r' && *s != '\n'; s++)
			word_add(&lx->w, *s);
		/* Unterminated: scconf keeps what ended it (EOF as 0xff). */
		if (*s != '"')
			word_add(&lx->w, *s != '\0' ? *s : (char)0xff);
		if (*s != '\0')
			s++;
		lx->s = s;
		return T_WORD;
	default:
		for (; *s != '\0' && strchr(";, \t\r\n", *s) == NULL; s++)
			word_add(&lx->w, *s);
		lx->s = s;
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

/* parse.c's parser states */
#define ST_NAME  0x01           /* a name read */
#define ST_VALUE 0x02           /* after its '=' */
#define ST_SET   0x10           /* ... and a value (not yet a ',') */

struct parser {
	struct lexer lx;
	unsigned line;
	enum tok last;
	unsigned state;
	struct word key;        /* the name (ST_NAME) */
	struct word arg;        /* its first value (a block's name) */
	bool has_arg;
	bool in_setting;        /* the last entry is a setting (values may follow) */
	bool in_action;         /* ... disconnect_action in a block that counts */
	struct frame stack[KH_DEPTH_MAX];
	size_t depth;
	struct scan *sc;
};

static int
action_of(const char *v)
{
	return strcmp(v, "reset") == 0 || strcmp(v, "unpower") == 0 ? 1 : 0;
}

/* A block opens at p->depth (0: top level) named p->key, p->arg. */
static struct frame
open_block(struct parser *p)
{
	struct frame f = { APP_NONE, false, false };
	const struct word *arg = &p->arg;
	static const struct word none = { "", 0 };

	if (!p->has_arg)
		arg = &none;
	if (p->depth == 0 && word_is(&p->key, "app")) {
		f.app = word_is(arg, "opensc-pkcs11") ? APP_MODULE :
			word_is(arg, "default") ? APP_DEFAULT : APP_NONE;
		f.counts = f.app != APP_NONE && !p->sc->app_seen[f.app];
		if (f.app != APP_NONE)
			p->sc->app_seen[f.app] = true;
		return f;
	}
	if (p->depth == 1 && p->stack[0].counts && word_is(&p->key, "reader_driver") &&
	    word_is(arg, "pcsc")) {
		f.app = p->stack[0].app;
		f.counts = f.is_pcsc = !p->sc->pcsc_seen[f.app];
		p->sc->pcsc_seen[f.app] = true;
	}
	return f;
}

static void
reset_state(struct parser *p)
{
	p->state = 0;
	p->has_arg = false;
	p->in_action = false;
}

/* parse.c's scconf_parse_token for a word: 0, or -1 on a syntax error. */
static int
take_word(struct parser *p)
{
	const struct word *w = &p->lx.w;
	struct frame *f;

	if ((p->state & (ST_VALUE | ST_SET)) == (ST_VALUE | ST_SET))
		reset_state(p);         /* "missing ';'": the word starts anew */
	switch (p->state) {
	case 0:
		p->key = *w;
		p->state = ST_NAME;
		return 0;
	case ST_NAME:
		p->state |= ST_SET;
		if (!p->has_arg) {
			p->arg = *w;
			p->has_arg = true;
		}
		return 0;
	case ST_VALUE:
		if (!p->in_setting)
			return -1;      /* a value after a comment */
		p->state |= ST_SET;
		if (!p->in_action)
			return 0;
		/* The first value the setting gets, in any of its lines, decides. */
		f = &p->stack[p->depth - 1];
		if (p->sc->action[f->app] < 0)
			p->sc->action[f->app] = w->len < sizeof(w->s) ? action_of(w->s) : 0;
		return 0;
	default:
		return -1;              /* a second value without a comma */
	}
}

/* ... and for punctuation. */
static int
take_punct(struct parser *p)
{
	/* sclex.c refuses a '{' or ',' that deep, whatever it is. */
	if ((p->lx.punct == '{' || p->lx.punct == ',') && p->depth >= KH_DEPTH_MAX)
		return -1;
	switch (p->lx.punct) {
	case '{':
		if (!(p->state & ST_NAME))
			return -1;
		p->stack[p->depth] = open_block(p);
		p->depth++;
		reset_state(p);
		return 0;
	case '}':
		if (p->state != 0 && (p->state & (ST_VALUE | ST_SET)) != (ST_VALUE | ST_SET))
			return -1;
		reset_state(p);
		if (p->depth == 0)
			return -1;
		p->depth--;
		return 0;
	case ',':
		if (!(p->state & (ST_NAME | ST_VALUE)))
			return -1;
		p->state &= ~ST_SET;
		return 0;
	case '=':
		if (!(p->state & ST_NAME))
			return -1;
		p->in_setting = true;
		p->in_action = p->depth > 0 && p->stack[p->depth - 1].is_pcsc &&
			       word_is(&p->key, "disconnect_action");
		p->state = ST_VALUE;
		return 0;
	default:        /* ';' */
		reset_state(p);
		return 0;
	}
}

static int
parse(const char *text, const char *name, struct scan *sc, kh_error *err)
{
	struct parser p = { .lx = { .s = text }, .line = 1, .last = T_END, .sc = sc };
	enum tok t;

	while ((t = lex(&p.lx)) != T_END) {
		int rc = 0;

		if (t == T_NEWLINE)
			p.line++;
		/* A comment, or a line with nothing on it, is an entry of its
		 * own to scconf: after a name (before its '{' or '=') it takes
		 * the name; inside a setting, a value after it is an error. */
		if (t == T_COMMENT || (t == T_NEWLINE && p.last == T_NEWLINE)) {
			if (p.state & ST_NAME)
				return kh_fail(err, KH_ERR_CONFIG, "%s:%u: a comment or an empty "
					       "line between a name and its '{' or '=' (OpenSC "
					       "misfiles the name)", name, p.line);
			p.in_setting = false;
		}
		if (t == T_WORD)
			rc = take_word(&p);
		else if (t == T_PUNCT)
			rc = take_punct(&p);
		if (rc != 0)
			return kh_fail(err, KH_ERR_CONFIG,
				       "%s:%u: OpenSC cannot read this either (syntax)", name, p.line);
		p.last = t;
	}
	return 0;
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
	/* OpenSC reads on past a NUL byte; the text reader cannot. */
	if (len < (size_t)st.st_size || memchr(text, '\0', len) != NULL)
		rc = kh_fail(err, KH_ERR_CONFIG, "%s: %s", path, len < (size_t)st.st_size ?
			     "cannot be read whole" : "holds a NUL byte");
	else
		rc = kh_opensc_resets_card_text(text, path, err);
	free(text);
	return rc;
}
