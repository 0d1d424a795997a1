/* run.c - `tprof run [KEY options] [--] COMMAND [ARG...]`: a Python training script profiled
 * without a change to it, as `nsys profile` and `py-spy record` do (docs/PYTHON.md, "tprof run").
 *
 * The command replaces this process (execvp), so its arguments, output, signals and exit status
 * are its own. Before that, each option --KEY VALUE (any configuration key, docs/CONFIG.md) is
 * checked as the library checks it and becomes TPROF_<KEY>=VALUE, the environment source every
 * profiled process reads last; TPROF_AUTORUN=1 and the Python package's _bootstrap folder first
 * on PYTHONPATH make every Python process of the command set tprof run up as it starts (that
 * folder's sitecustomize; python/tprof/_autorun.py does the rest). The folder is found through
 * TPROF_PYTHON_PACKAGE (which `python -m tprof` sets to its package), else beside this program:
 * a build tree's python/tprof, the site-packages/tprof beside a repaired wheel's tprof.scripts/,
 * or the site-packages/tprof of the environment it is installed in. */
#include "cli/cli.h"

#include "config/config.h"
#include "config/parse.h"

#include "tprof.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: tprof run [options] [--] COMMAND [ARG...]\n"
    "\n"
    "Runs COMMAND (python train.py ..., python -m pkg, torchrun ...) with every Python process\n"
    "of it profiled, the script unchanged: each optimizer step is a step, each DataLoader\n"
    "batch the dataloader stage, a Lightning Trainer is profiled by tprof's callback. The\n"
    "command's arguments, output and exit status are its own; the profiled process prints the\n"
    "summary and the run directory on stderr at its end. A COMMAND ending in .py runs with\n"
    "python3 (with the interpreter of `python -m tprof run`).\n"
    "\n"
    "options:\n"
    "  --KEY VALUE, --KEY=VALUE  any configuration key (docs/CONFIG.md): --active 5,\n"
    "                       --output_dir runs, --record_shapes; passed as TPROF_<KEY>\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: the command's; 2 a usage error or an invalid value, 126 or 127 when the\n"
    "command cannot be run.\n";

enum { EXIT_CANNOT_RUN = 126, EXIT_NOT_FOUND = 127 };

/* TPROF_<KEY>=value, the key's own name in capitals; -1 when out of memory. */
static int set_key_env(const char *name, const char *value) {
    char var[80] = "TPROF_";
    size_t n = strlen(var);
    for (size_t i = 0; name[i] && n + 1 < sizeof(var); i++)
        var[n++] = (char)toupper((unsigned char)name[i]);
    var[n] = '\0';
    return setenv(var, value, 1);
}

/* One option at argv[*i] (a --KEY): checked on cfg and put in the environment; its value is
 * the text after '=', else the next argument, except for a boolean key not followed by a
 * boolean (a flag). 0, or TP_EXIT_ERROR after the error line. */
static int take_key(tprof_config *cfg, int argc, char **argv, int *i) {
    const char *key = argv[*i] + 2;
    if (strncmp(key, "profiling.", 10) == 0) key += 10;
    const char *eq = strchr(key, '=');
    size_t len = eq ? (size_t)(eq - key) : strlen(key);
    int is_bool = 0;
    const char *name = tp_config_key_name(key, len, &is_bool);
    if (!name) return tp_cli_usage("run", "unknown option %s: not a configuration key", argv[*i]);
    const char *value = eq ? eq + 1 : NULL;
    int b;
    if (!value && is_bool && (*i + 1 >= argc || tp_parse_bool(argv[*i + 1], &b)))
        value = "true";
    else if (!value && *i + 1 < argc)
        value = argv[++*i];
    if (!value) return tp_cli_usage("run", "option --%.*s needs a value", (int)len, key);
    if (tprof_config_set(cfg, name, value))
        return tp_cli_usage("run", "%s", tprof_config_error(cfg));
    if (set_key_env(name, value)) return tp_cli_error("run: out of memory");
    return 0;
}

/* dir/tail when it holds tprof's sitecustomize.py; a new string, or NULL. */
static char *bootstrap_in(const char *dir, const char *tail) {
    size_t n = strlen(dir) + strlen(tail) + sizeof("/sitecustomize.py");
    char *path = malloc(n);
    if (!path) return NULL;
    snprintf(path, n, "%s%s/sitecustomize.py", dir, tail);
    if (access(path, R_OK) == 0) {
        *strrchr(path, '/') = '\0';
        return path;
    }
    free(path);
    return NULL;
}

/* The package's _bootstrap folder (see the head of this file), or NULL. */
static char *bootstrap_dir(void) {
    const char *package = getenv("TPROF_PYTHON_PACKAGE");
    if (package && *package) return bootstrap_in(package, "/_bootstrap");
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    char *dir = bootstrap_in(exe, "/python/tprof/_bootstrap");
    if (!dir) /* a wheel repaired by auditwheel: the program is in site-packages/tprof.scripts/ */
        dir = bootstrap_in(exe, "/../tprof/_bootstrap");
    if (dir) return dir;
    char pattern[PATH_MAX + 64];
    snprintf(pattern, sizeof(pattern), "%s/../lib/python3*/site-packages/tprof/_bootstrap", exe);
    glob_t g;
    if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc && !dir; i++)
            dir = bootstrap_in(g.gl_pathv[i], "");
    globfree(&g);
    return dir;
}

/* TPROF_AUTORUN=1 and dir first on PYTHONPATH; -1 when out of memory. */
static int set_bootstrap_env(const char *dir) {
    const char *old = getenv("PYTHONPATH");
    size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
    char *path = malloc(n);
    if (!path) return -1;
    snprintf(path, n, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    int rc = setenv("PYTHONPATH", path, 1) || setenv("TPROF_AUTORUN", "1", 1);
    free(path);
    return rc;
}

/* Replaces this process with the command; returns only when it could not be run. */
static int exec_command(char **cmd) {
    size_t len = strlen(cmd[0]);
    if (len > 3 && strcmp(cmd[0] + len - 3, ".py") == 0) {
        const char *python = getenv("TPROF_RUN_PYTHON");
        cmd[-1] = (char *)(python && *python ? python : "python3"); /* the slot before is ours */
        cmd--;
    }
    execvp(cmd[0], cmd);
    int err = errno;
    tp_cli_error("run: cannot run %s: %s", cmd[0], strerror(err));
    return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}

static int run_cmd(int argc, char **argv) {
    tprof_config *cfg = tprof_config_new();
    if (!cfg) return tp_cli_error("run: out of memory");
    int i = 1, rc = 0;
    for (; i < argc && rc == 0 && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(help, stdout);
            tprof_config_free(cfg);
            return TP_EXIT_OK;
        }
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        rc = strncmp(argv[i], "--", 2) == 0
                 ? take_key(cfg, argc, argv, &i)
                 : tp_cli_usage("run", "unknown option %s (options are --KEY VALUE)", argv[i]);
    }
    tprof_config_free(cfg);
    if (rc) return rc;
    if (i >= argc) return tp_cli_usage("run", "no command to run");
    char *dir = bootstrap_dir();
    if (!dir)
        return tp_cli_error("run: tprof's Python package is not beside this program (pip install "
                            "tprof, or python -m tprof run)");
    rc = set_bootstrap_env(dir);
    free(dir);
    if (rc) return tp_cli_error("run: out of memory");
    return exec_command(argv + i);
}

const tp_cli_verb tp_cli_run = {"run", "profile a Python training script, unchanged", help,
                                run_cmd};
