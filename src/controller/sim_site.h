/* sim_site.h — the site controller as pflex simulate's online policies
 * (pflex/site/simulate.h: struct pflex_sim_controller): a controller in process
 * (ctl_config.in_process) with one node per simulated job slot, fed each
 * period what the slot drew and delivered, running ctl_period itself.
 *
 * Why here and not in the library: the library sits below the daemons and
 * may not call them; the simulator's engine (src/lib/site) takes the
 * controller's period as three functions and the command (src/cli/
 * simulate.c) hands these in, so that the simulated online policies are
 * the daemon's own steps (period.h), not a copy of its rules. */
#ifndef PFLEX_CONTROLLER_SIM_SITE_H
#define PFLEX_CONTROLLER_SIM_SITE_H

#include "pflex/site/simulate.h"

extern const struct pflex_sim_controller ctl_sim;

#endif
