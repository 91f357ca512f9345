/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the rule-file loader: any byte string as a user rule file (no stock
 * files). It must be compiled or refused with a message, never crash or
 * leak. When it compiles, a fixed set of calls is walked with it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ulb-rules/ulb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A call to program 7 version 1 procedure 1, and an NFSv4 COMPOUND shape. */
static const uint8_t probe[] = {
	0, 0, 0, 1, 0, 0, 0,   0,   0,	 0,   0,   2, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0,
	1, 0, 0, 0, 0, 0, 0,   0,   0,	 0,   0,   0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0,
	0, 3, 0, 0, 0, 5, 'a', 'b', 'c', 'd', 'e', 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[512];
	int fd = memfd_create("ulb-rule", 0);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	const char *files[] = { path };
	struct ulb_options o = { .stock_dir = "", .files = files, .n_files = 1 };
	struct ulb_rules *r = ulb_rules_load(&o, err, sizeof(err));
	close(fd);
	if (!r) {
		if (!err[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	struct ulb_call call;
	ulb_parse_call(r, NULL, probe, sizeof(probe), &call);
	ulb_rules_free(r);
	return 0;
}
