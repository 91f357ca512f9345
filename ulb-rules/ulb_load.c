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
#include "ulb-rules/ulb_loader.h"

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
bool ulb_load_fail(struct loader *L, const char *ptr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(L, ptr, false, fmt, ap);
	va_end(ap);
	return false;
}

bool ulb_load_fail_key(struct loader *L, const char *ptr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(L, ptr, true, fmt, ap);
	va_end(ap);
	return false;
}

/* Pointer of member @key / element @i of @parent, into @out (PTR_MAX). */
const char *ulb_ptr_key(char *out, const char *parent, const char *key)
{
	if (!json_pointer_member(out, PTR_MAX, parent, key))
		snprintf(out, PTR_MAX, "%s", parent);
	return out;
}

const char *ulb_ptr_idx(char *out, const char *parent, size_t i)
{
	if (!json_pointer_index(out, PTR_MAX, parent, i))
		snprintf(out, PTR_MAX, "%s", parent);
	return out;
}

bool ulb_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
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
bool ulb_check_keys(struct loader *L, json_t *obj, const char *ptr, const char *const *allowed)
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
			return ulb_load_fail_key(L, ulb_ptr_key(sub, ptr, key),
						 "unknown member \"%s\"", key);
	}
	return true;
}

bool ulb_get_u32(struct loader *L, json_t *obj, const char *ptr, const char *key, bool required,
		 uint32_t *out)
{
	char sub[PTR_MAX];
	json_t *v = json_object_get(obj, key);

	if (!v) {
		if (required)
			return ulb_load_fail(L, ptr, "missing \"%s\"", key);
		return true;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)UINT32_MAX)
		return ulb_load_fail(L, ulb_ptr_key(sub, ptr, key),
				     "\"%s\" must be an integer 0..4294967295", key);
	*out = (uint32_t)json_integer_value(v);
	return true;
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

	ulb_bound_const(b, 0);
	if (json_is_object(v)) {
		static const char *const k_est[] = { "estimate", "comment", NULL };
		json_t *e = json_object_get(v, "estimate");
		if (!ulb_check_keys(L, v, ptr, k_est))
			return false;
		if (!e)
			return ulb_load_fail(L, ptr, "reply_max object needs \"estimate\"");
		if (!parse_reply_max(L, e, ulb_ptr_key(sub, ptr, "estimate"), b))
			return false;
		b->estimate = true;
		return true;
	}
	size_t n = json_is_array(v) ? json_array_size(v) : 1;
	for (size_t i = 0; i < n; i++) {
		json_t *t = json_is_array(v) ? json_array_get(v, i) : v;
		const char *tp = json_is_array(v) ? ulb_ptr_idx(sub, ptr, i) : ptr;
		if (json_is_integer(t) && json_integer_value(t) >= 0 &&
		    json_integer_value(t) <= (json_int_t)UINT32_MAX) {
			struct ulb_bound c;
			ulb_bound_const(&c, (uint64_t)json_integer_value(t));
			ulb_bound_add(b, &c);
		} else if (json_is_string(t)) {
			int slot = ulb_value_slot(L, json_string_value(t), false);
			if (slot < 0)
				return ulb_load_fail(L, tp, "no field saves a value named \"%s\"",
						     json_string_value(t));
			b->coef[slot] += 1;
		} else {
			return ulb_load_fail(L, tp,
					     "reply_max terms are byte counts or value names");
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
		return ulb_load_fail(L, ptr, "a %s rule is an object",
				     is_op ? "operation" : "procedure");
	if (!ulb_check_keys(L, pj, ptr, is_op ? k_op : k_proc) ||
	    !ulb_get_u32(L, pj, ptr, numkey, true, &num))
		return false;
	if (num > ULB_MAX_PROC)
		return ulb_load_fail(L, ulb_ptr_key(sub, ptr, numkey), "number larger than %d",
				     ULB_MAX_PROC);
	struct ulb_proc *p = &procs[num];
	if (p->present)
		return ulb_load_fail(L, ulb_ptr_key(sub, ptr, numkey), "%s %u is bound twice",
				     is_op ? "operation" : "procedure", num);
	p->present = true;
	p->num = num;
	p->args = p->results = ULB_NONE;
	json_t *nm = json_object_get(pj, "name");
	if (nm && !json_is_string(nm))
		return ulb_load_fail(L, ulb_ptr_key(sub, ptr, "name"), "\"name\" must be a string");
	snprintf(p->name, sizeof(p->name), "%s", nm ? json_string_value(nm) : "");

	json_t *a = json_object_get(pj, "args");
	json_t *res = json_object_get(pj, "results");
	json_t *rm = json_object_get(pj, "reply_max");
	if (is_op && (!a || !res))
		return ulb_load_fail(
			L, ptr,
			"an operation needs \"args\" and \"results\": the COMPOUND walker "
			"must step over both");
	if (a) {
		p->args = ulb_compile_type(L, a, ulb_ptr_key(sub, ptr, "args"));
		if (p->args == ULB_NONE)
			return false;
	}
	if (res) {
		p->results = ulb_compile_type(L, res, ulb_ptr_key(sub, ptr, "results"));
		if (p->results == ULB_NONE)
			return false;
		collect_expect(L, p->results, p->expect, &p->n_expect);
	}
	if (rm) {
		if (!parse_reply_max(L, rm, ulb_ptr_key(sub, ptr, "reply_max"), &p->reply))
			return false;
	} else if (res) {
		p->reply = L->nbound[p->results];
	} else if (vdefault) {
		p->reply = *vdefault;
	} else {
		ulb_bound_const(&p->reply, 0);
		p->reply.unbounded = true;
	}
	if (is_op) {
		struct ulb_bound opcode;
		ulb_bound_const(&opcode, 4);
		ulb_bound_add(&p->reply, &opcode);
	}
	return true;
}

static bool compile_proc_list(struct loader *L, json_t *list, const char *ptr, bool is_op,
			      struct ulb_proc **out, uint32_t *n_out, const struct ulb_bound *vdef)
{
	char sub[PTR_MAX];

	if (!json_is_array(list))
		return ulb_load_fail(L, ptr, "expected an array of %s rules",
				     is_op ? "operation" : "procedure");
	struct ulb_proc *procs = calloc(ULB_MAX_PROC + 1, sizeof(*procs));
	if (!procs)
		return ulb_load_fail(L, ptr, "out of memory");
	*out = procs;
	*n_out = 0;
	for (size_t i = 0; i < json_array_size(list); i++) {
		if (!compile_proc(L, json_array_get(list, i), ulb_ptr_idx(sub, ptr, i), is_op,
				  procs, vdef))
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
		return ulb_load_fail(L, ptr, "a version is an object");
	if (!ulb_check_keys(L, vj, ptr, k_vers) || !ulb_get_u32(L, vj, ptr, "version", true, &vers))
		return false;
	const struct ulb_version *dup = ulb_find_version(r, prog, vers);
	if (dup)
		return ulb_load_fail(L, ulb_ptr_key(sub, ptr, "version"),
				     "program %u version %u is already bound by %s", prog, vers,
				     dup->file);
	if (!ulb_grow((void **)&r->versions, &L->cap_versions, r->n_versions + 1,
		      sizeof(*r->versions)))
		return ulb_load_fail(L, ptr, "out of memory");
	struct ulb_version *v = &r->versions[r->n_versions];
	memset(v, 0, sizeof(*v));
	v->prog = prog;
	v->vers = vers;
	v->file = r->files[r->n_files - 1];
	v->next = ULB_NONE;

	struct ulb_bound vdef, *vdefp = NULL;
	json_t *rm = json_object_get(vj, "reply_max");
	if (rm) {
		if (!parse_reply_max(L, rm, ulb_ptr_key(sub, ptr, "reply_max"), &vdef))
			return false;
		vdefp = &vdef;
		v->has_default = true;
		v->dflt = vdef;
	}
	json_t *procs = json_object_get(vj, "procedures");
	if (!procs)
		return ulb_load_fail(L, ptr, "missing \"procedures\"");
	/* insert before compiling so that a failure frees what was built */
	r->n_versions++;
	if (!compile_proc_list(L, procs, ulb_ptr_key(sub, ptr, "procedures"), false, &v->procs,
			       &v->n_procs, vdefp))
		return false;

	json_t *comp = json_object_get(vj, "compound");
	if (comp) {
		uint32_t cp = 0;
		ulb_ptr_key(sub, ptr, "compound");
		if (!json_is_object(comp))
			return ulb_load_fail(L, sub, "\"compound\" is an object");
		if (!ulb_check_keys(L, comp, sub, k_comp) ||
		    !ulb_get_u32(L, comp, sub, "procedure", true, &cp))
			return false;
		if (cp >= v->n_procs || !v->procs[cp].present)
			return ulb_load_fail(L, ulb_ptr_key(sub2, sub, "procedure"),
					     "the COMPOUND procedure %u has no procedure rule", cp);
		if (!compile_proc_list(L, json_object_get(comp, "operations"),
				       ulb_ptr_key(sub2, sub, "operations"), true, &v->ops,
				       &v->n_ops, NULL))
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
		return ulb_load_fail(L, "", "a rule file is a JSON object");
	if (!ulb_check_keys(L, doc, "", k_top) || !ulb_get_u32(L, doc, "", "ulb-rules", true, &fmt))
		return false;
	if (fmt != 1)
		return ulb_load_fail(L, "/ulb-rules",
				     "format %u is not known (this gateway reads 1)", fmt);
	L->types = json_object_get(doc, "types");
	if (L->types && !json_is_object(L->types))
		return ulb_load_fail(L, "/types", "\"types\" is an object from name to type");
	json_t *progs = json_object_get(doc, "programs");
	if (!json_is_array(progs))
		return ulb_load_fail(L, progs ? "/programs" : "", "\"programs\" must be an array");
	for (size_t i = 0; i < json_array_size(progs); i++) {
		json_t *pj = json_array_get(progs, i);
		uint32_t prog = 0;
		ulb_ptr_idx(sub, "/programs", i);
		if (!json_is_object(pj))
			return ulb_load_fail(L, sub, "a program is an object");
		if (!ulb_check_keys(L, pj, sub, k_prog) ||
		    !ulb_get_u32(L, pj, sub, "program", true, &prog))
			return false;
		json_t *vs = json_object_get(pj, "versions");
		if (!json_is_array(vs))
			return ulb_load_fail(L, vs ? ulb_ptr_key(sub2, sub, "versions") : sub,
					     "\"versions\" must be an array");
		ulb_ptr_key(sub2, sub, "versions");
		for (size_t j = 0; j < json_array_size(vs); j++) {
			char vp[PTR_MAX];
			if (!compile_version(L, json_array_get(vs, j), ulb_ptr_idx(vp, sub2, j),
					     prog))
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
