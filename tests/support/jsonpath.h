/*
 * Integers in a JSON document by path, for the tests of JSON the gateway
 * writes (/stats): "routes.0.totals.calls" is member routes, its element 0,
 * that element's member totals, and so on.
 */
#ifndef GW_TESTS_SUPPORT_JSONPATH_H
#define GW_TESTS_SUPPORT_JSONPATH_H

#include <limits.h>

#include <jansson.h>

/* What gwt_json_int() returns for a path that leads to no integer. */
#define GWT_JSON_NO_INT LLONG_MIN

/*
 * The integer at @path under @root; GWT_JSON_NO_INT when there is nothing
 * there or it is not an integer (said on stderr), a value no test expects.
 */
json_int_t gwt_json_int(json_t *root, const char *path);

#endif
