/* SPDX-License-Identifier: MIT */
#include "gateway/modes.h"

const struct gw_mode_ops *const gw_modes[GW_MODE_COUNT] = {
	[GW_MODE_FORWARD] = &gw_forward_mode,
	[GW_MODE_REVERSE] = &gw_reverse_mode,
};
