#include "support/promtext.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Parses argv[1] with the reference parser and prints the families as JSON;
 * the checks of what the parser lets through are the header's list.
 */
static const char prom_check_py[] =
	"import json, math, sys\n"
	"from prometheus_client.parser import text_string_to_metric_families\n"
	"text = open(sys.argv[1], encoding='utf-8').read()\n"
	"errors, out, families, series = [], [], set(), set()\n"
	"for f in text_string_to_metric_families(text):\n"
	"    if f.name in families: errors.append('family %s in two groups' % f.name)\n"
	"    families.add(f.name)\n"
	"    if not f.name.startswith(('rpcrdma_gw_', 'process_')): errors.append('prefix: ' + "
	"f.name)\n"
	"    if f.type not in ('counter', 'gauge', 'histogram'):\n"
	"        errors.append('%s has type %s' % (f.name, f.type))\n"
	"    if not f.documentation: errors.append('%s has no HELP' % f.name)\n"
	"    hists = {}\n"
	"    for s in f.samples:\n"
	"        key = (s.name, tuple(sorted(s.labels.items())))\n"
	"        if key in series: errors.append('sample twice: %r' % (key,))\n"
	"        series.add(key)\n"
	"        if f.type == 'counter' and not s.name.endswith('_total'):\n"
	"            errors.append('counter sample %s' % s.name)\n"
	"        if f.type != 'histogram': continue\n"
	"        base = tuple(sorted((k, v) for k, v in s.labels.items() if k != 'le'))\n"
	"        h = hists.setdefault(base, {'b': [], 'sum': None, 'count': None})\n"
	"        if s.name.endswith('_bucket'): h['b'].append((float(s.labels['le']), s.value))\n"
	"        elif s.name.endswith('_sum'): h['sum'] = s.value\n"
	"        elif s.name.endswith('_count'): h['count'] = s.value\n"
	"    for base, h in hists.items():\n"
	"        b = h['b']\n"
	"        if not b or b[-1][0] != math.inf: errors.append('%s%r: no +Inf' % (f.name, "
	"base))\n"
	"        elif b[-1][1] != h['count']: errors.append('%s%r: +Inf != count' % (f.name, "
	"base))\n"
	"        if [x[0] for x in b] != sorted(set(x[0] for x in b)):\n"
	"            errors.append('%s%r: bounds out of order' % (f.name, base))\n"
	"        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):\n"
	"            errors.append('%s%r: buckets not cumulative' % (f.name, base))\n"
	"        if h['sum'] is None: errors.append('%s%r: no _sum' % (f.name, base))\n"
	"    out.append({'name': f.name, 'type': f.type, 'help': f.documentation,\n"
	"                'samples': [{'name': s.name, 'labels': s.labels, 'value': s.value}\n"
	"                            for s in f.samples]})\n"
	"for e in errors: print('prometheus check: ' + e, file=sys.stderr)\n"
	"json.dump(out, sys.stdout)\n"
	"sys.exit(1 if errors else 0)\n";

json_t *gwt_prom_parse(const char *text, size_t len)
{
	char path[] = "/tmp/gw-metrics-XXXXXX";
	int fd = mkstemp(path), pipefd[2];
	size_t cap = 1 << 16, n = 0;
	char *out = NULL;
	json_error_t err;
	json_t *families;
	int status;
	pid_t pid;

	if (fd < 0)
		return NULL;
	if (write(fd, text, len) != (ssize_t)len || pipe(pipefd) != 0) {
		close(fd);
		unlink(path);
		return NULL;
	}
	close(fd);
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		unlink(path);
		return NULL;
	}
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		/* /usr/bin: the Debian package; "python3" on PATH may be another one */
		execl("/usr/bin/python3", "python3", "-c", prom_check_py, path, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	out = malloc(cap);
	if (!out)
		abort();
	for (;;) {
		if (cap - n < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			if (!out)
				abort();
		}
		ssize_t got = read(pipefd[0], out + n, cap - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid)
		status = -1;
	unlink(path);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "prometheus_client rejected the exposition (status %d):\n%.*s\n",
			status, (int)len, text);
		free(out);
		return NULL;
	}
	families = json_loadb(out, n, 0, &err);
	free(out);
	if (!families)
		fprintf(stderr, "parser output: %s\n", err.text);
	return families;
}

json_t *gwt_prom_family(json_t *families, const char *name)
{
	size_t i;
	json_t *fam;

	json_array_foreach(families, i, fam)
	{
		if (strcmp(json_string_value(json_object_get(fam, "name")), name) == 0)
			return fam;
	}
	return NULL;
}

size_t gwt_prom_family_size(json_t *families, const char *name)
{
	json_t *fam = gwt_prom_family(families, name);

	return fam ? json_array_size(json_object_get(fam, "samples")) : 0;
}

/* Whether @labels are exactly the NULL-terminated name/value pairs of @ap. */
static bool labels_are(json_t *labels, va_list ap)
{
	size_t n = 0;

	for (const char *k; (k = va_arg(ap, const char *));) {
		const char *v = va_arg(ap, const char *);
		json_t *got = json_object_get(labels, k);
		if (!got || strcmp(json_string_value(got), v) != 0)
			return false;
		n++;
	}
	return n == json_object_size(labels);
}

static json_t *find_sample_v(json_t *families, const char *name, va_list ap)
{
	size_t i, j;
	json_t *fam, *s;

	json_array_foreach(families, i, fam)
	{
		json_array_foreach(json_object_get(fam, "samples"), j, s)
		{
			va_list aq;
			bool match;
			if (strcmp(json_string_value(json_object_get(s, "name")), name) != 0)
				continue;
			va_copy(aq, ap);
			match = labels_are(json_object_get(s, "labels"), aq);
			va_end(aq);
			if (match)
				return s;
		}
	}
	return NULL;
}

bool gwt_prom_has_sample(json_t *families, const char *name, ...)
{
	va_list ap;
	json_t *s;

	va_start(ap, name);
	s = find_sample_v(families, name, ap);
	va_end(ap);
	return s != NULL;
}

double gwt_prom_sample(json_t *families, const char *name, ...)
{
	va_list ap;
	json_t *s;

	va_start(ap, name);
	s = find_sample_v(families, name, ap);
	va_end(ap);
	if (!s) {
		fprintf(stderr, "no sample %s with those labels\n", name);
		return NAN;
	}
	return json_number_value(json_object_get(s, "value"));
}
