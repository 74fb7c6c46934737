/* etcd_fixture.h — a real etcd for the tests: one member on loopback,
 * started in a temporary folder on free ports and killed at the end (the
 * tests that need it skip without Debian's etcd-server). */
#ifndef PFLEX_TESTS_ETCD_FIXTURE_H
#define PFLEX_TESTS_ETCD_FIXTURE_H

/* Start it and wait until it answers (at most 15 s): 0 started, 1 no etcd
 * installed, -1 it would not start. */
int etcd_fixture_start(void);
/* Kill it and remove its folder (nothing when it was not started). */
void etcd_fixture_stop(void);
/* Its client URL ("http://127.0.0.1:PORT"); NULL when not started. */
const char *etcd_fixture_url(void);
/* A loopback port nothing listens on (a member that is down). */
int etcd_fixture_dead_port(void);
void etcd_fixture_sleep(double s);

#endif
