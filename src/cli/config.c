/* config.c — the daemons' configuration file: INI through libinih, each
 * key a long option of the command's table (config.h). */
#include <ctype.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "cli/config.h"
#include "pflex/io/sweep.h"

struct cli_config {
    const char *cmd, *section, *path;
    const struct option *opts;
    struct cli_config_entry *file;      /* what the file said */
    size_t nfile;
    char **argv;                        /* the merged command line */
    int argc;
    int *line;                          /* argv[i]'s line in the file, 0: a flag */
    unsigned char *overridden;          /* per option of opts: the command line gives it */
    char **rest;                        /* the command line less --config, --print-config */
    int nmade;                          /* argv[1..nmade) were made here */
    int print;
};

static void config_free(cli_config_t *cfg)
{
    if (!cfg)
        return;
    for (int i = 1; i < cfg->nmade; i++)
        free(cfg->argv[i]);
    free(cfg->argv);
    free(cfg->line);
    free(cfg->overridden);
    free(cfg->rest);
    cli_config_entries_free(cfg->file, cfg->nfile);
    free(cfg);
}

struct parse_ctx {
    const char *at, *section, *allowed;
    const struct option *opts;
    struct cli_config_entry *e;
    size_t n, cap;
    int line;                           /* the line the reader handed libinih last */
    int err_line;
    char err[200];
    int oom;
};

static void ctx_error(struct parse_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ctx_error(struct parse_ctx *c, const char *fmt, ...)
{
    if (c->err_line)
        return;                         /* the first one is said */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->err_line = c->line;
}

/* libinih's reader: one line of the text a call, counted, so that the
 * handler knows where it is (Debian builds libinih without line numbers
 * in the handler). */
static char *read_line(char *str, int num, void *stream)
{
    struct parse_ctx *c = stream;
    if (!*c->at)
        return NULL;
    const char *e = strchr(c->at, '\n');
    size_t n = e ? (size_t)(e - c->at) + 1 : strlen(c->at);
    if (n > (size_t)num - 1)
        n = (size_t)num - 1;            /* not reached: lines were checked */
    memcpy(str, c->at, n);
    str[n] = '\0';
    c->at += n;
    c->line++;
    return str;
}

static int in_list(const char *list, const char *word)
{
    size_t w = strlen(word);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == w && !strncmp(p, word, n))
            return 1;
        p = e ? e + 1 : p + n;
    }
    return 0;
}

static const struct option *find_opt(const struct option *opts, const char *name, size_t len)
{
    for (const struct option *o = opts; o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len))
            return o;
    return NULL;
}

static int is_true(const char *v)
{
    return !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1");
}

static int is_false(const char *v)
{
    return !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0");
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    struct parse_ctx *c = user;
    if (!*section) {
        ctx_error(c, "'%s' outside a section: put it under [%s]", name, c->section);
        return 0;
    }
    if (strcmp(section, c->section)) {
        if (in_list(c->allowed, section))
            return 1;                   /* another daemon's part of a shared file */
        ctx_error(c, "unknown section [%s] (this file is read by pflex %s: [%s])", section,
                  c->section, c->section);
        return 0;
    }
    const struct option *o = find_opt(c->opts, name, strlen(name));
    if (!o || !strcmp(name, "help")) {
        ctx_error(c, "unknown key '%s' in [%s] (the keys are the long options of "
                  "pflex %s --help)", name, section, c->section);
        return 0;
    }
    const char *v = value;
    /* libinih cuts " ;comment" off a key's line but not off a continued
     * one, and keeps "k=;x" whole: a ';' so placed is refused, so that a
     * value reads one way and --print-config's output reads back the same */
    for (const char *p = value; *p; p++)
        if (*p == ';' && (p == value || isspace((unsigned char)p[-1]))) {
            ctx_error(c, "'%s': a ';' at the start of a value or after a space starts a comment", name);
            return 0;
        }
    if (o->has_arg == no_argument) {
        if (is_false(value))
            return 1;                   /* off: as if not given */
        if (!is_true(value)) {
            ctx_error(c, "'%s' is a switch: want true or false, not '%s'", name, value);
            return 0;
        }
        v = "";
    } else if (o->has_arg == required_argument && !*value) {
        ctx_error(c, "'%s' needs a value", name);
        return 0;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct cli_config_entry *e = realloc(c->e, cap * sizeof *e);
        if (!e) {
            c->oom = 1;
            return 0;
        }
        c->e = e;
        c->cap = cap;
    }
    char *copy = strdup(v);
    if (!copy) {
        c->oom = 1;
        return 0;
    }
    c->e[c->n++] = (struct cli_config_entry){.opt = o, .value = copy, .line = c->line};
    return 1;
}

void cli_config_entries_free(struct cli_config_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].value);
    free(e);
}

int cli_config_parse(const char *text, const char *name, const char *section, const char *allowed,
                     const struct option *opts, struct cli_config_entry **e, size_t *n,
                     char *err, size_t errlen)
{
    *e = NULL;
    *n = 0;
    /* libinih reads a longer line in pieces, each taken for a line of its
     * own: refused here whole instead */
    int line = 1;
    for (const char *p = text; *p; line++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len && p[len - 1] == '\r')
            len--;
        if (len > CLI_CONFIG_MAX_LINE) {
            snprintf(err, errlen, "%s:%d: line longer than %d characters", name, line,
                     CLI_CONFIG_MAX_LINE);
            return -1;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    struct parse_ctx c = {.at = text, .section = section, .allowed = allowed, .opts = opts};
    int rc = ini_parse_stream(read_line, &c, on_key, &c);
    if (rc == 0 && !c.oom) {
        *e = c.e;
        *n = c.n;
        return 0;
    }
    if (c.oom || rc == -2)
        snprintf(err, errlen, "%s: out of memory", name);
    else if (c.err_line && (rc < 0 || c.err_line <= rc))
        snprintf(err, errlen, "%s:%d: %s", name, c.err_line, c.err);
    else
        snprintf(err, errlen, "%s:%d: not 'key = value', '[section]' or a comment", name, rc);
    cli_config_entries_free(c.e, c.n);
    return -1;
}

/* The option a command-line word "--name[=v]" names: exact, else an
 * unambiguous prefix (as getopt_long takes it); NULL for none. */
static const struct option *word_opt(const struct option *opts, const char *w)
{
    if (strncmp(w, "--", 2) || !w[2])
        return NULL;
    w += 2;
    size_t len = strcspn(w, "=");
    const struct option *o = find_opt(opts, w, len), *found = NULL;
    if (o)
        return o;
    for (o = opts; o->name; o++)
        if (!strncmp(o->name, w, len)) {
            if (found)
                return NULL;
            found = o;
        }
    return found;
}

static int said(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int said(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pflex %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

/* The file at path read into cfg->file: 0, or the exit code (said). */
static int read_file(cli_config_t *cfg)
{
    char *buf;
    size_t len;
    pflex_error_t err;
    if (pflex_read_all(cfg->path, &buf, &len, &err) < 0)
        return said(cfg->cmd, "--config %s", err.text);
    if (memchr(buf, '\0', len)) {
        free(buf);
        return said(cfg->cmd, "%s: not a text file (a NUL byte)", cfg->path);
    }
    char msg[512];
    int rc = cli_config_parse(buf, cfg->path, cfg->section, "agent,controller", cfg->opts, &cfg->file,
                              &cfg->nfile, msg, sizeof msg);
    free(buf);
    return rc < 0 ? said(cfg->cmd, "%s", msg) : 0;
}

int cli_config_load(const char *cmd, const char *section, const struct option *opts, int *argc,
                    char ***argv, cli_config_t **out)
{
    int n = *argc;
    char **av = *argv;
    if (getenv("PFLEX_LIST_OPTIONS"))       /* outside the table: for optdump.c's list */
        printf("--config=\n--print-config\n");
    size_t nopts = 0;
    while (opts[nopts].name)
        nopts++;
    /* The options point into the merged line for the process's life: the
     * last one loaded stays reachable from here (a second load, in a test
     * running several commands, frees the one before). */
    static cli_config_t *loaded;
    config_free(loaded);
    cli_config_t *cfg = loaded = calloc(1, sizeof *cfg);
    if (!cfg)
        return said(cmd, "out of memory");
    *cfg = (cli_config_t){.cmd = cmd, .section = section, .opts = opts};
    char **rest = cfg->rest = calloc((size_t)n + 1, sizeof *rest);
    cfg->overridden = calloc(nopts + 1, 1);
    if (!rest || !cfg->overridden)
        return said(cmd, "out of memory");
    /* --config and --print-config out; the flags the line gives noted */
    int nrest = 0, dashdash = 0;
    for (int i = 1; i < n; i++) {
        const char *w = av[i];
        if (dashdash || w[0] != '-' || !w[1]) {
            rest[nrest++] = av[i];
            continue;
        }
        if (!strcmp(w, "--")) {
            dashdash = 1;
            rest[nrest++] = av[i];
            continue;
        }
        if (!strcmp(w, "--print-config")) {
            cfg->print = 1;
            continue;
        }
        if (!strcmp(w, "--config") || !strncmp(w, "--config=", 9)) {
            if (cfg->path)
                return said(cmd, "--config given twice");
            if (w[8] == '=')
                cfg->path = w + 9;
            else if (i + 1 < n)
                cfg->path = av[++i];
            if (!cfg->path || !*cfg->path)
                return said(cmd, "--config needs a FILE\n(see pflex %s --help)", cmd);
            continue;
        }
        rest[nrest++] = av[i];
        const struct option *o = word_opt(opts, w);
        if (o) {
            cfg->overridden[o - opts] = 1;
            if (o->has_arg == required_argument && !strchr(w, '=') && i + 1 < n)
                rest[nrest++] = av[++i];
        }
    }
    if (cfg->path) {
        int rc = read_file(cfg);
        if (rc)
            return rc;
    }
    cfg->argv = calloc((size_t)nrest + cfg->nfile + 2, sizeof *cfg->argv);
    cfg->line = calloc((size_t)nrest + cfg->nfile + 2, sizeof *cfg->line);
    if (!cfg->argv || !cfg->line)
        return said(cmd, "out of memory");
    cfg->argv[cfg->argc++] = av[0];
    for (size_t i = 0; i < cfg->nfile; i++) {
        const struct cli_config_entry *e = &cfg->file[i];
        if (cfg->overridden[e->opt - opts])
            continue;
        size_t len = strlen(e->opt->name) + strlen(e->value) + 4;
        char *w = malloc(len);
        if (!w)
            return said(cmd, "out of memory");
        snprintf(w, len, e->opt->has_arg == no_argument ? "--%s" : "--%s=%s", e->opt->name, e->value);
        cfg->line[cfg->argc] = e->line;
        cfg->argv[cfg->argc++] = w;
        cfg->nmade = cfg->argc;
    }
    for (int i = 0; i < nrest; i++)
        cfg->argv[cfg->argc++] = rest[i];
    *argc = cfg->argc;
    *argv = cfg->argv;
    *out = cfg;
    return -1;
}

void cli_config_blame(const cli_config_t *cfg, int optind)
{
    int i = optind - 1;
    if (!cfg || i < 1 || i >= cfg->argc || !cfg->line[i])
        return;
    fprintf(stderr, "pflex %s: %s:%d: the value above is this line's (%s)\n", cfg->cmd, cfg->path,
            cfg->line[i], cfg->argv[i]);
}

int cli_config_print_wanted(const cli_config_t *cfg)
{
    return cfg && cfg->print;
}

/* The rest of help's "  --name ..." line (its metavar and text), or "". */
static void help_line(const char *help, const char *name, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t nl = strlen(name);
    for (const char *p = help; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *q = p;
        while (*q == ' ')
            q++;
        if (q == p || strncmp(q, "--", 2) || strncmp(q + 2, name, nl)
            || (q[2 + nl] != ' ' && q[2 + nl] != '\n' && q[2 + nl] != '='))
            continue;
        q += 2 + nl;
        while (*q == ' ')
            q++;
        size_t n = strcspn(q, "\n");
        snprintf(buf, len, "%.*s", (int)n, q);
        return;
    }
}

int cli_config_print(const cli_config_t *cfg, const char *help, FILE *out)
{
    /* the merged line read as getopt_long reads it: what is in force */
    const char **val = calloc((size_t)cfg->argc + 1, sizeof *val);
    const struct option **opt = calloc((size_t)cfg->argc + 1, sizeof *opt);
    size_t nv = 0;
    if (!val || !opt) {
        free(val);
        free(opt);
        return 1;
    }
    for (int i = 1; i < cfg->argc; i++) {
        const char *w = cfg->argv[i];
        if (!strcmp(w, "--"))
            break;
        const struct option *o = word_opt(cfg->opts, w);
        if (!o)
            continue;
        const char *eq = strchr(w, '=');
        const char *v = eq ? eq + 1 : "";
        if (o->has_arg == required_argument && !eq && i + 1 < cfg->argc)
            v = cfg->argv[++i];
        opt[nv] = o;
        val[nv++] = o->has_arg == no_argument ? "true" : v;
    }
    fprintf(out, "# pflex %s's configuration in force: pflex %s --config FILE reads it;\n"
            "# flags given with it override its keys.  Keys not set are commented out.\n[%s]\n",
            cfg->section, cfg->section, cfg->section);
    for (const struct option *o = cfg->opts; o->name; o++) {
        if (!strcmp(o->name, "help"))
            continue;
        int set = 0;
        for (size_t i = 0; i < nv; i++)
            if (opt[i] == o) {
                fprintf(out, "%s = %s\n", o->name, val[i]);
                set = 1;
            }
        if (!set) {
            char h[160];
            help_line(help, o->name, h, sizeof h);
            fprintf(out, "#%s =%s%s\n", o->name, *h ? " ; " : "", h);
        }
    }
    free(val);
    free(opt);
    return fflush(out) == 0 && !ferror(out) ? 0 : 1;
}

static int same_values(const struct cli_config_entry *a, size_t na, const struct cli_config_entry *b,
                       size_t nb, const struct option *o)
{
    size_t i = 0, j = 0;
    for (;;) {
        while (i < na && a[i].opt != o)
            i++;
        while (j < nb && b[j].opt != o)
            j++;
        if (i == na || j == nb)
            return i == na && j == nb;
        if (strcmp(a[i].value, b[j].value))
            return 0;
        i++;
        j++;
    }
}

char *cli_config_changes(const cli_config_t *cfg)
{
    if (!cfg || !cfg->path)
        return NULL;
    char *buf, msg[2048];
    size_t len, n = 0;
    pflex_error_t err;
    struct cli_config_entry *e = NULL;
    if (pflex_read_all(cfg->path, &buf, &len, &err) < 0)
        return strdup(err.text);
    int rc = memchr(buf, '\0', len) ? (snprintf(msg, sizeof msg, "%s: a NUL byte", cfg->path), -1)
             : cli_config_parse(buf, cfg->path, cfg->section, "agent,controller", cfg->opts, &e, &n,
                                msg, sizeof msg);
    free(buf);
    if (rc < 0) {
        size_t m = strlen(msg);
        snprintf(msg + m, sizeof msg - m, "; the configuration in force is kept");
        return strdup(msg);
    }
    size_t at = (size_t)snprintf(msg, sizeof msg, "%s reread:", cfg->path);
    int changed = 0;
    for (const struct option *o = cfg->opts; o->name; o++) {
        if (cfg->overridden[o - cfg->opts] || same_values(cfg->file, cfg->nfile, e, n, o))
            continue;
        if (at < sizeof msg)
            at += (size_t)snprintf(msg + at, sizeof msg - at, "%s %s", changed ? "," : "", o->name);
        changed = 1;
    }
    cli_config_entries_free(e, n);
    if (!changed)
        return NULL;
    if (at < sizeof msg)
        snprintf(msg + at, sizeof msg - at, " changed: in force after a restart");
    return strdup(msg);
}
