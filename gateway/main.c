/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "common/version.h"

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("rpcrdma-gw %s\n", GW_VERSION);
		return 0;
	}
	fprintf(stderr, "usage: rpcrdma-gw -c FILE [--check] | --probe rdma://HOST:PORT\n");
	return 2;
}
