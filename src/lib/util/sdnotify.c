/* sdnotify.c — systemd's notify protocol (sdnotify.h): a datagram on an
 * AF_UNIX socket, the way sd_notify(3) sends it. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "lib/util/sdnotify.h"

int pflex_sd_notify(const char *socket_name, const char *state, pflex_error_t *err)
{
    if (!socket_name || !*socket_name)
        return 1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(socket_name);
    if ((socket_name[0] != '/' && socket_name[0] != '@') || n >= sizeof sa.sun_path)
        return pflex_error_set(err, "NOTIFY_SOCKET=%s: want an absolute path or @name",
                               socket_name);
    memcpy(sa.sun_path, socket_name, n);
    if (socket_name[0] == '@')
        sa.sun_path[0] = '\0';      /* abstract: the name has no terminating NUL */
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n
                                + (socket_name[0] == '/'));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return pflex_error_set(err, "sd_notify: socket: %s", strerror(errno));
    ssize_t sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
    int e = errno;
    close(fd);
    if (sent != (ssize_t)strlen(state))
        return pflex_error_set(err, "sd_notify to %s: %s", socket_name,
                               sent < 0 ? strerror(e) : "short write");
    return 0;
}

double pflex_sd_watchdog_s(const char *usec, const char *pid)
{
    if (!usec || !*usec)
        return 0;
    char *end;
    if (pid && *pid) {
        long p = strtol(pid, &end, 10);
        if (*end || p != (long)getpid())
            return 0;
    }
    errno = 0;
    unsigned long long us = strtoull(usec, &end, 10);
    if (*end || errno || us == 0)
        return 0;
    return us / 1e6;
}
