/* format.c - the human units of format.h. */
#include "report/format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

tp_fmt tp_fmt_dur(int64_t ns) {
    tp_fmt f;
    double a = fabs((double)ns);
    if (a >= 1e9)
        snprintf(f.s, sizeof(f.s), "%.3f s", (double)ns / 1e9);
    else if (a >= 1e6)
        snprintf(f.s, sizeof(f.s), "%.3f ms", (double)ns / 1e6);
    else if (a >= 1e3)
        snprintf(f.s, sizeof(f.s), "%.3f us", (double)ns / 1e3);
    else
        snprintf(f.s, sizeof(f.s), "%lld ns", (long long)ns);
    return f;
}

tp_fmt tp_fmt_bytes(int64_t bytes) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    tp_fmt f;
    double v = (double)bytes;
    if (fabs(v) < 1024) {
        snprintf(f.s, sizeof(f.s), "%lld B", (long long)bytes);
        return f;
    }
    int u = 0;
    for (v /= 1024; fabs(v) >= 1024 && u < 4; v /= 1024)
        u++;
    snprintf(f.s, sizeof(f.s), "%.2f %s", v, units[u]);
    return f;
}

tp_fmt tp_fmt_pct(double pct) {
    tp_fmt f;
    if (pct < 0 || isnan(pct))
        strcpy(f.s, "n/a");
    else
        snprintf(f.s, sizeof(f.s), "%.1f%%", pct);
    return f;
}

tp_fmt tp_fmt_change(double pct) {
    tp_fmt f;
    if (!isfinite(pct))
        strcpy(f.s, "n/a");
    else
        snprintf(f.s, sizeof(f.s), "%+.1f%%", pct);
    return f;
}

tp_fmt tp_fmt_delta(int64_t ns) {
    tp_fmt f = tp_fmt_dur(ns);
    if (ns >= 0) {
        memmove(f.s + 1, f.s, strlen(f.s) + 1);
        f.s[0] = '+';
    }
    return f;
}

tp_fmt tp_fmt_si(double v, const char *unit) {
    static const char prefixes[] = " kMGTPE";
    tp_fmt f;
    int p = 0;
    while (fabs(v) >= 1000 && p < 6) {
        v /= 1000;
        p++;
    }
    if (p == 0)
        snprintf(f.s, sizeof(f.s), "%.0f %s", v, unit);
    else
        snprintf(f.s, sizeof(f.s), "%.2f %c%s", v, prefixes[p], unit);
    return f;
}

tp_fmt tp_fmt_bar(double pct, int width) {
    tp_fmt f;
    int n = pct > 0 ? (int)lround(pct / 100.0 * width) : 0;
    if (n > width) n = width;
    if (n > (int)sizeof(f.s) - 1) n = (int)sizeof(f.s) - 1;
    memset(f.s, '#', (size_t)n);
    f.s[n] = '\0';
    return f;
}
