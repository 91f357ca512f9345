/* SPDX-License-Identifier: MIT */
/*
 * rpcrdma-gw.json(5) against the loader's own key tables: every key the
 * loader knows has an entry in the manual page whose summary line (type,
 * range, default, reload behaviour) is the one the tables give, and the
 * page names no key the loader does not know. The tables are the one
 * source of truth; this test is what keeps the page in step with them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf_priv.h"

enum { MAX_KEYS = 128, MAX_ENTRIES = 128 };

struct entry {
	char key[80];
	char summary[256];
};

/* The page's ".TP / .B key / summary" entries, keys qualified by their section. */
static size_t parse_page(const char *text, struct entry *out, size_t max)
{
	char section[64] = "";
	const char *lines[3] = { NULL, NULL, NULL };
	size_t n = 0;
	char *copy = strdup(text), *save = NULL;

	assert_non_null(copy);
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, ".SH ", 4) == 0)
			snprintf(section, sizeof(section), "%s", line + 4);
		lines[0] = lines[1];
		lines[1] = lines[2];
		lines[2] = line;
		if (!lines[0] || strcmp(lines[0], ".TP") != 0 || strncmp(lines[1], ".B ", 3) != 0)
			continue;
		if (n == max)
			fail_msg("more than %zu entries", max);
		/* The tag, with roff's \- turned back into -. */
		char tag[64], *t = tag;
		for (const char *s = lines[1] + 3; *s && t < tag + sizeof(tag) - 1; s++) {
			if (s[0] == '\\' && s[1] == '-')
				s++;
			*t++ = *s;
		}
		*t = '\0';
		snprintf(out[n].key, sizeof(out[n].key), "%s%s",
			 strcmp(section, "ROUTE OPTIONS") == 0 ? "routes[]." : "", tag);
		snprintf(out[n].summary, sizeof(out[n].summary), "%s", lines[2]);
		n++;
	}
	free(copy);
	return n;
}

/* Milliseconds as the page writes seconds: 100 -> "0.1". */
static void seconds_text(uint32_t ms, char *buf, size_t len)
{
	if (ms % 1000 == 0) {
		snprintf(buf, len, "%u", ms / 1000);
		return;
	}
	snprintf(buf, len, "%u.%03u", ms / 1000, ms % 1000);
	for (char *end = buf + strlen(buf); end[-1] == '0';)
		*--end = '\0';
}

static void choices_text(const struct conf_key_info *k, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < k->nchoices && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s\"%s\"", i ? ", " : "",
					 k->choices[i]);
}

/* The summary line the tables give for @k; false when the key's kind is unknown. */
static bool expected_summary(const struct conf_key_info *k, char *buf, size_t len)
{
	const struct conf_option *o = k->opt;
	char what[200], lo[16], hi[16], def[16];

	if (o && o->type == CONF_OPT_UINT && o->step > 1) {
		snprintf(what, sizeof(what), "Integer, %u..%u, a multiple of %u, default %u.",
			 o->min, o->max, o->step, o->def);
	} else if (o && o->type == CONF_OPT_UINT) {
		snprintf(what, sizeof(what), "Integer, %u..%u, default %u.", o->min, o->max,
			 o->def);
	} else if (o && o->type == CONF_OPT_SECONDS) {
		seconds_text(o->min, lo, sizeof(lo));
		seconds_text(o->max, hi, sizeof(hi));
		seconds_text(o->def, def, sizeof(def));
		snprintf(what, sizeof(what), "Seconds, %s..%s, default %s.", lo, hi, def);
	} else if (o && o->type == CONF_OPT_SOURCE_PORT) {
		char choices[96];
		choices_text(k, choices, sizeof(choices));
		snprintf(what, sizeof(what), "One of %s; default \"%s\".", choices,
			 k->choices[o->def]);
	} else if (o && o->type == CONF_OPT_CIDRS) {
		snprintf(what, sizeof(what), "Array of networks; default: %s.", k->def);
	} else if (o && o->type == CONF_OPT_PATHS) {
		snprintf(what, sizeof(what), "Array of file names; default: %s.", k->def);
	} else if (o && o->type == CONF_OPT_DIR) {
		snprintf(what, sizeof(what), "Absolute directory name; default: %s.", k->def);
	} else if (!k->kind) {
		return false;
	} else if (strcmp(k->kind, "enum") == 0) {
		char choices[96];
		choices_text(k, choices, sizeof(choices));
		if (k->required)
			snprintf(what, sizeof(what), "One of %s; required.", choices);
		else
			snprintf(what, sizeof(what), "One of %s; default \"%s\".", choices, k->def);
	} else if (strcmp(k->kind, "boolean") == 0) {
		snprintf(what, sizeof(what), "Boolean, default %s.", k->def);
	} else if (strcmp(k->kind, "host_port") == 0) {
		snprintf(what, sizeof(what), "String \"HOST:PORT\", default \"%s\".", k->def);
	} else if (strcmp(k->kind, "string") == 0) {
		snprintf(what, sizeof(what), "String, required.");
	} else if (strcmp(k->kind, "url") == 0) {
		snprintf(what, sizeof(what), "URL, required.");
	} else if (strcmp(k->kind, "routes") == 0) {
		snprintf(what, sizeof(what), "Array of route objects, required.");
	} else if (strcmp(k->kind, "object") == 0) {
		snprintf(what, sizeof(what), "Object.");
	} else if (strcmp(k->kind, "comment") == 0) {
		snprintf(what, sizeof(what), "String, ignored.");
	} else if (strcmp(k->kind, "networks") == 0) {
		snprintf(what, sizeof(what), "Array of networks; default: %s.", k->def);
	} else if (strcmp(k->kind, "program") == 0) {
		snprintf(what, sizeof(what), "Integer, an RPC program number; default: any.");
	} else if (strcmp(k->kind, "mb_s") == 0) {
		snprintf(what, sizeof(what),
			 "Megabytes a second, 0..1000000, default 0 (no limit).");
	} else if (strcmp(k->kind, "class_names") == 0) {
		snprintf(what, sizeof(what), "Array of qos class names; default: none.");
	} else if (strcmp(k->kind, "class_name") == 0) {
		snprintf(what, sizeof(what), "String, a qos class name; default: none.");
	} else {
		return false;
	}
	if (k->has_reload)
		snprintf(buf, len, "%s On SIGHUP: %s.", what,
			 k->reload == CONF_RELOAD_RESTART ? "restart" : "applied");
	else
		snprintf(buf, len, "%s", what);
	return true;
}

/*
 * Compare a page with the tables; every disagreement is printed. Returns
 * how many there were.
 */
static unsigned compare_page(const char *text)
{
	struct conf_key_info keys[MAX_KEYS];
	struct entry entries[MAX_ENTRIES];
	size_t nkeys = conf_schema_keys(keys, MAX_KEYS);
	size_t nentries = parse_page(text, entries, MAX_ENTRIES);
	bool seen[MAX_ENTRIES] = { false };
	unsigned bad = 0;
	char want[320];

	assert_true(nkeys <= MAX_KEYS);
	for (size_t i = 0; i < nkeys; i++) {
		const struct entry *e = NULL;

		if (!expected_summary(&keys[i], want, sizeof(want))) {
			print_message(
				"key %s: conf_schema_keys() (conf/config.c) does not say what "
				"it is; describe it there and in the manual page\n",
				keys[i].key);
			bad++;
			continue;
		}
		for (size_t j = 0; j < nentries; j++) {
			if (strcmp(entries[j].key, keys[i].key) == 0) {
				e = &entries[j];
				seen[j] = true;
			}
		}
		if (!e) {
			print_message("key %s: not in the manual page; add:\n.TP\n.B %s\n%s\n",
				      keys[i].key, keys[i].key, want);
			bad++;
		} else if (strcmp(e->summary, want) != 0) {
			print_message("key %s: the manual page says\n  %s\nthe tables say\n  %s\n",
				      keys[i].key, e->summary, want);
			bad++;
		}
	}
	for (size_t j = 0; j < nentries; j++) {
		if (!seen[j]) {
			print_message(
				"the manual page documents %s, which the loader does not know\n",
				entries[j].key);
			bad++;
		}
	}
	return bad;
}

static char *read_page(void)
{
	char *path = NULL, *text;
	FILE *f;
	long size;

	assert_true(asprintf(&path, "%s/man/rpcrdma-gw.json.5", GW_SOURCE_DIR) > 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)size + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	free(path);
	return text;
}

/* Replace the first @from in @text by @to (same length or shorter). */
static void tamper(char *text, const char *from, const char *to)
{
	char *at = strstr(text, from);

	assert_non_null(at);
	assert_true(strlen(to) <= strlen(from));
	memcpy(at, to, strlen(to));
	memmove(at + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
}

static void test_page_matches_tables(void **state)
{
	char *text = read_page();

	assert_int_equal(compare_page(text), 0);
	free(text);
}

/* Every table is walked: the page has an entry for each key, and no more. */
static void test_every_key_listed(void **state)
{
	struct conf_key_info keys[MAX_KEYS];
	size_t n = conf_schema_keys(keys, MAX_KEYS);
	bool credits = false, level = false, max_conn = false, name = false, workers = false;

	/*
	 * 10 top-level, 2 logging, 3 stats, 4 route keys, 2 route qos keys, 8
	 * keys of a qos class, the route options.
	 */
	assert_int_equal(n, 10 + 2 + 3 + 4 + 2 + 8 + conf_options_count);
	for (size_t i = 0; i < n; i++) {
		credits |= strcmp(keys[i].key, "routes[].credits") == 0;
		level |= strcmp(keys[i].key, "logging.level") == 0;
		max_conn |= strcmp(keys[i].key, "stats.max_connections") == 0;
		name |= strcmp(keys[i].key, "routes[].name") == 0;
		workers |= strcmp(keys[i].key, "workers") == 0;
	}
	assert_true(credits && level && max_conn && name && workers);
}

/* The comparison sees a wrong default, a wrong reload, a missing and an extra key. */
static void test_disagreements_found(void **state)
{
	char *text = read_page();

	tamper(text, "Integer, 1..1024, default 64. On SIGHUP: restart.",
	       "Integer, 1..1024, default 32. On SIGHUP: restart.");
	assert_int_equal(compare_page(text), 1);
	tamper(text, "Integer, 1..256, default 16. On SIGHUP: restart.",
	       "Integer, 1..256, default 16. On SIGHUP: applied.");
	assert_int_equal(compare_page(text), 2);
	tamper(text, ".B queue_limit\n", ".B queue_limi\n");
	/* queue_limit missing, queue_limi unknown */
	assert_int_equal(compare_page(text), 4);
	free(text);
}

/*
 * The ranges the page states are the loader's: for every number, the
 * bounds load and one step beyond each is refused.
 */
static const char *where_json(const char *key, const char *value, char *buf, size_t len)
{
	static const char route[] =
		"\"name\": \"a\", \"mode\": \"forward\", \"listen\": "
		"\"tcp://192.0.2.9:2049\", \"upstream\": \"rdma://192.0.2.1:20049\"";

	if (strncmp(key, "routes[].", 9) == 0)
		snprintf(buf, len, "{\"routes\": [{%s, \"%s\": %s}]}", route, key + 9, value);
	else if (strncmp(key, "stats.", 6) == 0)
		snprintf(buf, len, "{\"stats\": {\"%s\": %s}, \"routes\": [{%s}]}", key + 6, value,
			 route);
	else if (strncmp(key, "qos_classes.CLASS.", 18) == 0)
		snprintf(buf, len,
			 "{\"qos_classes\": {\"c\": {\"%s\": %s}}, \"routes\": [{%s, \"qos\": "
			 "[\"c\"]}]}",
			 key + 18, value, route);
	else
		snprintf(buf, len, "{\"%s\": %s, \"routes\": [{%s}]}", key, value, route);
	return buf;
}

static bool loads(const char *key, const char *value)
{
	struct gw_conf_errors errs;
	char text[512];
	const struct gw_config *cfg;

	gw_conf_errors_init(&errs);
	where_json(key, value, text, sizeof(text));
	cfg = gw_config_parse("t.json", text, strlen(text), &errs);
	gw_conf_errors_clear(&errs);
	gw_config_free(cfg);
	return cfg != NULL;
}

static void number_text(const struct conf_option *o, uint64_t v, char *buf, size_t len)
{
	if (o->type == CONF_OPT_SECONDS)
		snprintf(buf, len, "%llu.%03llu", (unsigned long long)(v / 1000),
			 (unsigned long long)(v % 1000));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

static void test_ranges_are_the_loaders(void **state)
{
	struct conf_key_info keys[MAX_KEYS];
	size_t n = conf_schema_keys(keys, MAX_KEYS);
	unsigned checked = 0;
	char v[32];

	for (size_t i = 0; i < n; i++) {
		const struct conf_option *o = keys[i].opt;
		uint64_t step;

		if (!o || (o->type != CONF_OPT_UINT && o->type != CONF_OPT_SECONDS))
			continue;
		step = o->step > 1 ? o->step : 1;
		number_text(o, o->min, v, sizeof(v));
		if (!loads(keys[i].key, v))
			fail_msg("%s: the minimum %s is refused", keys[i].key, v);
		number_text(o, o->max, v, sizeof(v));
		if (!loads(keys[i].key, v))
			fail_msg("%s: the maximum %s is refused", keys[i].key, v);
		number_text(o, (uint64_t)o->max + step, v, sizeof(v));
		if (loads(keys[i].key, v))
			fail_msg("%s: %s, beyond the maximum, is accepted", keys[i].key, v);
		if (o->min >= step) {
			number_text(o, o->min - step, v, sizeof(v));
			if (loads(keys[i].key, v))
				fail_msg("%s: %s, below the minimum, is accepted", keys[i].key, v);
		}
		checked++;
	}
	assert_true(checked >= 18);
}

/* Every example of the page (.EX ... .EE) is a configuration the loader accepts. */
static void test_examples_load(void **state)
{
	char *text = read_page();
	unsigned examples = 0;

	for (char *ex = strstr(text, "\n.EX\n"); ex; ex = strstr(ex, "\n.EX\n")) {
		char *start = ex + 5, *end = strstr(start, "\n.EE\n");
		struct gw_conf_errors errs;
		const struct gw_config *cfg;
		char *json = calloc(1, (size_t)(end - start) + 1), *o = json;

		assert_non_null(end);
		assert_non_null(json);
		for (const char *c = start; c < end; c++) {
			if (c[0] == '\\' && c[1] == '-')
				c++; /* roff's \- is a plain - in the file */
			*o++ = *c;
		}
		gw_conf_errors_init(&errs);
		cfg = gw_config_parse("example.json", json, strlen(json), &errs);
		if (!cfg) {
			gw_conf_errors_print(stderr, &errs);
			fail_msg("example %u of rpcrdma-gw.json(5) does not load:\n%s",
				 examples + 1, json);
		}
		gw_config_free(cfg);
		gw_conf_errors_clear(&errs);
		free(json);
		examples++;
		ex = end;
	}
	assert_true(examples >= 2);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_matches_tables),
		cmocka_unit_test(test_every_key_listed),
		cmocka_unit_test(test_disagreements_found),
		cmocka_unit_test(test_ranges_are_the_loaders),
		cmocka_unit_test(test_examples_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
