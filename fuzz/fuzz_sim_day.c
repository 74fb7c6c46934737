/* fuzz_sim_day.c — libFuzzer target for a grid day's power record
 * (pflex_sim_day_read, TIME,WATTS rows through the CSV tokenizer), read
 * from a memory file as `pflex simulate --day` reads the field's; once with
 * the HH:MM date, once without. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pflex/site/simulate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("day", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        for (int k = 0; k < 2; k++) {
            pflex_target_set_t set;
            struct pflex_sim_day d;
            pflex_error_t err;
            pflex_target_set_init(&set);
            if (pflex_sim_day_read(path, k ? "2020-08-14-07:00" : NULL, 600, &set, &d, &err) == 0)
                pflex_sim_day_fini(&d);
            pflex_target_set_fini(&set);
        }
    }
    close(fd);
    return 0;
}
