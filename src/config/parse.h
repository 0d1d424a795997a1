/* parse.h - the text of configuration values: numbers, booleans, names, lists, and how much of a
 * value a message may echo.
 *
 * Pure functions of their text (no tprof_config): every source's value goes through them via
 * the key table (config.c), and rank.c reads the launchers' variables with tp_parse_int. */
#ifndef TP_CONFIG_PARSE_H
#define TP_CONFIG_PARSE_H

#include "util/log.h" /* tp_shown, tp_shown_path: how much of a value a message echoes */

#include <stddef.h>
#include <stdint.h>

/* A whole decimal integer, optionally signed; 0, or -1 when s is anything else. */
int tp_parse_int(const char *s, int64_t *out);
/* true/false, 1/0, yes/no, on/off in any case (Python's True/False included); 0 or -1. */
int tp_parse_bool(const char *s, int *out);
/* A finite decimal >= 0 ("0", "989.5", "1e3"); 0 or -1. */
int tp_parse_decimal(const char *s, double *out);
/* auto, on or off (any case), or a boolean (on/off); 0 or -1. */
int tp_parse_gpu_mode(const char *s, int *mode);
/* The longest plain name: a file name may have 255 bytes (NAME_MAX), and the run directory's
 * name gets a "-<n>" or ".tmp.<random>" suffix (run/claim.h). */
#define TP_NAME_MAX 200
/* 1 when s can be one plain path component: not empty, not "." or "..", no '/' and no control
 * character (a run directory's name stays inside output_dir), at most TP_NAME_MAX bytes. */
int tp_plain_name(const char *s);
/* "name" or "name=pattern|pattern" with no empty name or pattern: 1, else 0. */
int tp_valid_stage(const char *s);
/* Splits list text in place ("1,5,10", "[1, 5, 10]", "a, 'b'"): items trimmed and unquoted into
 * items (room for one more than the commas of text). Returns the count. */
size_t tp_split_list(char *text, const char **items);

#endif
