/*
 * kh_scan_yaml — a kubeconfig, YAML or JSON, into a jansson tree with
 * libyaml's event parser.  Only what a kubeconfig needs: mappings,
 * sequences and scalars (all kept as strings).  Aliases are refused rather
 * than expanded, so a hostile file cannot grow the tree beyond its own size.
 *
 * Kubeconfigs hold secrets: every scalar libyaml hands over is wiped after
 * it is copied, and so are libyaml's input buffers before they are freed.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "helper/kh_scan.h"

struct kh_yaml_frame {
	json_t *node;           /* an object or an array under construction */
	char *key;              /* an object's key waiting for its value */
};

struct kh_yaml_build {
	struct kh_yaml_frame stack[KH_SCAN_YAML_MAX_DEPTH];
	size_t depth;
	json_t *root;
	bool done;
};

/* Place a finished node: the root, an array item, an object's key or value.
 * Takes the reference to node. */
static int
kh_yaml_place(struct kh_yaml_build *b, json_t *node, const yaml_mark_t *mark, kh_error *err)
{
	struct kh_yaml_frame *top;

	if (b->depth == 0) {
		b->root = node;
		return 0;
	}
	top = &b->stack[b->depth - 1];
	if (json_is_array(top->node)) {
		if (json_array_append_new(top->node, node) != 0)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return 0;
	}
	if (top->key == NULL) {
		if (!json_is_string(node)) {
			kh_scan_json_wipe_free(node);
			return kh_fail(err, KH_ERR_INPUT, "line %zu, column %zu: a key that is not "
				       "a scalar", mark->line + 1, mark->column + 1);
		}
		top->key = strdup(json_string_value(node));
		kh_scan_json_wipe_free(node);
		if (top->key == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return 0;
	}
	if (json_object_get(top->node, top->key) != NULL) {
		kh_scan_json_wipe_free(node);
		return kh_fail(err, KH_ERR_INPUT, "line %zu, column %zu: a key given twice",
			       mark->line + 1, mark->column + 1);
	}
	if (json_object_set_new(top->node, top->key, node) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory (or a key that is not UTF-8)");
	free(top->key);
	top->key = NULL;
	return 0;
}

static int
kh_yaml_push(struct kh_yaml_build *b, json_t *node, const yaml_mark_t *mark, kh_error *err)
{
	if (node == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	if (b->depth == KH_SCAN_YAML_MAX_DEPTH) {
		json_decref(node);
		return kh_fail(err, KH_ERR_INPUT, "line %zu, column %zu: nested deeper than %d "
			       "levels", mark->line + 1, mark->column + 1, KH_SCAN_YAML_MAX_DEPTH);
	}
	b->stack[b->depth].node = node;
	b->stack[b->depth].key = NULL;
	b->depth++;
	return 0;
}

static int
kh_yaml_pop(struct kh_yaml_build *b, const yaml_mark_t *mark, kh_error *err)
{
	struct kh_yaml_frame f = b->stack[--b->depth];

	free(f.key);    /* a mapping cannot end between key and value; be safe */
	return kh_yaml_place(b, f.node, mark, err);
}

/* One event into the tree. */
static int
kh_yaml_event(struct kh_yaml_build *b, yaml_event_t *ev, kh_error *err)
{
	json_t *s;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		s = json_stringn((const char *)ev->data.scalar.value, ev->data.scalar.length);
		if (s == NULL)
			return kh_fail(err, KH_ERR_INPUT, "line %zu, column %zu: a scalar that is "
				       "not UTF-8", ev->start_mark.line + 1, ev->start_mark.column + 1);
		return kh_yaml_place(b, s, &ev->start_mark, err);
	case YAML_SEQUENCE_START_EVENT:
		return kh_yaml_push(b, json_array(), &ev->start_mark, err);
	case YAML_MAPPING_START_EVENT:
		return kh_yaml_push(b, json_object(), &ev->start_mark, err);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return kh_yaml_pop(b, &ev->start_mark, err);
	case YAML_ALIAS_EVENT:
		return kh_fail(err, KH_ERR_INPUT, "line %zu, column %zu: YAML aliases are not "
			       "read (no kubeconfig needs them)", ev->start_mark.line + 1,
			       ev->start_mark.column + 1);
	case YAML_DOCUMENT_END_EVENT:
	case YAML_STREAM_END_EVENT:
		b->done = true;     /* a kubeconfig is the first document */
		return 0;
	default:
		return 0;
	}
}

/* What libyaml copied of the input, wiped before libyaml frees it. */
static void
kh_yaml_parser_wipe(yaml_parser_t *p)
{
	if (p->buffer.start != NULL && p->buffer.end > p->buffer.start)
		explicit_bzero(p->buffer.start, (size_t)(p->buffer.end - p->buffer.start));
	if (p->raw_buffer.start != NULL && p->raw_buffer.end > p->raw_buffer.start)
		explicit_bzero(p->raw_buffer.start,
			       (size_t)(p->raw_buffer.end - p->raw_buffer.start));
}

static void
kh_yaml_event_wipe_delete(yaml_event_t *ev)
{
	if (ev->type == YAML_SCALAR_EVENT && ev->data.scalar.value != NULL)
		explicit_bzero(ev->data.scalar.value, ev->data.scalar.length);
	yaml_event_delete(ev);
}

int
kh_scan_yaml_load(const char *text, size_t len, json_t **out, kh_error *err)
{
	struct kh_yaml_build b = { .depth = 0 };
	yaml_parser_t parser;
	yaml_event_t ev;
	int rc = 0;

	*out = NULL;
	if (!yaml_parser_initialize(&parser))
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (!b.done && rc == 0) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = kh_fail(err, KH_ERR_INPUT, "not YAML: line %zu, column %zu: %s",
				     parser.problem_mark.line + 1, parser.problem_mark.column + 1,
				     parser.problem != NULL ? parser.problem : "syntax error");
			break;
		}
		rc = kh_yaml_event(&b, &ev, err);
		kh_yaml_event_wipe_delete(&ev);
	}
	kh_yaml_parser_wipe(&parser);
	yaml_parser_delete(&parser);
	while (b.depth > 0) {
		b.depth--;
		free(b.stack[b.depth].key);
		kh_scan_json_wipe_free(b.stack[b.depth].node);
	}
	if (rc != 0) {
		kh_scan_json_wipe_free(b.root);
		return -1;
	}
	*out = b.root != NULL ? b.root : json_null();
	return 0;
}

static void
kh_json_wipe(json_t *j)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_string(j)) {
		/* jansson owns the bytes; overwriting them in place is all a
		 * caller can do before the last reference goes. */
		explicit_bzero((char *)json_string_value(j), json_string_length(j));
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			kh_json_wipe(v);
	} else if (json_is_object(j)) {
		json_object_foreach(j, key, v)
			kh_json_wipe(v);
	}
}

void
kh_scan_json_wipe_free(json_t *j)
{
	if (j == NULL)
		return;
	kh_json_wipe(j);
	json_decref(j);
}
