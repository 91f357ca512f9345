/* SPDX-License-Identifier: MIT */
/*
 * gateway/sd_notify.h - service readiness for systemd (Type=notify).
 *
 * The protocol is one datagram of "KEY=value" lines to the AF_UNIX socket
 * named in $NOTIFY_SOCKET (a path, or an abstract name when it starts with
 * '@'). libsystemd's sd_notify() does the same; writing it here keeps
 * libsystemd out of the dependencies of a daemon that runs without systemd
 * just as well. Without $NOTIFY_SOCKET nothing is sent.
 */
#ifndef GW_GATEWAY_SD_NOTIFY_H
#define GW_GATEWAY_SD_NOTIFY_H

/* Send @state ("READY=1\nSTATUS=..."). Returns 1 sent, 0 not under systemd, -errno. */
int gw_sd_notify(const char *state);

/* printf-style convenience. */
int gw_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
