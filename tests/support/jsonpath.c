#include "support/jsonpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_int_t gwt_json_int(json_t *root, const char *path)
{
	json_t *v = root;
	char key[64];

	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ".");
		if (n >= sizeof(key)) {
			fprintf(stderr, "%s: a step too long\n", path);
			return GWT_JSON_NO_INT;
		}
		memcpy(key, p, n);
		key[n] = '\0';
		if (json_is_array(v))
			v = json_array_get(v, strtoul(key, NULL, 10));
		else
			v = json_object_get(v, key);
		if (!v) {
			fprintf(stderr, "no %s in the JSON (at %s)\n", path, key);
			return GWT_JSON_NO_INT;
		}
		p += n + (p[n] == '.');
	}
	if (!json_is_integer(v)) {
		fprintf(stderr, "%s is not an integer\n", path);
		return GWT_JSON_NO_INT;
	}
	return json_integer_value(v);
}
