/* SPDX-License-Identifier: MIT */
/*
 * gateway/modes.h - the route modes this program has, by configuration
 * mode: the one list of them (nginx's ngx_modules[]). Only the top of the
 * program names it (gateway/workers.c); it hands the list to each engine,
 * which knows modes only as entries of it (gateway/core/mode.h).
 */
#ifndef GW_GATEWAY_MODES_H
#define GW_GATEWAY_MODES_H

#include "conf/config.h"
#include "gateway/core/mode.h"

extern const struct gw_mode_ops *const gw_modes[GW_MODE_COUNT];

#endif
