/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_types.c - compile the XDR type descriptions of a rule file
 * into the node graph the walkers share: scalars, fixed and variable
 * opaques, structs, arrays, discriminated unions and named references
 * (cycles refused), each with its encoding's bound and smallest size.
 * Runs at load time only; errors name the member by file, line and column.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xdr.h"
#include "ulb-rules/ulb_loader.h"

/* ---- bounds ---- */

void ulb_bound_const(struct ulb_bound *b, uint64_t base)
{
	memset(b, 0, sizeof(*b));
	if (base > UINT32_MAX)
		b->unbounded = true;
	else
		b->base = (uint32_t)base;
}

void ulb_bound_add(struct ulb_bound *a, const struct ulb_bound *b)
{
	uint64_t s = (uint64_t)a->base + b->base;

	a->unbounded |= b->unbounded || s > UINT32_MAX;
	a->estimate |= b->estimate;
	a->base = a->unbounded ? 0 : (uint32_t)s;
	for (int i = 0; i < ULB_MAX_VALUES; i++) {
		uint64_t c = (uint64_t)a->coef[i] + b->coef[i];
		if (c > 0xffff)
			a->unbounded = true;
		a->coef[i] = (uint32_t)c;
	}
}

/* Upper bound of either: element-wise maxima (values are never negative). */
static void bound_max(struct ulb_bound *a, const struct ulb_bound *b)
{
	a->unbounded |= b->unbounded;
	a->estimate |= b->estimate;
	if (b->base > a->base)
		a->base = b->base;
	for (int i = 0; i < ULB_MAX_VALUES; i++)
		if (b->coef[i] > a->coef[i])
			a->coef[i] = b->coef[i];
}

/* ---- value names ---- */

int ulb_value_slot(struct loader *L, const char *name, bool declare)
{
	for (unsigned i = 0; i < L->n_values; i++)
		if (strcmp(L->values[i], name) == 0)
			return (int)i;
	if (!declare || L->n_values == ULB_MAX_VALUES || strlen(name) >= sizeof(L->values[0]))
		return -1;
	snprintf(L->values[L->n_values], sizeof(L->values[0]), "%s", name);
	return (int)L->n_values++;
}

/* ---- types ---- */

static uint32_t new_node(struct loader *L, enum ulb_kind kind)
{
	struct ulb_rules *r = L->r;
	uint32_t old = L->cap_nodes;

	if (!ulb_grow((void **)&r->nodes, &L->cap_nodes, r->n_nodes + 1, sizeof(*r->nodes)))
		return ULB_NONE;
	if (L->cap_nodes != old) {
		/* the per-node load-time arrays follow the node array's capacity */
		void *b = realloc(L->nbound, (size_t)L->cap_nodes * sizeof(*L->nbound));
		if (!b)
			return ULB_NONE;
		L->nbound = b;
		void *m = realloc(L->nmin, (size_t)L->cap_nodes * sizeof(*L->nmin));
		if (!m)
			return ULB_NONE;
		L->nmin = m;
	}
	uint32_t n = r->n_nodes++;
	memset(&r->nodes[n], 0, sizeof(r->nodes[n]));
	r->nodes[n].kind = (uint8_t)kind;
	r->nodes[n].dflt = ULB_NONE;
	r->nodes[n].first = ULB_NONE;
	memset(&L->nbound[n], 0, sizeof(L->nbound[n]));
	L->nmin[n] = 0;
	return n;
}

static uint32_t fixed_node(struct loader *L, enum ulb_kind kind, uint32_t size)
{
	uint32_t n = new_node(L, kind);
	if (n == ULB_NONE)
		return n;
	L->r->nodes[n].flags = UN_FIXED;
	L->r->nodes[n].fixed_len = size;
	L->r->nodes[n].max = kind == UK_FIXED ? size : 0;
	ulb_bound_const(&L->nbound[n], xdr_align(size));
	L->nmin[n] = xdr_align(size);
	return n;
}

/* The maximum of an opaque or array: a number, or the name of a saved value. */
static bool parse_max(struct loader *L, json_t *obj, const char *ptr, struct ulb_node *node)
{
	char sub[PTR_MAX];
	json_t *m = json_object_get(obj, "max");

	node->max = ULB_LEN_UNKNOWN;
	if (!m)
		return true;
	ulb_ptr_key(sub, ptr, "max");
	if (json_is_integer(m) && json_integer_value(m) >= 0 &&
	    json_integer_value(m) < (json_int_t)UINT32_MAX) {
		node->max = (uint32_t)json_integer_value(m);
		return true;
	}
	if (json_is_string(m)) {
		int slot = ulb_value_slot(L, json_string_value(m), false);
		if (slot < 0)
			return ulb_load_fail(
				L, sub, "\"max\" names value \"%s\", which no earlier field saves",
				json_string_value(m));
		node->flags |= UN_MAX_VALUE;
		node->max_value = (uint8_t)slot;
		return true;
	}
	return ulb_load_fail(L, sub, "\"max\" must be a byte count or the name of a saved value");
}

static bool parse_save(struct loader *L, json_t *obj, const char *ptr, uint32_t n)
{
	char sub[PTR_MAX];
	json_t *nm = json_object_get(obj, "name");

	if (!nm)
		return true;
	if (!json_is_string(nm))
		return ulb_load_fail(L, ulb_ptr_key(sub, ptr, "name"), "\"name\" must be a string");
	int slot = ulb_value_slot(L, json_string_value(nm), true);
	if (slot < 0)
		return ulb_load_fail(
			L, ulb_ptr_key(sub, ptr, "name"),
			"too many saved values in this file (at most %d, names < 32 bytes)",
			ULB_MAX_VALUES);
	L->r->nodes[n].flags |= UN_SAVE;
	L->r->nodes[n].save = (uint8_t)slot;
	/* a saved value must be read even where the walk could skip */
	L->r->nodes[n].flags &= (uint8_t)~UN_FIXED;
	return true;
}

static const char *const k_scalar[] = { "type", "name", "comment", NULL };
static const char *const k_fixed[] = { "type", "size", "comment", NULL };
static const char *const k_opaque[] = { "type", "max", "ddp", "name", "comment", NULL };
static const char *const k_struct[] = { "type", "fields", "comment", NULL };
static const char *const k_elem[] = { "type", "of", "comment", NULL };
static const char *const k_array[] = { "type", "of", "max", "comment", NULL };
static const char *const k_union[] = {
	"type", "switch", "arms", "default", "name", "comment", NULL
};
static const char *const k_ref[] = { "type", "comment", NULL };

static uint32_t compile_struct(struct loader *L, json_t *fields, const char *ptr)
{
	char sub[PTR_MAX];
	size_t nf = json_array_size(fields);
	uint32_t *tmp = calloc(nf ? nf : 1, sizeof(*tmp));

	if (!tmp) {
		ulb_load_fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	for (size_t i = 0; i < nf; i++) {
		tmp[i] = ulb_compile_type(L, json_array_get(fields, i), ulb_ptr_idx(sub, ptr, i));
		if (tmp[i] == ULB_NONE) {
			free(tmp);
			return ULB_NONE;
		}
	}
	struct ulb_rules *r = L->r;
	uint32_t n = new_node(L, UK_STRUCT);
	if (n == ULB_NONE || !ulb_grow((void **)&r->kids, &L->cap_kids, r->n_kids + (uint32_t)nf,
				       sizeof(*r->kids))) {
		free(tmp);
		ulb_load_fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	struct ulb_node *node = &r->nodes[n];
	node->first = r->n_kids;
	node->count = (uint32_t)nf;
	node->flags = UN_FIXED;
	ulb_bound_const(&L->nbound[n], 0);
	for (size_t i = 0; i < nf; i++) {
		const struct ulb_node *k = &r->nodes[tmp[i]];
		r->kids[r->n_kids++] = tmp[i];
		if (!(k->flags & UN_FIXED) || (k->flags & (UN_SAVE | UN_HAS_DDP)))
			node->flags &= (uint8_t)~UN_FIXED;
		node->fixed_len += k->fixed_len;
		node->flags |= k->flags & UN_HAS_DDP;
		ulb_bound_add(&L->nbound[n], &L->nbound[tmp[i]]);
		L->nmin[n] += L->nmin[tmp[i]];
	}
	if (!(node->flags & UN_FIXED))
		node->fixed_len = 0;
	free(tmp);
	return n;
}

static uint32_t compile_union(struct loader *L, json_t *v, const char *ptr)
{
	char sub[PTR_MAX], sub2[PTR_MAX];
	json_t *sw = json_object_get(v, "switch");
	json_t *arms = json_object_get(v, "arms");
	json_t *dflt = json_object_get(v, "default");

	if (!ulb_check_keys(L, v, ptr, k_union))
		return ULB_NONE;
	if (sw && !(json_is_string(sw) && (strcmp(json_string_value(sw), "int") == 0 ||
					   strcmp(json_string_value(sw), "uint") == 0 ||
					   strcmp(json_string_value(sw), "enum") == 0 ||
					   strcmp(json_string_value(sw), "bool") == 0))) {
		ulb_load_fail(L, ulb_ptr_key(sub, ptr, "switch"),
			      "\"switch\" must be \"int\", \"uint\", \"enum\" or \"bool\"");
		return ULB_NONE;
	}
	if (!json_is_object(arms)) {
		ulb_load_fail(L, arms ? ulb_ptr_key(sub, ptr, "arms") : ptr,
			      "a union needs \"arms\": an object from discriminant value to type");
		return ULB_NONE;
	}
	size_t na = json_object_size(arms);
	struct ulb_arm *tmp = calloc(na ? na : 1, sizeof(*tmp));
	if (!tmp) {
		ulb_load_fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	const char *key;
	json_t *arm;
	size_t i = 0;
	ulb_ptr_key(sub, ptr, "arms");
	json_object_foreach(arms, key, arm)
	{
		char *end;
		errno = 0;
		long long d = strtoll(key, &end, 0);
		if (errno || *key == '\0' || *end != '\0' || d < INT32_MIN || d > UINT32_MAX) {
			free(tmp);
			ulb_load_fail_key(L, ulb_ptr_key(sub2, sub, key),
					  "arm \"%s\": a discriminant must be a 32-bit integer",
					  key);
			return ULB_NONE;
		}
		for (size_t j = 0; j < i; j++)
			if (tmp[j].value == (uint32_t)d) {
				free(tmp);
				ulb_load_fail_key(L, ulb_ptr_key(sub2, sub, key),
						  "arm \"%s\" repeats a value", key);
				return ULB_NONE;
			}
		tmp[i].value = (uint32_t)d;
		tmp[i].node = ulb_compile_type(L, arm, ulb_ptr_key(sub2, sub, key));
		if (tmp[i].node == ULB_NONE) {
			free(tmp);
			return ULB_NONE;
		}
		i++;
	}
	uint32_t dn = ULB_NONE;
	if (dflt) {
		dn = ulb_compile_type(L, dflt, ulb_ptr_key(sub2, ptr, "default"));
		if (dn == ULB_NONE) {
			free(tmp);
			return ULB_NONE;
		}
	}
	struct ulb_rules *r = L->r;
	uint32_t n = new_node(L, UK_UNION);
	if (n == ULB_NONE || !ulb_grow((void **)&r->arms, &L->cap_arms, r->n_arms + (uint32_t)na,
				       sizeof(*r->arms))) {
		free(tmp);
		ulb_load_fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	struct ulb_node *node = &r->nodes[n];
	node->first = r->n_arms;
	node->count = (uint32_t)na;
	node->dflt = dn;
	struct ulb_bound b;
	ulb_bound_const(&b, 0);
	uint32_t minarm = dn != ULB_NONE ? L->nmin[dn] : UINT32_MAX;
	if (dn != ULB_NONE) {
		bound_max(&b, &L->nbound[dn]);
		node->flags |= r->nodes[dn].flags & UN_HAS_DDP;
	}
	for (i = 0; i < na; i++) {
		r->arms[r->n_arms++] = tmp[i];
		bound_max(&b, &L->nbound[tmp[i].node]);
		node->flags |= r->nodes[tmp[i].node].flags & UN_HAS_DDP;
		if (L->nmin[tmp[i].node] < minarm)
			minarm = L->nmin[tmp[i].node];
	}
	free(tmp);
	struct ulb_bound four;
	ulb_bound_const(&four, 4);
	ulb_bound_add(&b, &four);
	L->nbound[n] = b;
	L->nmin[n] = 4 + (minarm == UINT32_MAX ? 0 : minarm);
	if (!parse_save(L, v, ptr, n))
		return ULB_NONE;
	return n;
}

/* optional, array or list of @of */
static uint32_t compile_container(struct loader *L, json_t *v, const char *ptr, enum ulb_kind kind)
{
	char sub[PTR_MAX];
	json_t *of = json_object_get(v, "of");

	if (!ulb_check_keys(L, v, ptr, kind == UK_ARRAY ? k_array : k_elem))
		return ULB_NONE;
	if (!of) {
		ulb_load_fail(L, ptr, "missing \"of\": the element type");
		return ULB_NONE;
	}
	uint32_t e = ulb_compile_type(L, of, ulb_ptr_key(sub, ptr, "of"));
	if (e == ULB_NONE)
		return ULB_NONE;
	struct ulb_rules *r = L->r;
	if (kind != UK_OPTIONAL && (r->nodes[e].flags & UN_HAS_DDP)) {
		ulb_load_fail(L, sub, "a DDP item inside an array or list is not supported");
		return ULB_NONE;
	}
	if (kind != UK_OPTIONAL && L->nmin[e] == 0) {
		ulb_load_fail(L, sub, "array and list elements must not be empty");
		return ULB_NONE;
	}
	uint32_t n = new_node(L, kind);
	if (n == ULB_NONE) {
		ulb_load_fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	struct ulb_node *node = &r->nodes[n];
	node->first = e;
	node->flags |= r->nodes[e].flags & UN_HAS_DDP;
	L->nmin[n] = 4;
	struct ulb_bound *b = &L->nbound[n];
	const struct ulb_bound *eb = &L->nbound[e];
	if (kind == UK_OPTIONAL) {
		ulb_bound_const(b, 4);
		ulb_bound_add(b, eb);
		return n;
	}
	if (kind == UK_LIST) {
		ulb_bound_const(b, 0);
		b->unbounded = true;
		return n;
	}
	if (!parse_max(L, v, ptr, node))
		return ULB_NONE;
	bool elem_const = !eb->unbounded;
	for (int i = 0; i < ULB_MAX_VALUES && elem_const; i++)
		elem_const = eb->coef[i] == 0;
	ulb_bound_const(b, 0);
	/* Bounded only by a constant element size times a known maximum count. */
	bool by_value = elem_const && (node->flags & UN_MAX_VALUE);
	bool by_const = elem_const && !by_value && node->max != ULB_LEN_UNKNOWN;
	if (by_value) {
		b->base = 4;
		b->coef[node->max_value] = eb->base;
		b->estimate = eb->estimate;
	} else if (by_const) {
		ulb_bound_const(b, 4 + (uint64_t)node->max * eb->base);
		b->estimate = eb->estimate;
	} else {
		b->unbounded = true;
	}
	return n;
}

static uint32_t compile_opaque(struct loader *L, json_t *v, const char *ptr, bool string)
{
	char sub[PTR_MAX];

	if (v && !ulb_check_keys(L, v, ptr, k_opaque))
		return ULB_NONE;
	uint32_t n = new_node(L, UK_OPAQUE);
	if (n == ULB_NONE) {
		ulb_load_fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	struct ulb_node *node = &L->r->nodes[n];
	node->max = ULB_LEN_UNKNOWN;
	if (string)
		node->flags |= UN_STRING;
	L->nmin[n] = 4;
	if (v) {
		json_t *ddp = json_object_get(v, "ddp");
		if (ddp && !json_is_boolean(ddp)) {
			ulb_load_fail(L, ulb_ptr_key(sub, ptr, "ddp"),
				      "\"ddp\" must be true or false");
			return ULB_NONE;
		}
		if (json_is_true(ddp))
			node->flags |= UN_DDP | UN_HAS_DDP;
		if (!parse_max(L, v, ptr, node) || !parse_save(L, v, ptr, n))
			return ULB_NONE;
		node = &L->r->nodes[n];
	}
	struct ulb_bound *b = &L->nbound[n];
	ulb_bound_const(b, 4);
	if (node->flags & UN_MAX_VALUE)
		b->coef[node->max_value] = 1;
	else if (node->max != ULB_LEN_UNKNOWN)
		ulb_bound_const(b, 4 + (uint64_t)xdr_align(node->max));
	else
		b->unbounded = true;
	return n;
}

static uint32_t compile_named(struct loader *L, const char *name, const char *ptr)
{
	char tptr[PTR_MAX];

	for (size_t i = 0; i < L->n_memo; i++) {
		if (strcmp(L->memo[i].name, name) != 0)
			continue;
		if (L->memo[i].busy) {
			ulb_load_fail(L, ptr,
				      "type \"%s\" contains itself (use \"list\" for linked lists)",
				      name);
			return ULB_NONE;
		}
		return L->memo[i].node;
	}
	json_t *def = L->types ? json_object_get(L->types, name) : NULL;
	if (!def) {
		ulb_load_fail(L, ptr, "unknown type \"%s\"", name);
		return ULB_NONE;
	}
	struct type_memo *m = realloc(L->memo, (L->n_memo + 1) * sizeof(*m));
	if (!m) {
		ulb_load_fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	L->memo = m;
	size_t mi = L->n_memo++;
	m[mi].name = name;
	m[mi].busy = true;
	m[mi].node = ULB_NONE;
	ulb_ptr_key(tptr, "/types", name);
	uint32_t n = ulb_compile_type(L, def, tptr);
	L->memo[mi].busy = false;
	L->memo[mi].node = n;
	return n;
}

/* Built-in type names; everything else names a member of "types". */
static uint32_t compile_builtin(struct loader *L, const char *t, bool *found)
{
	*found = true;
	if (strcmp(t, "void") == 0)
		return fixed_node(L, UK_VOID, 0);
	if (strcmp(t, "int") == 0 || strcmp(t, "uint") == 0 || strcmp(t, "enum") == 0 ||
	    strcmp(t, "bool") == 0)
		return fixed_node(L, UK_U32, 4);
	if (strcmp(t, "hyper") == 0 || strcmp(t, "uhyper") == 0)
		return fixed_node(L, UK_U64, 8);
	*found = false;
	return ULB_NONE;
}

static uint32_t compile_object(struct loader *L, json_t *v, const char *ptr)
{
	char sub[PTR_MAX];
	json_t *tv = json_object_get(v, "type");

	if (!json_is_string(tv)) {
		ulb_load_fail(L, tv ? ulb_ptr_key(sub, ptr, "type") : ptr,
			      "missing or non-string \"type\"");
		return ULB_NONE;
	}
	const char *t = json_string_value(tv);
	if (strcmp(t, "opaque") == 0 || strcmp(t, "string") == 0)
		return compile_opaque(L, v, ptr, strcmp(t, "string") == 0);
	if (strcmp(t, "fixed") == 0) {
		uint32_t size = 0;
		if (!ulb_check_keys(L, v, ptr, k_fixed) ||
		    !ulb_get_u32(L, v, ptr, "size", true, &size))
			return ULB_NONE;
		if (size > (1u << 20)) {
			ulb_load_fail(L, ulb_ptr_key(sub, ptr, "size"),
				      "fixed opaque larger than 1 MiB");
			return ULB_NONE;
		}
		return fixed_node(L, UK_FIXED, xdr_align(size));
	}
	if (strcmp(t, "struct") == 0) {
		json_t *f = json_object_get(v, "fields");
		if (!ulb_check_keys(L, v, ptr, k_struct))
			return ULB_NONE;
		if (!json_is_array(f)) {
			ulb_load_fail(L, f ? ulb_ptr_key(sub, ptr, "fields") : ptr,
				      "a struct needs \"fields\": an array of types");
			return ULB_NONE;
		}
		return compile_struct(L, f, ulb_ptr_key(sub, ptr, "fields"));
	}
	if (strcmp(t, "union") == 0)
		return compile_union(L, v, ptr);
	if (strcmp(t, "optional") == 0)
		return compile_container(L, v, ptr, UK_OPTIONAL);
	if (strcmp(t, "array") == 0)
		return compile_container(L, v, ptr, UK_ARRAY);
	if (strcmp(t, "list") == 0)
		return compile_container(L, v, ptr, UK_LIST);

	bool builtin;
	uint32_t n = compile_builtin(L, t, &builtin);
	if (builtin) {
		if (n == ULB_NONE) {
			ulb_load_fail(L, ptr, "out of memory");
			return n;
		}
		if (!ulb_check_keys(L, v, ptr, k_scalar) || !parse_save(L, v, ptr, n))
			return ULB_NONE;
		return n;
	}
	if (!ulb_check_keys(L, v, ptr, k_ref))
		return ULB_NONE;
	return compile_named(L, t, ulb_ptr_key(sub, ptr, "type"));
}

uint32_t ulb_compile_type(struct loader *L, json_t *v, const char *ptr)
{
	uint32_t n = ULB_NONE;

	if (++L->depth > ULB_MAX_DEPTH) {
		ulb_load_fail(L, ptr, "types nested deeper than %d", ULB_MAX_DEPTH);
		L->depth--;
		return ULB_NONE;
	}
	if (json_is_string(v)) {
		const char *t = json_string_value(v);
		bool builtin;
		if (strcmp(t, "opaque") == 0 || strcmp(t, "string") == 0) {
			n = compile_opaque(L, NULL, ptr, strcmp(t, "string") == 0);
		} else {
			n = compile_builtin(L, t, &builtin);
			if (!builtin)
				n = compile_named(L, t, ptr);
			else if (n == ULB_NONE)
				ulb_load_fail(L, ptr, "out of memory");
		}
	} else if (json_is_array(v)) {
		n = compile_struct(L, v, ptr);
	} else if (json_is_object(v)) {
		n = compile_object(L, v, ptr);
	} else {
		ulb_load_fail(L, ptr, "a type is a name, an array of fields or an object");
	}
	L->depth--;
	return n;
}
