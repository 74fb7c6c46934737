/* sdnotify.h — systemd's readiness and watchdog protocol without
 * libsystemd (internal): one datagram of "KEY=VALUE" lines to the socket
 * systemd names in $NOTIFY_SOCKET.  The daemon reads the environment and
 * passes what it found; the library reads none itself.
 *
 *   READY=1        the service is up (Type=notify units wait for it)
 *   WATCHDOG=1     alive (WatchdogSec=: systemd kills a silent one)
 *   STOPPING=1     shutting down
 *   STATUS=...     a line for systemctl status
 */
#ifndef PFLEX_SDNOTIFY_H
#define PFLEX_SDNOTIFY_H

#include "pflex/util/error.h"

/* Send state to socket (a path, or "@name" for an abstract socket).
 * 0 sent; 1 nothing to do (socket NULL or empty: not under systemd); -1
 * with err. */
int pflex_sd_notify(const char *socket, const char *state, pflex_error_t *err);

/* The watchdog period systemd asks for, from $WATCHDOG_USEC and
 * $WATCHDOG_PID as read by the caller (either may be NULL): seconds, or 0
 * when there is no watchdog or it is meant for another process (pid is
 * not this one's). */
double pflex_sd_watchdog_s(const char *usec, const char *pid);

#endif
