/* fmt_double.c - tp_fmt_double: a double as JSON, the first of its %.15g, %.16g and %.17g forms
 * that reads back as the same double (buf.h), byte for byte what printf and strtod would give,
 * mostly without calling either.
 *
 * Why hand-written: the HTML report writes a few thousand ratios (percentages, means) that need
 * 16 or 17 digits, and the printf way (three snprintf calls, two strtod) cost 5,300 instructions
 * each, a sixth of the report's work on a small trace; no C library in Debian formats doubles
 * exactly and fast (libdouble-conversion is C++). The fast path costs a few hundred.
 *
 * The fast path, for a finite non-integer v with 1e-6 <= |v| < 1e16 (the report's ratios), is
 * exact integer arithmetic: v = m * 2^-s with m < 2^53, so P = m * 10^k (k <= 22: P < 2^127)
 * scales v by 2^s * 10^k exactly, with k chosen so that P / 2^s lies in [10^16, 10^17).
 *   - The n-digit significand (n = 17 - j) is P / (2^s * 10^j) rounded half to even, as printf
 *     rounds the exact binary value (no double rounding: each n is computed from P itself).
 *   - The candidate reads back as v when it lies within half an ulp of v, which in P's units is
 *     10^k / 2 (a quarter below a power of two, where the gap below is half as wide); exactly
 *     halfway, strtod rounds to the even mantissa. All of it in 128-bit integers, no rounding.
 *   - The digits are laid out as %g lays them out (exponent form when the decimal exponent is
 *     below -4 or at least the precision), trailing zeros dropped.
 * Everything else (subnormals, huge or tiny values, a compiler without 128-bit integers) takes
 * the printf way, which is also the reference test_util_format checks the fast path against. */
#include "util/buf.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The printf way: the first precision whose output strtod reads back as v. */
static char *fmt_double_printf(char *p, double v) {
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(p, TP_FMT_DOUBLE_MAX, "%.*g", prec, v); /* at most 24 characters */
        if (prec == 17 || strtod(p, NULL) == v) break;
    }
    return p + n;
}

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 u128;

static const uint64_t POW10[20] = {1u,
                                   10u,
                                   100u,
                                   1000u,
                                   10000u,
                                   100000u,
                                   1000000u,
                                   10000000u,
                                   100000000u,
                                   1000000000u,
                                   10000000000u,
                                   100000000000u,
                                   1000000000000u,
                                   10000000000000u,
                                   100000000000000u,
                                   1000000000000000u,
                                   10000000000000000u,
                                   100000000000000000u,
                                   1000000000000000000u,
                                   10000000000000000000u};

static u128 pow10_128(int k) {
    assert(k >= 0 && k <= 38);
    return k < 20 ? POW10[k] : (u128)POW10[19] * POW10[k - 19];
}

/* The exact scaled value of one double: v = m * 2^-s, P = m * 10^k, and P / 2^s in
 * [10^16, 10^17), so that v's decimal exponent is 16 - k. */
typedef struct scaled {
    u128 P;
    int s, k;
    uint64_t m;
    int pow2; /* m is 2^52: the gap below v is half the gap above */
} scaled;

/* Fills sc for a positive normal non-integer v in the fast path's range; 0 when v is outside. */
static int scale(double v, scaled *sc) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    int biased = (int)(bits >> 52 & 0x7ff);
    if (biased == 0) return 0; /* subnormal */
    sc->m = (bits & ((UINT64_C(1) << 52) - 1)) | UINT64_C(1) << 52;
    sc->s = 1075 - biased; /* v = m * 2^-s */
    sc->pow2 = sc->m == UINT64_C(1) << 52 && biased > 1;
    if (sc->s <= 0 || sc->s > 100) return 0;
    int d = (int)floor(log10(v)); /* an estimate, corrected below */
    for (int tries = 0; tries < 3; tries++) {
        sc->k = 16 - d;
        if (sc->k < 0 || sc->k > 22) return 0; /* P < 2^53 * 10^22 < 2^127 */
        sc->P = (u128)sc->m * pow10_128(sc->k);
        u128 whole = sc->P >> sc->s;
        if (whole >= POW10[17])
            d++;
        else if (whole < POW10[16])
            d--;
        else
            return 1;
    }
    return 0;
}

/* The n-digit significand of v, rounded half to even: P / (2^s * 10^(17 - n)). It may be 10^n
 * (a carry into a new digit). *unit gets the divisor, so that q * *unit is q's value in P's
 * units. */
static uint64_t digits_at(const scaled *sc, int n, u128 *unit) {
    *unit = pow10_128(17 - n) << sc->s;
    u128 q = sc->P / *unit, r = sc->P % *unit;
    if (2 * r > *unit || (2 * r == *unit && (q & 1))) q++;
    return (uint64_t)q;
}

/* Whether q * unit (in P's units) reads back as v: within half an ulp, 10^k / 2 in these units
 * (a quarter below a power of two); exactly halfway, strtod takes the even mantissa. */
static int reads_back(const scaled *sc, uint64_t q, u128 unit) {
    u128 c = (u128)q * unit;
    int below = c < sc->P;
    u128 dist = below ? sc->P - c : c - sc->P;
    u128 ulp = pow10_128(sc->k);
    u128 twice = below && sc->pow2 ? 4 * dist : 2 * dist;
    return twice < ulp || (twice == ulp && (sc->m % 2 == 0));
}

static char *put_digits(char *p, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--, v /= 10)
        p[i] = (char)('0' + v % 10);
    return p + n;
}

/* digits (ndig of them, no trailing zero) times 10^(exp10 - ndig + 1), laid out as %.{prec}g. */
static char *layout_g(char *p, uint64_t digits, int ndig, int exp10, int prec) {
    char d[20];
    put_digits(d, digits, ndig);
    if (exp10 < -4 || exp10 >= prec) {
        *p++ = d[0];
        if (ndig > 1) {
            *p++ = '.';
            memcpy(p, d + 1, (size_t)ndig - 1);
            p += ndig - 1;
        }
        *p++ = 'e';
        *p++ = exp10 < 0 ? '-' : '+';
        int e = abs(exp10); /* printf's exponent has at least two digits */
        return put_digits(p, (uint64_t)e, e < 100 ? 2 : 3);
    }
    if (exp10 < 0) {
        *p++ = '0';
        *p++ = '.';
        memset(p, '0', (size_t)(-exp10 - 1));
        p += -exp10 - 1;
        memcpy(p, d, (size_t)ndig);
        return p + ndig;
    }
    int whole = exp10 + 1;
    if (ndig <= whole) {
        memcpy(p, d, (size_t)ndig);
        memset(p + ndig, '0', (size_t)(whole - ndig));
        return p + whole;
    }
    memcpy(p, d, (size_t)whole);
    p += whole;
    *p++ = '.';
    memcpy(p, d + whole, (size_t)(ndig - whole));
    return p + (ndig - whole);
}

/* The fast path for a positive v; NULL when v is outside its range. */
static char *fmt_double_exact(char *p, double v) {
    scaled sc;
    if (!scale(v, &sc)) return NULL;
    for (int n = 15; n <= 17; n++) {
        u128 unit;
        uint64_t q = digits_at(&sc, n, &unit);
        if (n < 17 && !reads_back(&sc, q, unit)) continue;
        int exp10 = 16 - sc.k, ndig = n;
        if (q == POW10[n]) { /* rounded up into a new digit: 10^n is 1 followed by zeros */
            q = 1;
            ndig = 1;
            exp10++;
        }
        while (ndig > 1 && q % 10 == 0) {
            q /= 10;
            ndig--;
        }
        return layout_g(p, q, ndig, exp10, n);
    }
    assert(0 && "the 17-digit form always reads back");
    return NULL;
}
#endif

char *tp_fmt_double(char *p, double v) {
    /* JSON has no NaN or infinity. Rare paths: snprintf is fine here. */
    if (!isfinite(v)) return p + snprintf(p, TP_FMT_DOUBLE_MAX, "null");
    /* The range test first: converting a double beyond int64 is undefined. */
    if (fabs(v) < 9.0e15 && v == (double)(int64_t)v) return tp_fmt_i64(p, (int64_t)v);
#ifdef __SIZEOF_INT128__
    char *start = p;
    if (v < 0) *p++ = '-';
    char *end = fmt_double_exact(p, fabs(v));
    if (end) return end;
    p = start;
#endif
    return fmt_double_printf(p, v);
}

void tp_buf_double(tp_buf *b, double v) {
    if (tp_buf_reserve(b, TP_FMT_DOUBLE_MAX)) return;
    b->len = (size_t)(tp_fmt_double(b->data + b->len, v) - b->data);
}
