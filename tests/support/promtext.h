/*
 * The Prometheus text exposition read back by the reference parser,
 * prometheus_client (the Debian package's, run by /usr/bin/python3), for the
 * tests of /metrics: the families as JSON, and their samples looked up by
 * name and labels.
 *
 * The parse also rejects what the parser itself lets through: a family split
 * in two groups, a sample twice, a counter sample not ending in _total, a
 * histogram without +Inf, with bounds out of order, buckets that are not
 * cumulative, or +Inf different from _count; a family without HELP, or of a
 * type other than counter, gauge and histogram, or named without the
 * rpcrdma_gw_ or process_ prefix.
 */
#ifndef GW_TESTS_SUPPORT_PROMTEXT_H
#define GW_TESTS_SUPPORT_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * The families of @text (@len bytes): an array of {name, type, help,
 * samples: [{name, labels, value}]}; NULL when the text is rejected (why, and
 * the text, on stderr). The caller json_decref()s it.
 */
json_t *gwt_prom_parse(const char *text, size_t len);

/* The family @name, or NULL. */
json_t *gwt_prom_family(json_t *families, const char *name);

/* How many samples the family @name has (0 when there is no such family). */
size_t gwt_prom_family_size(json_t *families, const char *name);

/*
 * The value of the sample @name whose labels are exactly the name/value pairs
 * that follow, up to a NULL; NaN when there is none (said on stderr), so that
 * any comparison with it fails.
 */
double gwt_prom_sample(json_t *families, const char *name, ...);

/* Whether there is such a sample, as gwt_prom_sample() looks it up. */
bool gwt_prom_has_sample(json_t *families, const char *name, ...);

#endif
