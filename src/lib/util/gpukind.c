/* gpukind.c — the settable power-limit range of each known GPU kind
 * (datasheet values) and the names a kind goes by: the one table of names
 * and aliases.  The simulator's kinds (src/lib/sim/model.c) resolve
 * through it and read their ranges from it. */
#include <stddef.h>
#include <strings.h>
#include "pflex/util/gpukind.h"

static const struct pflex_gpu_range kinds[] = {
    {"H100-SXM5-80GB", 200, 700},
    {"H200-SXM-141GB", 200, 700},
    {"A100-SXM4-40GB", 100, 400},
    {"A100-PCIE-80GB", 150, 300},
    {"A100-SXM4-80GB", 100, 400},
    {"A40", 100, 300},
    {"L40S", 100, 350},
    {"V100-SXM2-32GB", 150, 300},
    {"B200-SXM-180GB", 200, 1000},
};
#define NKINDS ((int)(sizeof kinds / sizeof *kinds))

static const struct { const char *alias, *name; } aliases[] = {
    {"H100", "H100-SXM5-80GB"}, {"H100-SXM", "H100-SXM5-80GB"}, {"H100-SXM5", "H100-SXM5-80GB"},
    {"H200", "H200-SXM-141GB"}, {"H200-SXM", "H200-SXM-141GB"},
    {"A100", "A100-SXM4-40GB"}, {"A100-40", "A100-SXM4-40GB"}, {"A100-SXM4", "A100-SXM4-40GB"},
    {"A100-SXM4-40G", "A100-SXM4-40GB"}, {"A100-80", "A100-PCIE-80GB"},
    {"A100-PCIE", "A100-PCIE-80GB"}, {"A100-PCIe-80GB", "A100-PCIE-80GB"},
    {"A100-SXM4-80G", "A100-SXM4-80GB"}, {"A100-SXM-80GB", "A100-SXM4-80GB"},
    {"V100", "V100-SXM2-32GB"}, {"V100-SXM2", "V100-SXM2-32GB"}, {"Tesla V100-SXM2-32GB",
    "V100-SXM2-32GB"}, {"L40S-48GB", "L40S"}, {"B200", "B200-SXM-180GB"},
    {"B200-SXM", "B200-SXM-180GB"},
};

const struct pflex_gpu_range *pflex_gpu_range_find(const char *name)
{
    if (!name)
        return NULL;
    if (!strncasecmp(name, "NVIDIA ", 7))
        name += 7;
    for (int i = 0; i < NKINDS; i++)
        if (!strcasecmp(name, kinds[i].name))
            return &kinds[i];
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (!strcasecmp(name, aliases[i].alias))
            return pflex_gpu_range_find(aliases[i].name);
    return NULL;
}

const struct pflex_gpu_range *pflex_gpu_range_at(int i)
{
    return i >= 0 && i < NKINDS ? &kinds[i] : NULL;
}
