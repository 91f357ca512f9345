/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_loader.h - what the two halves of the rule loader share:
 *
 *   ulb_load.c   files and directories, the document, programs, versions,
 *                procedures and their result items and reply bounds
 *   ulb_types.c  XDR type descriptions compiled to nodes, with the bounds
 *                and smallest encodings the walkers rely on
 *
 * Internal to the loader; the rest of ulb-rules/ sees ulb_impl.h.
 */
#ifndef GW_ULB_LOADER_H
#define GW_ULB_LOADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/json_pos.h"
#include "ulb-rules/ulb_impl.h"

#define ULB_MAX_PROC 1023 /* highest procedure or operation number a rule may name */
#define PTR_MAX	     512

struct type_memo {
	const char *name;
	uint32_t node;
	bool busy; /* being compiled: a reference now is a cycle */
};

struct loader {
	struct ulb_rules *r;
	const char *file;
	struct json_pos_index *pos;
	char *err;
	size_t errlen;
	json_t *types;
	struct type_memo *memo;
	size_t n_memo;
	char values[ULB_MAX_VALUES][32];
	unsigned n_values;
	unsigned depth;
	/* per node, only while loading: its bound, its smallest encoding */
	struct ulb_bound *nbound;
	uint32_t *nmin;
	uint32_t cap_nodes, cap_kids, cap_arms, cap_versions;
};

/* ulb_load.c: errors at a JSON pointer, by file, line and column; always false. */
bool ulb_load_fail(struct loader *L, const char *ptr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool ulb_load_fail_key(struct loader *L, const char *ptr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Pointer of member @key / element @i of @parent, into @out (PTR_MAX). */
const char *ulb_ptr_key(char *out, const char *parent, const char *key);
const char *ulb_ptr_idx(char *out, const char *parent, size_t i);
bool ulb_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);
bool ulb_check_keys(struct loader *L, json_t *obj, const char *ptr, const char *const *allowed);
bool ulb_get_u32(struct loader *L, json_t *obj, const char *ptr, const char *key, bool required,
		 uint32_t *out);

/* ulb_types.c */
void ulb_bound_const(struct ulb_bound *b, uint64_t base);
void ulb_bound_add(struct ulb_bound *a, const struct ulb_bound *b);
int ulb_value_slot(struct loader *L, const char *name, bool declare);
uint32_t ulb_compile_type(struct loader *L, json_t *v, const char *ptr);

#endif /* GW_ULB_LOADER_H */
