/* config.h — the daemons' configuration file (docs/install.md): INI,
 * read with libinih.  One section per command ([agent], [controller]);
 * each key is a long option of that command's getopt table, so a flag
 * added to the table has its key at once.  The file's options go before
 * the command line's, and a key the command line gives too is dropped
 * from the file's: flags override the file. */
#ifndef PFLEX_CLI_CONFIG_H
#define PFLEX_CLI_CONFIG_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* Longest line the reader takes (libinih's fixed line buffer, less the
 * newline and its NUL): a longer one is an error, never split. */
#define CLI_CONFIG_MAX_LINE 198

/* One key = value of the file, as read. */
struct cli_config_entry {
    const struct option *opt;   /* the option of the table it names */
    char *value;                /* "" for a flag given as true */
    int line;
};

typedef struct cli_config cli_config_t;

/* text (NUL-terminated) read as the file called name: the keys of
 * [section] into *e (the caller frees with cli_config_entries_free),
 * other sections in allowed (comma-separated names) skipped.  0, or -1
 * with "name:line: what is wrong" in err. */
int cli_config_parse(const char *text, const char *name, const char *section, const char *allowed,
                     const struct option *opts, struct cli_config_entry **e, size_t *n,
                     char *err, size_t errlen);
void cli_config_entries_free(struct cli_config_entry *e, size_t n);

/* Takes --config FILE and --print-config out of the command line and, with a
 * file, puts its options (as --key=value) before the command line's.  The
 * new argv lives as long as the process.  -1 to go on, else the exit
 * code (2, said on stderr as "pflex CMD: FILE:LINE: ..."). */
int cli_config_load(const char *cmd, const char *section, const struct option *opts, int *argc,
                    char ***argv, cli_config_t **cfg);

/* The command's parse refused the option that ended at argv[optind - 1]:
 * when it came from the file, say which line. */
void cli_config_blame(const cli_config_t *cfg, int optind);

/* --print-config was given. */
int cli_config_print_wanted(const cli_config_t *cfg);

/* The effective configuration (the file's keys, then the flags over them)
 * in the file's format; every key not set, commented out with its line
 * of help (the "  --key" line of help).  Returns 0, or 1 on a write error. */
int cli_config_print(const cli_config_t *cfg, const char *help, FILE *out);

/* SIGHUP: the file read again and set against what is in force.  A text
 * for the log (the caller frees; NULL when nothing changed or there is
 * no file): the keys whose change waits for a restart, or the file's
 * error.  No key changes a running daemon: the ones that name a file
 * (token-file, job-map) have that file reread by the daemon itself. */
char *cli_config_changes(const cli_config_t *cfg);

#endif
