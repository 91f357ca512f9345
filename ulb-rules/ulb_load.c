/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_load.c - read the JSON rule files and compile them.
 *
 * Runs at start-up (and on reload) only. Every semantic error names the
 * offending member by file, line and column (common/json_pos), because a
 * rule file is written by hand and a bare "invalid rule" helps nobody.
 * The compiled set is immutable; the walkers share it read-only.
 */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/json_pos.h"
#include "common/version.h"
#include "common/xdr.h"
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

static bool fail(struct loader *L, const char *ptr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool vfail(struct loader *L, const char *ptr, bool at_key, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

static bool vfail(struct loader *L, const char *ptr, bool at_key, const char *fmt, va_list ap)
{
	struct json_pos p = { 0, 0 };
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	bool found = L->pos &&
		     (at_key ? json_pos_key(L->pos, ptr, &p) : json_pos_value(L->pos, ptr, &p));
	if (!found)
		p.line = p.column = 1;
	snprintf(L->err, L->errlen, "%s:%d:%d: %s", L->file, p.line, p.column, msg);
	return false;
}

/* An error at the value @ptr points to. */
static bool fail(struct loader *L, const char *ptr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(L, ptr, false, fmt, ap);
	va_end(ap);
	return false;
}

/* An error at the member name @ptr points to (a misspelt key). */
static bool fail_key(struct loader *L, const char *ptr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail_key(struct loader *L, const char *ptr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(L, ptr, true, fmt, ap);
	va_end(ap);
	return false;
}

/* Pointer of member @key / element @i of @parent, into @out (PTR_MAX). */
static const char *ptr_key(char *out, const char *parent, const char *key)
{
	if (!json_pointer_member(out, PTR_MAX, parent, key))
		snprintf(out, PTR_MAX, "%s", parent);
	return out;
}

static const char *ptr_idx(char *out, const char *parent, size_t i)
{
	if (!json_pointer_index(out, PTR_MAX, parent, i))
		snprintf(out, PTR_MAX, "%s", parent);
	return out;
}

static bool grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	uint32_t ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

/* Only the listed members may appear: a typo must not be ignored. */
static bool check_keys(struct loader *L, json_t *obj, const char *ptr, const char *const *allowed)
{
	const char *key;
	json_t *val;
	char sub[PTR_MAX];

	json_object_foreach(obj, key, val)
	{
		const char *const *a;
		for (a = allowed; *a; a++)
			if (strcmp(*a, key) == 0)
				break;
		if (!*a)
			return fail_key(L, ptr_key(sub, ptr, key), "unknown member \"%s\"", key);
	}
	return true;
}

static bool get_u32(struct loader *L, json_t *obj, const char *ptr, const char *key, bool required,
		    uint32_t *out)
{
	char sub[PTR_MAX];
	json_t *v = json_object_get(obj, key);

	if (!v) {
		if (required)
			return fail(L, ptr, "missing \"%s\"", key);
		return true;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)UINT32_MAX)
		return fail(L, ptr_key(sub, ptr, key), "\"%s\" must be an integer 0..4294967295",
			    key);
	*out = (uint32_t)json_integer_value(v);
	return true;
}

/* ---- bounds ---- */

static void bound_const(struct ulb_bound *b, uint64_t base)
{
	memset(b, 0, sizeof(*b));
	if (base > UINT32_MAX)
		b->unbounded = true;
	else
		b->base = (uint32_t)base;
}

static void bound_add(struct ulb_bound *a, const struct ulb_bound *b)
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

static int value_slot(struct loader *L, const char *name, bool declare)
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

	if (!grow((void **)&r->nodes, &L->cap_nodes, r->n_nodes + 1, sizeof(*r->nodes)))
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
	bound_const(&L->nbound[n], xdr_align(size));
	L->nmin[n] = xdr_align(size);
	return n;
}

static uint32_t compile_type(struct loader *L, json_t *v, const char *ptr);

/* The maximum of an opaque or array: a number, or the name of a saved value. */
static bool parse_max(struct loader *L, json_t *obj, const char *ptr, struct ulb_node *node)
{
	char sub[PTR_MAX];
	json_t *m = json_object_get(obj, "max");

	node->max = ULB_LEN_UNKNOWN;
	if (!m)
		return true;
	ptr_key(sub, ptr, "max");
	if (json_is_integer(m) && json_integer_value(m) >= 0 &&
	    json_integer_value(m) < (json_int_t)UINT32_MAX) {
		node->max = (uint32_t)json_integer_value(m);
		return true;
	}
	if (json_is_string(m)) {
		int slot = value_slot(L, json_string_value(m), false);
		if (slot < 0)
			return fail(L, sub,
				    "\"max\" names value \"%s\", which no earlier field saves",
				    json_string_value(m));
		node->flags |= UN_MAX_VALUE;
		node->max_value = (uint8_t)slot;
		return true;
	}
	return fail(L, sub, "\"max\" must be a byte count or the name of a saved value");
}

static bool parse_save(struct loader *L, json_t *obj, const char *ptr, uint32_t n)
{
	char sub[PTR_MAX];
	json_t *nm = json_object_get(obj, "name");

	if (!nm)
		return true;
	if (!json_is_string(nm))
		return fail(L, ptr_key(sub, ptr, "name"), "\"name\" must be a string");
	int slot = value_slot(L, json_string_value(nm), true);
	if (slot < 0)
		return fail(L, ptr_key(sub, ptr, "name"),
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
		fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	for (size_t i = 0; i < nf; i++) {
		tmp[i] = compile_type(L, json_array_get(fields, i), ptr_idx(sub, ptr, i));
		if (tmp[i] == ULB_NONE) {
			free(tmp);
			return ULB_NONE;
		}
	}
	struct ulb_rules *r = L->r;
	uint32_t n = new_node(L, UK_STRUCT);
	if (n == ULB_NONE ||
	    !grow((void **)&r->kids, &L->cap_kids, r->n_kids + (uint32_t)nf, sizeof(*r->kids))) {
		free(tmp);
		fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	struct ulb_node *node = &r->nodes[n];
	node->first = r->n_kids;
	node->count = (uint32_t)nf;
	node->flags = UN_FIXED;
	bound_const(&L->nbound[n], 0);
	for (size_t i = 0; i < nf; i++) {
		const struct ulb_node *k = &r->nodes[tmp[i]];
		r->kids[r->n_kids++] = tmp[i];
		if (!(k->flags & UN_FIXED) || (k->flags & (UN_SAVE | UN_HAS_DDP)))
			node->flags &= (uint8_t)~UN_FIXED;
		node->fixed_len += k->fixed_len;
		node->flags |= k->flags & UN_HAS_DDP;
		bound_add(&L->nbound[n], &L->nbound[tmp[i]]);
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

	if (!check_keys(L, v, ptr, k_union))
		return ULB_NONE;
	if (sw && !(json_is_string(sw) && (strcmp(json_string_value(sw), "int") == 0 ||
					   strcmp(json_string_value(sw), "uint") == 0 ||
					   strcmp(json_string_value(sw), "enum") == 0 ||
					   strcmp(json_string_value(sw), "bool") == 0))) {
		fail(L, ptr_key(sub, ptr, "switch"),
		     "\"switch\" must be \"int\", \"uint\", \"enum\" or \"bool\"");
		return ULB_NONE;
	}
	if (!json_is_object(arms)) {
		fail(L, arms ? ptr_key(sub, ptr, "arms") : ptr,
		     "a union needs \"arms\": an object from discriminant value to type");
		return ULB_NONE;
	}
	size_t na = json_object_size(arms);
	struct ulb_arm *tmp = calloc(na ? na : 1, sizeof(*tmp));
	if (!tmp) {
		fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	const char *key;
	json_t *arm;
	size_t i = 0;
	ptr_key(sub, ptr, "arms");
	json_object_foreach(arms, key, arm)
	{
		char *end;
		errno = 0;
		long long d = strtoll(key, &end, 0);
		if (errno || *key == '\0' || *end != '\0' || d < INT32_MIN || d > UINT32_MAX) {
			free(tmp);
			fail_key(L, ptr_key(sub2, sub, key),
				 "arm \"%s\": a discriminant must be a 32-bit integer", key);
			return ULB_NONE;
		}
		for (size_t j = 0; j < i; j++)
			if (tmp[j].value == (uint32_t)d) {
				free(tmp);
				fail_key(L, ptr_key(sub2, sub, key), "arm \"%s\" repeats a value",
					 key);
				return ULB_NONE;
			}
		tmp[i].value = (uint32_t)d;
		tmp[i].node = compile_type(L, arm, ptr_key(sub2, sub, key));
		if (tmp[i].node == ULB_NONE) {
			free(tmp);
			return ULB_NONE;
		}
		i++;
	}
	uint32_t dn = ULB_NONE;
	if (dflt) {
		dn = compile_type(L, dflt, ptr_key(sub2, ptr, "default"));
		if (dn == ULB_NONE) {
			free(tmp);
			return ULB_NONE;
		}
	}
	struct ulb_rules *r = L->r;
	uint32_t n = new_node(L, UK_UNION);
	if (n == ULB_NONE ||
	    !grow((void **)&r->arms, &L->cap_arms, r->n_arms + (uint32_t)na, sizeof(*r->arms))) {
		free(tmp);
		fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	struct ulb_node *node = &r->nodes[n];
	node->first = r->n_arms;
	node->count = (uint32_t)na;
	node->dflt = dn;
	struct ulb_bound b;
	bound_const(&b, 0);
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
	bound_const(&four, 4);
	bound_add(&b, &four);
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

	if (!check_keys(L, v, ptr, kind == UK_ARRAY ? k_array : k_elem))
		return ULB_NONE;
	if (!of) {
		fail(L, ptr, "missing \"of\": the element type");
		return ULB_NONE;
	}
	uint32_t e = compile_type(L, of, ptr_key(sub, ptr, "of"));
	if (e == ULB_NONE)
		return ULB_NONE;
	struct ulb_rules *r = L->r;
	if (kind != UK_OPTIONAL && (r->nodes[e].flags & UN_HAS_DDP)) {
		fail(L, sub, "a DDP item inside an array or list is not supported");
		return ULB_NONE;
	}
	if (kind != UK_OPTIONAL && L->nmin[e] == 0) {
		fail(L, sub, "array and list elements must not be empty");
		return ULB_NONE;
	}
	uint32_t n = new_node(L, kind);
	if (n == ULB_NONE) {
		fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	struct ulb_node *node = &r->nodes[n];
	node->first = e;
	node->flags |= r->nodes[e].flags & UN_HAS_DDP;
	L->nmin[n] = 4;
	struct ulb_bound *b = &L->nbound[n];
	const struct ulb_bound *eb = &L->nbound[e];
	if (kind == UK_OPTIONAL) {
		bound_const(b, 4);
		bound_add(b, eb);
		return n;
	}
	if (kind == UK_LIST) {
		bound_const(b, 0);
		b->unbounded = true;
		return n;
	}
	if (!parse_max(L, v, ptr, node))
		return ULB_NONE;
	bool elem_const = !eb->unbounded;
	for (int i = 0; i < ULB_MAX_VALUES && elem_const; i++)
		elem_const = eb->coef[i] == 0;
	bound_const(b, 0);
	/* Bounded only by a constant element size times a known maximum count. */
	bool by_value = elem_const && (node->flags & UN_MAX_VALUE);
	bool by_const = elem_const && !by_value && node->max != ULB_LEN_UNKNOWN;
	if (by_value) {
		b->base = 4;
		b->coef[node->max_value] = eb->base;
		b->estimate = eb->estimate;
	} else if (by_const) {
		bound_const(b, 4 + (uint64_t)node->max * eb->base);
		b->estimate = eb->estimate;
	} else {
		b->unbounded = true;
	}
	return n;
}

static uint32_t compile_opaque(struct loader *L, json_t *v, const char *ptr, bool string)
{
	char sub[PTR_MAX];

	if (v && !check_keys(L, v, ptr, k_opaque))
		return ULB_NONE;
	uint32_t n = new_node(L, UK_OPAQUE);
	if (n == ULB_NONE) {
		fail(L, ptr, "out of memory");
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
			fail(L, ptr_key(sub, ptr, "ddp"), "\"ddp\" must be true or false");
			return ULB_NONE;
		}
		if (json_is_true(ddp))
			node->flags |= UN_DDP | UN_HAS_DDP;
		if (!parse_max(L, v, ptr, node) || !parse_save(L, v, ptr, n))
			return ULB_NONE;
		node = &L->r->nodes[n];
	}
	struct ulb_bound *b = &L->nbound[n];
	bound_const(b, 4);
	if (node->flags & UN_MAX_VALUE)
		b->coef[node->max_value] = 1;
	else if (node->max != ULB_LEN_UNKNOWN)
		bound_const(b, 4 + (uint64_t)xdr_align(node->max));
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
			fail(L, ptr, "type \"%s\" contains itself (use \"list\" for linked lists)",
			     name);
			return ULB_NONE;
		}
		return L->memo[i].node;
	}
	json_t *def = L->types ? json_object_get(L->types, name) : NULL;
	if (!def) {
		fail(L, ptr, "unknown type \"%s\"", name);
		return ULB_NONE;
	}
	struct type_memo *m = realloc(L->memo, (L->n_memo + 1) * sizeof(*m));
	if (!m) {
		fail(L, ptr, "out of memory");
		return ULB_NONE;
	}
	L->memo = m;
	size_t mi = L->n_memo++;
	m[mi].name = name;
	m[mi].busy = true;
	m[mi].node = ULB_NONE;
	ptr_key(tptr, "/types", name);
	uint32_t n = compile_type(L, def, tptr);
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
		fail(L, tv ? ptr_key(sub, ptr, "type") : ptr, "missing or non-string \"type\"");
		return ULB_NONE;
	}
	const char *t = json_string_value(tv);
	if (strcmp(t, "opaque") == 0 || strcmp(t, "string") == 0)
		return compile_opaque(L, v, ptr, strcmp(t, "string") == 0);
	if (strcmp(t, "fixed") == 0) {
		uint32_t size = 0;
		if (!check_keys(L, v, ptr, k_fixed) || !get_u32(L, v, ptr, "size", true, &size))
			return ULB_NONE;
		if (size > (1u << 20)) {
			fail(L, ptr_key(sub, ptr, "size"), "fixed opaque larger than 1 MiB");
			return ULB_NONE;
		}
		return fixed_node(L, UK_FIXED, xdr_align(size));
	}
	if (strcmp(t, "struct") == 0) {
		json_t *f = json_object_get(v, "fields");
		if (!check_keys(L, v, ptr, k_struct))
			return ULB_NONE;
		if (!json_is_array(f)) {
			fail(L, f ? ptr_key(sub, ptr, "fields") : ptr,
			     "a struct needs \"fields\": an array of types");
			return ULB_NONE;
		}
		return compile_struct(L, f, ptr_key(sub, ptr, "fields"));
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
			fail(L, ptr, "out of memory");
			return n;
		}
		if (!check_keys(L, v, ptr, k_scalar) || !parse_save(L, v, ptr, n))
			return ULB_NONE;
		return n;
	}
	if (!check_keys(L, v, ptr, k_ref))
		return ULB_NONE;
	return compile_named(L, t, ptr_key(sub, ptr, "type"));
}

static uint32_t compile_type(struct loader *L, json_t *v, const char *ptr)
{
	uint32_t n = ULB_NONE;

	if (++L->depth > ULB_MAX_DEPTH) {
		fail(L, ptr, "types nested deeper than %d", ULB_MAX_DEPTH);
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
				fail(L, ptr, "out of memory");
		}
	} else if (json_is_array(v)) {
		n = compile_struct(L, v, ptr);
	} else if (json_is_object(v)) {
		n = compile_object(L, v, ptr);
	} else {
		fail(L, ptr, "a type is a name, an array of fields or an object");
	}
	L->depth--;
	return n;
}

/* ---- result items and reply bounds ---- */

static bool expect_merge(struct ulb_expect *a, const struct ulb_expect *b)
{
	if (a->value != b->value) {
		a->value = ULB_NO_VALUE;
		a->max = ULB_LEN_UNKNOWN;
	} else if (b->max > a->max) {
		a->max = b->max;
	}
	return true;
}

/* The eligible result items of @n, in order; arms of a union overlay. */
static void collect_expect(const struct loader *L, uint32_t n, struct ulb_expect *out,
			   uint8_t *count)
{
	const struct ulb_node *node = &L->r->nodes[n];

	if (!(node->flags & UN_HAS_DDP))
		return;
	switch (node->kind) {
	case UK_OPAQUE:
		if (*count < ULB_MAX_ITEMS) {
			out[*count].max =
				(node->flags & UN_MAX_VALUE) ? ULB_LEN_UNKNOWN : node->max;
			out[*count].value =
				(node->flags & UN_MAX_VALUE) ? node->max_value : ULB_NO_VALUE;
			out[*count].string = (node->flags & UN_STRING) != 0;
			(*count)++;
		}
		return;
	case UK_STRUCT:
		for (uint32_t i = 0; i < node->count; i++)
			collect_expect(L, L->r->kids[node->first + i], out, count);
		return;
	case UK_OPTIONAL:
		collect_expect(L, node->first, out, count);
		return;
	case UK_UNION: {
		uint8_t best = 0;
		struct ulb_expect acc[ULB_MAX_ITEMS];
		for (uint32_t i = 0; i <= node->count; i++) {
			uint32_t an =
				i < node->count ? L->r->arms[node->first + i].node : node->dflt;
			if (an == ULB_NONE)
				continue;
			struct ulb_expect arm[ULB_MAX_ITEMS];
			uint8_t na = 0;
			collect_expect(L, an, arm, &na);
			for (uint8_t k = 0; k < na; k++) {
				if (k < best)
					expect_merge(&acc[k], &arm[k]);
				else
					acc[k] = arm[k];
			}
			if (na > best)
				best = na;
		}
		for (uint8_t k = 0; k < best && *count < ULB_MAX_ITEMS; k++)
			out[(*count)++] = acc[k];
		return;
	}
	default:
		return;
	}
}

/*
 * "reply_max": a byte count, a saved value's name, an array of those
 * (summed), or {"estimate": any of those}.
 */
static bool parse_reply_max(struct loader *L, json_t *v, const char *ptr, struct ulb_bound *b)
{
	char sub[PTR_MAX];

	bound_const(b, 0);
	if (json_is_object(v)) {
		static const char *const k_est[] = { "estimate", "comment", NULL };
		json_t *e = json_object_get(v, "estimate");
		if (!check_keys(L, v, ptr, k_est))
			return false;
		if (!e)
			return fail(L, ptr, "reply_max object needs \"estimate\"");
		if (!parse_reply_max(L, e, ptr_key(sub, ptr, "estimate"), b))
			return false;
		b->estimate = true;
		return true;
	}
	size_t n = json_is_array(v) ? json_array_size(v) : 1;
	for (size_t i = 0; i < n; i++) {
		json_t *t = json_is_array(v) ? json_array_get(v, i) : v;
		const char *tp = json_is_array(v) ? ptr_idx(sub, ptr, i) : ptr;
		if (json_is_integer(t) && json_integer_value(t) >= 0 &&
		    json_integer_value(t) <= (json_int_t)UINT32_MAX) {
			struct ulb_bound c;
			bound_const(&c, (uint64_t)json_integer_value(t));
			bound_add(b, &c);
		} else if (json_is_string(t)) {
			int slot = value_slot(L, json_string_value(t), false);
			if (slot < 0)
				return fail(L, tp, "no field saves a value named \"%s\"",
					    json_string_value(t));
			b->coef[slot] += 1;
		} else {
			return fail(L, tp, "reply_max terms are byte counts or value names");
		}
	}
	return true;
}

/* ---- procedures and operations ---- */

static bool compile_proc(struct loader *L, json_t *pj, const char *ptr, bool is_op,
			 struct ulb_proc *procs, const struct ulb_bound *vdefault)
{
	static const char *const k_proc[] = { "proc",	   "name",    "args", "results",
					      "reply_max", "comment", NULL };
	static const char *const k_op[] = { "op",	 "name",    "args", "results",
					    "reply_max", "comment", NULL };
	char sub[PTR_MAX];
	uint32_t num = 0;
	const char *numkey = is_op ? "op" : "proc";

	if (!json_is_object(pj))
		return fail(L, ptr, "a %s rule is an object", is_op ? "operation" : "procedure");
	if (!check_keys(L, pj, ptr, is_op ? k_op : k_proc) ||
	    !get_u32(L, pj, ptr, numkey, true, &num))
		return false;
	if (num > ULB_MAX_PROC)
		return fail(L, ptr_key(sub, ptr, numkey), "number larger than %d", ULB_MAX_PROC);
	struct ulb_proc *p = &procs[num];
	if (p->present)
		return fail(L, ptr_key(sub, ptr, numkey), "%s %u is bound twice",
			    is_op ? "operation" : "procedure", num);
	p->present = true;
	p->num = num;
	p->args = p->results = ULB_NONE;
	json_t *nm = json_object_get(pj, "name");
	if (nm && !json_is_string(nm))
		return fail(L, ptr_key(sub, ptr, "name"), "\"name\" must be a string");
	snprintf(p->name, sizeof(p->name), "%s", nm ? json_string_value(nm) : "");

	json_t *a = json_object_get(pj, "args");
	json_t *res = json_object_get(pj, "results");
	json_t *rm = json_object_get(pj, "reply_max");
	if (is_op && (!a || !res))
		return fail(L, ptr,
			    "an operation needs \"args\" and \"results\": the COMPOUND walker "
			    "must step over both");
	if (a) {
		p->args = compile_type(L, a, ptr_key(sub, ptr, "args"));
		if (p->args == ULB_NONE)
			return false;
	}
	if (res) {
		p->results = compile_type(L, res, ptr_key(sub, ptr, "results"));
		if (p->results == ULB_NONE)
			return false;
		collect_expect(L, p->results, p->expect, &p->n_expect);
	}
	if (rm) {
		if (!parse_reply_max(L, rm, ptr_key(sub, ptr, "reply_max"), &p->reply))
			return false;
	} else if (res) {
		p->reply = L->nbound[p->results];
	} else if (vdefault) {
		p->reply = *vdefault;
	} else {
		bound_const(&p->reply, 0);
		p->reply.unbounded = true;
	}
	if (is_op) {
		struct ulb_bound opcode;
		bound_const(&opcode, 4);
		bound_add(&p->reply, &opcode);
	}
	return true;
}

static bool compile_proc_list(struct loader *L, json_t *list, const char *ptr, bool is_op,
			      struct ulb_proc **out, uint32_t *n_out, const struct ulb_bound *vdef)
{
	char sub[PTR_MAX];

	if (!json_is_array(list))
		return fail(L, ptr, "expected an array of %s rules",
			    is_op ? "operation" : "procedure");
	struct ulb_proc *procs = calloc(ULB_MAX_PROC + 1, sizeof(*procs));
	if (!procs)
		return fail(L, ptr, "out of memory");
	*out = procs;
	*n_out = 0;
	for (size_t i = 0; i < json_array_size(list); i++) {
		if (!compile_proc(L, json_array_get(list, i), ptr_idx(sub, ptr, i), is_op, procs,
				  vdef))
			return false;
	}
	for (uint32_t i = 0; i <= ULB_MAX_PROC; i++)
		if (procs[i].present)
			*n_out = i + 1;
	/* keep only up to the highest number bound */
	struct ulb_proc *shrunk = realloc(procs, (*n_out ? *n_out : 1) * sizeof(*procs));
	if (shrunk)
		*out = shrunk;
	return true;
}

static bool compile_version(struct loader *L, json_t *vj, const char *ptr, uint32_t prog)
{
	static const char *const k_vers[] = { "version",   "procedures", "compound",
					      "reply_max", "comment",	 NULL };
	static const char *const k_comp[] = { "procedure", "operations", "comment", NULL };
	char sub[PTR_MAX], sub2[PTR_MAX];
	struct ulb_rules *r = L->r;
	uint32_t vers = 0;

	if (!json_is_object(vj))
		return fail(L, ptr, "a version is an object");
	if (!check_keys(L, vj, ptr, k_vers) || !get_u32(L, vj, ptr, "version", true, &vers))
		return false;
	const struct ulb_version *dup = ulb_find_version(r, prog, vers);
	if (dup)
		return fail(L, ptr_key(sub, ptr, "version"),
			    "program %u version %u is already bound by %s", prog, vers, dup->file);
	if (!grow((void **)&r->versions, &L->cap_versions, r->n_versions + 1, sizeof(*r->versions)))
		return fail(L, ptr, "out of memory");
	struct ulb_version *v = &r->versions[r->n_versions];
	memset(v, 0, sizeof(*v));
	v->prog = prog;
	v->vers = vers;
	v->file = r->files[r->n_files - 1];
	v->next = ULB_NONE;

	struct ulb_bound vdef, *vdefp = NULL;
	json_t *rm = json_object_get(vj, "reply_max");
	if (rm) {
		if (!parse_reply_max(L, rm, ptr_key(sub, ptr, "reply_max"), &vdef))
			return false;
		vdefp = &vdef;
		v->has_default = true;
		v->dflt = vdef;
	}
	json_t *procs = json_object_get(vj, "procedures");
	if (!procs)
		return fail(L, ptr, "missing \"procedures\"");
	/* insert before compiling so that a failure frees what was built */
	r->n_versions++;
	if (!compile_proc_list(L, procs, ptr_key(sub, ptr, "procedures"), false, &v->procs,
			       &v->n_procs, vdefp))
		return false;

	json_t *comp = json_object_get(vj, "compound");
	if (comp) {
		uint32_t cp = 0;
		ptr_key(sub, ptr, "compound");
		if (!json_is_object(comp))
			return fail(L, sub, "\"compound\" is an object");
		if (!check_keys(L, comp, sub, k_comp) ||
		    !get_u32(L, comp, sub, "procedure", true, &cp))
			return false;
		if (cp >= v->n_procs || !v->procs[cp].present)
			return fail(L, ptr_key(sub2, sub, "procedure"),
				    "the COMPOUND procedure %u has no procedure rule", cp);
		if (!compile_proc_list(L, json_object_get(comp, "operations"),
				       ptr_key(sub2, sub, "operations"), true, &v->ops, &v->n_ops,
				       NULL))
			return false;
		v->procs[cp].compound = true;
	}
	uint32_t h = ulb_hash(prog, vers);
	v->next = r->hash[h];
	r->hash[h] = r->n_versions - 1;
	return true;
}

static bool compile_doc(struct loader *L, json_t *doc)
{
	static const char *const k_top[] = { "ulb-rules", "comment", "types", "programs", NULL };
	static const char *const k_prog[] = { "program", "name", "versions", "comment", NULL };
	char sub[PTR_MAX], sub2[PTR_MAX];
	uint32_t fmt = 0;

	if (!json_is_object(doc))
		return fail(L, "", "a rule file is a JSON object");
	if (!check_keys(L, doc, "", k_top) || !get_u32(L, doc, "", "ulb-rules", true, &fmt))
		return false;
	if (fmt != 1)
		return fail(L, "/ulb-rules", "format %u is not known (this gateway reads 1)", fmt);
	L->types = json_object_get(doc, "types");
	if (L->types && !json_is_object(L->types))
		return fail(L, "/types", "\"types\" is an object from name to type");
	json_t *progs = json_object_get(doc, "programs");
	if (!json_is_array(progs))
		return fail(L, progs ? "/programs" : "", "\"programs\" must be an array");
	for (size_t i = 0; i < json_array_size(progs); i++) {
		json_t *pj = json_array_get(progs, i);
		uint32_t prog = 0;
		ptr_idx(sub, "/programs", i);
		if (!json_is_object(pj))
			return fail(L, sub, "a program is an object");
		if (!check_keys(L, pj, sub, k_prog) || !get_u32(L, pj, sub, "program", true, &prog))
			return false;
		json_t *vs = json_object_get(pj, "versions");
		if (!json_is_array(vs))
			return fail(L, vs ? ptr_key(sub2, sub, "versions") : sub,
				    "\"versions\" must be an array");
		ptr_key(sub2, sub, "versions");
		for (size_t j = 0; j < json_array_size(vs); j++) {
			char vp[PTR_MAX];
			if (!compile_version(L, json_array_get(vs, j), ptr_idx(vp, sub2, j), prog))
				return false;
		}
	}
	return true;
}

static bool load_file(struct loader *L, const char *path)
{
	struct ulb_rules *r = L->r;
	char **files = realloc(r->files, (r->n_files + 1) * sizeof(*files));

	if (!files) {
		snprintf(L->err, L->errlen, "%s: out of memory", path);
		return false;
	}
	r->files = files;
	r->files[r->n_files] = strdup(path);
	if (!r->files[r->n_files]) {
		snprintf(L->err, L->errlen, "%s: out of memory", path);
		return false;
	}
	r->n_files++;
	L->file = r->files[r->n_files - 1];

	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(L->err, L->errlen, "%s: %s", path, strerror(errno));
		return false;
	}
	char *text = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			char *t = realloc(text, cap);
			if (!t)
				break;
			text = t;
		}
		size_t got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	bool io_err = ferror(f) || !text;
	fclose(f);
	if (io_err) {
		free(text);
		snprintf(L->err, L->errlen, "%s: read error", path);
		return false;
	}

	json_error_t je;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		snprintf(L->err, L->errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
		free(text);
		return false;
	}
	L->pos = json_pos_index_build(text, len);
	free(text);
	L->n_memo = 0;
	L->n_values = 0;
	L->types = NULL;
	bool ok = compile_doc(L, doc);
	json_pos_index_free(L->pos);
	L->pos = NULL;
	json_decref(doc);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool load_dir(struct loader *L, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(L->err, L->errlen, "%s: %s", dir, strerror(errno));
		return false;
	}
	char **names = NULL;
	size_t n = 0;
	bool ok = true;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
			continue;
		char **nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn) {
			ok = false;
			break;
		}
		names = nn;
		size_t pl = strlen(dir) + l + 2;
		names[n] = malloc(pl);
		if (!names[n]) {
			ok = false;
			break;
		}
		snprintf(names[n], pl, "%s/%s", dir, e->d_name);
		n++;
	}
	closedir(d);
	if (!ok)
		snprintf(L->err, L->errlen, "%s: out of memory", dir);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && ok; i++)
		ok = load_file(L, names[i]);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ok;
}

static const char *default_stock_dir(void)
{
	struct stat st;

	if (stat(GW_RULES_DIR, &st) == 0 && S_ISDIR(st.st_mode))
		return GW_RULES_DIR;
	return GW_SOURCE_RULES_DIR;
}

struct ulb_rules *ulb_rules_load(const struct ulb_options *opts, char *err, size_t errlen)
{
	struct loader L;
	char dummy[8];

	memset(&L, 0, sizeof(L));
	L.err = err && errlen ? err : dummy;
	L.errlen = err && errlen ? errlen : sizeof(dummy);
	L.err[0] = '\0';
	L.r = calloc(1, sizeof(*L.r));
	if (!L.r) {
		snprintf(L.err, L.errlen, "out of memory");
		return NULL;
	}
	for (int i = 0; i < ULB_HASH_SIZE; i++)
		L.r->hash[i] = ULB_NONE;
	L.r->refs = 1;
	L.r->default_reply_max =
		opts && opts->default_reply_max ? opts->default_reply_max : ULB_DEFAULT_REPLY_MAX;
	const char *dir = opts && opts->stock_dir ? opts->stock_dir : default_stock_dir();
	bool ok = true;
	if (*dir)
		ok = load_dir(&L, dir);
	for (size_t i = 0; ok && opts && i < opts->n_files; i++)
		ok = load_file(&L, opts->files[i]);
	free(L.memo);
	free(L.nbound);
	free(L.nmin);
	if (!ok) {
		ulb_rules_free(L.r);
		return NULL;
	}
	return L.r;
}

struct ulb_rules *ulb_rules_ref(struct ulb_rules *r)
{
	r->refs++;
	return r;
}

void ulb_rules_free(struct ulb_rules *r)
{
	if (!r || --r->refs > 0)
		return;
	for (uint32_t i = 0; i < r->n_versions; i++) {
		free(r->versions[i].procs);
		free(r->versions[i].ops);
	}
	for (uint32_t i = 0; i < r->n_files; i++)
		free(r->files[i]);
	free(r->files);
	free(r->versions);
	free(r->nodes);
	free(r->kids);
	free(r->arms);
	free(r);
}

size_t ulb_rules_count(const struct ulb_rules *r)
{
	return r ? r->n_versions : 0;
}

const struct ulb_version *ulb_find_version(const struct ulb_rules *r, uint32_t prog, uint32_t vers)
{
	for (uint32_t i = r->hash[ulb_hash(prog, vers)]; i != ULB_NONE; i = r->versions[i].next)
		if (r->versions[i].prog == prog && r->versions[i].vers == vers)
			return &r->versions[i];
	return NULL;
}
