/* libFuzzer target: the opensc.conf reader (lib/kh_opensc_conf.c),
 * against OpenSC itself.  kubehsm reads the file to tell whether OpenSC
 * resets a card at disconnect (and warns when not); the reference is
 * OpenSC's own parser, scconf in libopensc (loaded at start), asked the
 * way OpenSC 0.23 asks it (ctx.c: the first "app opensc-pkcs11" block,
 * then the first "app default"; reader-pcsc.c: the first "reader_driver
 * pcsc" block of the first of those that has one, its disconnect_action,
 * "leave" by default).  Both must agree: syntax refused by one is refused
 * by the other, and the answer is the same.  A wrong 1 would silence the
 * warning while the card stays verified. */
#include <dlfcn.h>
#include <glob.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/kh_opensc_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * scconf, as OpenSC 0.23's src/scconf/scconf.h declares it (the layout
 * has not changed since 2002).  Parsing is OpenSC's; the two lookups are
 * done here as scconf_find_blocks and scconf_get_str do them (names
 * compared without case, the first match), so that a tree on which those
 * would dereference NULL (OpenSC itself crashes on such a file) is told
 * apart instead of crashing the fuzzer.
 */
typedef struct sc_list {
	struct sc_list *next;
	char *data;
} sc_list;
typedef struct sc_block sc_block;
typedef struct sc_item {
	struct sc_item *next;
	int type;                       /* 0 comment, 1 block, 2 value */
	char *key;
	union {
		char *comment;
		sc_block *block;
		sc_list *list;
	} value;
} sc_item;
struct sc_block {
	sc_block *parent;
	sc_list *name;
	sc_item *items;
};
typedef struct {
	char *filename;
	int debug;
	sc_block *root;
	char *errmsg;
} sc_context;

enum { SC_BLOCK = 1, SC_VALUE = 2 };
/* What OpenSC does with a text: resets, leaves, cannot parse it (and so
 * leaves the card), crashes reading it. */
enum { REF_CRASH = -2, REF_UNPARSED = -1, REF_LEAVE = 0, REF_RESET = 1 };

static sc_context *(*sc_new)(const char *filename);
static void (*sc_free)(sc_context *config);
static int (*sc_parse_string)(sc_context *config, const char *string);

static void
fail(const char *what, const char *text)
{
	fprintf(stderr, "fuzz_opensc_conf: %s\n---\n%s\n---\n", what, text);
	abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	glob_t g;
	void *lib = NULL;

	(void)argc;
	(void)argv;
	if (glob("/usr/lib/*/libopensc.so.*", 0, NULL, &g) == 0 && g.gl_pathc > 0)
		lib = dlopen(g.gl_pathv[0], RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		fprintf(stderr, "fuzz_opensc_conf: needs OpenSC's libopensc "
			"(apt-get install opensc-pkcs11)\n");
		exit(1);
	}
	globfree(&g);
	*(void **)&sc_new = dlsym(lib, "scconf_new");
	*(void **)&sc_free = dlsym(lib, "scconf_free");
	*(void **)&sc_parse_string = dlsym(lib, "scconf_parse_string");
	if (sc_new == NULL || sc_free == NULL || sc_parse_string == NULL) {
		fprintf(stderr, "fuzz_opensc_conf: libopensc has no scconf API\n");
		exit(1);
	}
	return 0;
}

/* scconf_find_blocks(..., item, key)[0]; *crash when it would crash. */
static const sc_block *
first_block(const sc_block *in, const char *item, const char *key, bool *crash)
{
	for (const sc_item *it = in->items; it != NULL; it = it->next) {
		if (it->type != SC_BLOCK)
			continue;
		if (it->key == NULL || it->value.block == NULL || it->value.block->name == NULL ||
		    it->value.block->name->data == NULL) {
			*crash = true;
			return NULL;
		}
		if (strcasecmp(item, it->key) == 0 &&
		    strcasecmp(key, it->value.block->name->data) == 0)
			return it->value.block;
	}
	return NULL;
}

/* scconf_get_str(b, option, def). */
static const char *
get_str(const sc_block *b, const char *option, const char *def, bool *crash)
{
	for (const sc_item *it = b->items; it != NULL; it = it->next) {
		if (it->type != SC_VALUE)
			continue;
		if (it->key == NULL) {
			*crash = true;
			return def;
		}
		if (strcasecmp(option, it->key) != 0)
			continue;
		/* "name = ;": the first such setting, without a value */
		if (it->value.list == NULL)
			return def;
		if (it->value.list->data == NULL) {
			*crash = true;
			return def;
		}
		/* scconf's "not auto-configured" values: @...@ */
		if (it->value.list->data[0] == '@' &&
		    it->value.list->data[strlen(it->value.list->data) - 1] == '@')
			return def;
		return it->value.list->data;
	}
	return def;
}

/* ctx.c: the first "app opensc-pkcs11", then the first "app default";
 * reader-pcsc.c: sc_get_conf_block(ctx, "reader_driver", "pcsc", 1) and
 * pcsc_reset_action (strcmp: "reset", "unpower", "eject", else leave). */
static int
opensc_resets(const char *text)
{
	sc_context *c = sc_new(NULL);
	const sc_block *apps[2], *pcsc = NULL;
	const char *action = "leave";
	bool crash = false;
	int r = REF_UNPARSED;

	if (c == NULL)
		abort();
	if (sc_parse_string(c, text) == 1) {
		apps[0] = first_block(c->root, "app", "opensc-pkcs11", &crash);
		apps[1] = first_block(c->root, "app", "default", &crash);
		for (size_t i = 0; i < 2 && pcsc == NULL && !crash; i++)
			if (apps[i] != NULL)
				pcsc = first_block(apps[i], "reader_driver", "pcsc", &crash);
		if (pcsc != NULL && !crash)
			action = get_str(pcsc, "disconnect_action", "leave", &crash);
		r = crash ? REF_CRASH : strcmp(action, "reset") == 0 ||
			strcmp(action, "unpower") == 0 ? REF_RESET : REF_LEAVE;
	}
	sc_free(c);
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	kh_error err = { 0 };
	int kh, ref;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	kh = kh_opensc_resets_card_text(text, "opensc.conf", &err);
	if (kh < -1 || kh > 1)
		fail("an answer other than -1, 0 or 1", text);
	if (kh < 0 && strncmp(err.msg, "opensc.conf:", 12) != 0)
		fail("a refusal that does not say where", text);
	/* What kubehsm refuses because scconf misfiles it is not given to
	 * scconf: it files a setting or block without a name, and crashes on
	 * the next one of that block it adds or OpenSC looks up. */
	if (kh < 0 && strstr(err.msg, "OpenSC misfiles") != NULL) {
		free(text);
		return 0;
	}
	ref = opensc_resets(text);
	if (getenv("KH_FUZZ_VERBOSE") != NULL)
		fprintf(stderr, "kubehsm %d (%s), OpenSC %d\n", kh, err.msg, ref);
	/* A 1 OpenSC does not bear out silences the warning while the card
	 * stays verified (OpenSC leaves a card when it cannot parse the file). */
	if (kh == 1 && ref != REF_RESET)
		fail("kubehsm reads a reset OpenSC does not do", text);
	if (kh >= 0 && ref < 0)
		fail("kubehsm reads what OpenSC cannot", text);
	if (kh >= 0 && kh != ref)
		fail("kubehsm and OpenSC read another disconnect_action", text);
	if (kh < 0 && ref >= 0)
		fail("kubehsm refuses what OpenSC reads", text);
	free(text);
	return 0;
}
