/* Fused training kernel: whole GD trajectories of 1-layer softmax attention (linear, ReLU head).
 *
 * Why: at the paper's sizes ((n, T, d) = (6, 8, 10)) one step is ~3000 multiply-adds per seed,
 * far too little for torch's batched kernels, whose per-call overhead and scalar small-matrix
 * loops dominated. Here a group of LANES seeds runs its whole trajectory in one call, and every
 * array keeps the seed as its last axis, so each formula below is one SIMD operation on LANES
 * seeds (GCC vector extensions: lane-wise IEEE arithmetic).
 *
 * Why it is batch-invariant: lane l of every operation is the same IEEE operation on seed l's
 * numbers alone (+ - * / sqrt are exactly rounded, vector or scalar; exp, vexp below, is made of
 * them), sums run in a fixed order that depends only on (n, T, d, m), and the build forbids
 * fused multiply-add contraction (-ffp-contract=off). So a seed's trajectory has the same bits
 * whichever group, batch size or thread runs it, and whichever ISA build below runs.
 *
 * The math is that of attnsvm/train/loop.py and heads.py (hand-written gradient with centred token
 * values, docs/math.md#cancellation-after-saturation):
 * dL/da_it = c_i s_it sum_u s_iu (e_it - e_iu), c_i = -Y_i sigmoid(-Y_i f_i) / n, with
 * e_it = v^T x_it (linear head) or 1[V^T xbar_i > 0]^T V^T x_it (ReLU head).
 * Called through ctypes from attnsvm/train/fused.py, which documents the array layouts. The same
 * library holds two exactly rounded helpers: batchops.matmul's products (attnsvm_seq_matmul) and
 * the nuclear SVM's Schur complement sum (attnsvm_schur_lower, svm/nuclear_ops.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Two builds of this file (setup.py): attnsvm.kernel._fused_v4, 8 lanes for AVX-512
 * (x86-64-v4), used where the CPU has it; attnsvm.kernel._fused, 4 lanes, with an AVX2
 * (x86-64-v3) and a baseline clone picked at load time. The vector width must match the ISA's registers: comparisons of 8-lane
 * vectors on AVX2 are expanded lane by lane (measured 5x slower than 4 lanes). The lane count
 * never changes a seed's numbers, only how many seeds share a call. -DISA_TARGET= builds one
 * plain version (tests/test_fused.py). */
#ifdef ATTNSVM_V4
#define LANES 8
#define MODULE_NAME "_fused_v4"
#define MODULE_INIT PyInit__fused_v4
#ifndef ISA_TARGET
#define ISA_TARGET __attribute__((target("arch=x86-64-v4")))
#endif
#else
#define LANES 4
#define MODULE_NAME "_fused"
#define MODULE_INIT PyInit__fused
#ifndef ISA_TARGET
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define ISA_TARGET __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ISA_TARGET
#endif
#endif
#endif
typedef double vd __attribute__((vector_size(LANES * 8), aligned(8)));
typedef int64_t vi __attribute__((vector_size(LANES * 8), aligned(8)));

/* Helpers must be inlined into each ISA version: a call would pass vectors between code
 * compiled for different ISAs, whose calling conventions for them differ. */
#define INLINE inline __attribute__((always_inline))

static INLINE vd splat(double x) {
    vd r;
    for (int l = 0; l < LANES; l++) r[l] = x;
    return r;
}
static INLINE vd select_d(vi mask, vd a, vd b) { return (vd)((mask & (vi)a) | (~mask & (vi)b)); }
static INLINE vi select_i(vi mask, vi a, vi b) { return (mask & a) | (~mask & b); }
/* exp, lane-wise in plain arithmetic so that it vectorises (a libm call per lane took half of
 * the kernel's time). x = k ln2 + r with |r| <= ln2/2 (Cody-Waite: k ln2_hi is exact), exp(r)
 * by its Taylor polynomial of degree 13 (truncation < 5e-18 relative), times 2^k built from
 * exponent bits in two halves so that results down to the subnormals round once. Within 1 ulp
 * of the correctly rounded exp (tests/test_fused.py); exp(-inf) = 0, overflow gives inf. */
static INLINE vd vexp(vd x) {
    const vd lo = splat(-746.0), hi = splat(710.0);
    x = select_d(x < lo, lo, x);
    x = select_d(x > hi, hi, x);
    const vd shifter = splat(0x1.8p52); /* adding it rounds to an integer, kept in low bits */
    vd kf = (x * splat(0x1.71547652b82fep0) + shifter) - shifter; /* round(x / ln2) */
    vd r = (x - kf * splat(0x1.62e42feep-1)) - kf * splat(0x1.a39ef35793c76p-33);
    static const double inv_fact[] = {
        1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
        1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0,
        1.0 / 6.0, 0.5, 1.0, 1.0};
    vd p = splat(inv_fact[0]);
    for (int j = 1; j < 14; j++) p = p * r + splat(inv_fact[j]);
    /* 2^k = 2^k1 2^k2 with k1, k2 in [-538, 512] (normal); integers read off the shifter's
     * low bits, since float -> int64 conversion and 64-bit arithmetic shifts lack AVX2 forms */
    vd k1f = (kf * splat(0.5) + shifter) - shifter, k2f = kf - k1f;
    vi k1 = (vi)(k1f + shifter) - (vi)shifter, k2 = (vi)(k2f + shifter) - (vi)shifter;
    vd two_k1 = (vd)((k1 + 1023) << 52), two_k2 = (vd)((k2 + 1023) << 52);
    return (p * two_k1) * two_k2;
}
static INLINE vd vsqrt(vd x) {
    vd r;
    for (int l = 0; l < LANES; l++) r[l] = sqrt(x[l]);
    return r;
}

/* lr / (||g|| + eps) for normalized GD, lr for plain GD; a zero gradient takes no step. */
static INLINE vd step_size(int ngd, double lr, double eps, vd gnorm) {
    vd zero = splat(0.0);
    if (!ngd) return splat(lr);
    return select_d(gnorm > zero, splat(lr) / (gnorm + splat(eps)), zero);
}

/* Train one group of LANES seeds in place. Shapes (seed last, row-major, doubles unless said):
 * X (n,T,d,L), Y (n,L), Z (n,d,L), visible (n,T,L) 1.0 / 0.0, the head's token values:
 * linear head (r = 0) h (n,T,L) = v^T x_it; ReLU head (r > 0) P (n,T,r,L) rows V^T x_it,
 * W (d,d,L) or K, Q (d,m,L) with W = K Q^T (kq != 0); checkpoints ckpts (C,) int64 ascending;
 * outputs rec_W (C,d,d,L), rec_loss, rec_gnorm, rec_smax, rec_sminmax (C,L), rec_sel (C,n,L)
 * int64, final_s (n,T,L). Returns 0, or 1 if scratch memory could not be allocated. */
ISA_TARGET int attnsvm_train_group(
    int n, int T, int d, int m, int r, const vd *X, const vd *Y, const vd *Z, const vd *values,
    const vd *visible, vd *W, vd *K, vd *Q, int kq, double penalty, int ngd, double lr,
    double eps, int64_t steps, const int64_t *ckpts, int C, vd *rec_W, vd *rec_loss,
    vd *rec_gnorm, vd *rec_smax, vd *rec_sminmax, vi *rec_sel, vd *final_s) {
    size_t count = (size_t)n * T + 2 * (size_t)d + 2 * (size_t)T + (size_t)r + (size_t)d * d
                   + 2 * (size_t)d * m;
    vd *scratch = malloc(sizeof(vd) * count);
    if (!scratch) return 1;
    vd *s = scratch;               /* (n,T) softmax */
    vd *e = s + n * T;             /* (T) e_t = grad phi(xbar_i) . x_it (ReLU head) */
    vd *pbar = e + T;              /* (r) V^T xbar_i (ReLU head) */
    vd *wz = pbar + r;             /* (d) W z_i */
    vd *u = wz + d;                /* (d) sum_t dL/da_it x_it */
    vd *G = u + d;                 /* (T) dL/da_it */
    vd *g = G + T;                 /* (d,d) dL/dW */
    vd *gK = g + d * d, *gQ = gK + d * m;
    const vd zero = splat(0.0), one = splat(1.0), n_d = splat((double)n);
    vd nK = zero, nQ = zero, gnorm = zero;
    int c = 0;
    for (int64_t k = 0; k <= steps; k++) {
        int at_ckpt = c < C && ckpts[c] == k;
        if (kq)
            for (int a = 0; a < d; a++)
                for (int b = 0; b < d; b++) {
                    vd acc = zero;
                    for (int j = 0; j < m; j++) acc += K[a * m + j] * Q[b * m + j];
                    W[a * d + b] = acc;
                }
        vd loss = zero;
        for (int ab = 0; ab < d * d; ab++) g[ab] = zero;
        for (int i = 0; i < n; i++) {
            const vd *Xi = X + i * T * d, *Zi = Z + i * d;
            const vd *vis = visible + i * T;
            vd *si = s + i * T;
            for (int a = 0; a < d; a++) {
                vd acc = zero;
                for (int b = 0; b < d; b++) acc += W[a * d + b] * Zi[b];
                wz[a] = acc;
            }
            vd top = splat(-INFINITY);
            for (int t = 0; t < T; t++) {
                vd acc = zero;
                for (int a = 0; a < d; a++) acc += Xi[t * d + a] * wz[a];
                si[t] = acc;
                top = select_d((vis[t] != zero) & (acc > top), acc, top);
            }
            vd total = zero;
            for (int t = 0; t < T; t++) { /* hidden tokens get probability exactly 0 */
                si[t] = select_d(vis[t] != zero, vexp(si[t] - top), zero);
                total += si[t];
            }
            for (int t = 0; t < T; t++) si[t] = si[t] / total;
            vd f = zero; /* head output f_i; ei[t] = e_it, its derivative along token t */
            const vd *ei = e;
            if (r == 0) { /* linear: f = sum_t s_t h_t, e_t = h_t */
                ei = values + i * T;
                for (int t = 0; t < T; t++) f += si[t] * ei[t];
            } else { /* ReLU: f = 1^T relu(pbar), e_t = sum_j 1[pbar_j > 0] (V^T x_t)_j */
                const vd *Pi = values + (size_t)i * T * r;
                for (int j = 0; j < r; j++) {
                    vd acc = zero;
                    for (int t = 0; t < T; t++) acc += si[t] * Pi[t * r + j];
                    pbar[j] = acc;
                    f += select_d(acc > zero, acc, zero);
                }
                for (int t = 0; t < T; t++) {
                    vd acc = zero;
                    for (int j = 0; j < r; j++) acc += select_d(pbar[j] > zero, Pi[t * r + j], zero);
                    e[t] = acc;
                }
            }
            vd margin = Y[i] * f;
            if (at_ckpt) /* softplus(-margin), stable */
                for (int l = 0; l < LANES; l++)
                    loss[l] += fmax(-margin[l], 0.0) + log1p(exp(-fabs(margin[l])));
            vd coef = -Y[i] / (one + vexp(margin)) / n_d; /* dL/df_i */
            for (int t = 0; t < T; t++) {
                vd centred = zero; /* sum_q s_iq (e_it - e_iq): differences first, §6.1 */
                for (int q = 0; q < T; q++) centred += (ei[t] - ei[q]) * si[q];
                G[t] = coef * si[t] * centred;
            }
            for (int a = 0; a < d; a++) {
                vd acc = zero;
                for (int t = 0; t < T; t++) acc += G[t] * Xi[t * d + a];
                u[a] = acc;
            }
            for (int a = 0; a < d; a++) /* dL/dW += u z_i^T, summed over i in order */
                for (int b = 0; b < d; b++) g[a * d + b] += u[a] * Zi[b];
        }
        if (kq) { /* chain rule to the factors, plus the vanishing penalty */
            vd pen2 = splat(2 * penalty);
            nK = zero;
            nQ = zero;
            for (int a = 0; a < d; a++)
                for (int j = 0; j < m; j++) {
                    vd accK = zero, accQ = zero;
                    for (int b = 0; b < d; b++) {
                        accK += g[a * d + b] * Q[b * m + j];
                        accQ += g[b * d + a] * K[b * m + j];
                    }
                    gK[a * m + j] = accK + pen2 * K[a * m + j];
                    gQ[a * m + j] = accQ + pen2 * Q[a * m + j];
                    nK += gK[a * m + j] * gK[a * m + j];
                    nQ += gQ[a * m + j] * gQ[a * m + j];
                }
            nK = vsqrt(nK);
            nQ = vsqrt(nQ);
            gnorm = vsqrt(nK * nK + nQ * nQ);
        } else {
            vd acc = zero;
            for (int ab = 0; ab < d * d; ab++) acc += g[ab] * g[ab];
            gnorm = vsqrt(acc);
        }
        if (at_ckpt) {
            vd pen = zero;
            if (kq)
                for (int aj = 0; aj < d * m; aj++) pen += K[aj] * K[aj] + Q[aj] * Q[aj];
            rec_loss[c] = loss / n_d + splat(penalty) * pen;
            rec_gnorm[c] = gnorm;
            memcpy(rec_W + (size_t)c * d * d, W, sizeof(vd) * d * d);
            vd mean_max = zero, min_max = splat(INFINITY);
            for (int i = 0; i < n; i++) { /* argmax_t s_it, first index on ties */
                vd best = s[i * T];
                vi arg = {0};
                for (int t = 1; t < T; t++) {
                    vi better = s[i * T + t] > best;
                    best = select_d(better, s[i * T + t], best);
                    arg = select_i(better, (vi){0} + t, arg);
                }
                rec_sel[(size_t)c * n + i] = arg;
                mean_max += best;
                min_max = select_d(best < min_max, best, min_max);
            }
            rec_smax[c] = mean_max / n_d;
            rec_sminmax[c] = min_max;
            c++;
        }
        if (k == steps) break;
        if (kq) {
            vd step_k = step_size(ngd, lr, eps, nK), step_q = step_size(ngd, lr, eps, nQ);
            for (int aj = 0; aj < d * m; aj++) {
                K[aj] -= step_k * gK[aj];
                Q[aj] -= step_q * gQ[aj];
            }
        } else {
            vd step = step_size(ngd, lr, eps, gnorm);
            for (int ab = 0; ab < d * d; ab++) W[ab] -= step * g[ab];
        }
    }
    memcpy(final_s, s, sizeof(vd) * n * T);
    free(scratch);
    return 0;
}

int attnsvm_lanes(void) { return LANES; }

/* Bumped with every change of the exported functions (attnsvm/kernel/__init__.py: ABI). */
int attnsvm_abi(void) { return 4; }

/* out[s] = a[s] @ b[s] for contiguous a (B, r, k), b (B, k, c), out (B, r, c): every entry is
 * ((0 + a_i1 b_1j) + a_i2 b_2j) + ... in index order, each product and sum rounded on its own
 * (no FMA), exactly as torch's per-matrix bmm loop sums: the same bits for any batch, thread
 * or CPU (attnsvm/kernel/batchops.py: matmul). Vectorised across j, which reorders no entry's sum. */
ISA_TARGET void attnsvm_seq_matmul(
    int64_t B, int64_t r, int64_t k, int64_t c, const double *restrict a,
    const double *restrict b, double *restrict out) {
    for (int64_t s = 0; s < B; s++) {
        const double *restrict as = a + s * r * k, *restrict bs = b + s * k * c;
        for (int64_t i = 0; i < r; i++) {
            double *restrict o = out + (s * r + i) * c;
            for (int64_t j = 0; j < c; j++) o[j] = 0.0;
            for (int64_t t = 0; t < k; t++) {
                const double ait = as[i * k + t];
                const double *restrict brow = bs + t * c;
                for (int64_t j = 0; j < c; j++) o[j] = o[j] + ait * brow[j];
            }
        }
    }
}

/* The lower triangle (diagonal included) of the nuclear SDP's Schur complement from its blocked
 * factors, for B instances of n sequences with k constraints each (m = n k): the sum that
 * attnsvm/svm/nuclear_ops.py's _schur_blocked makes with torch ops, which documents the operands:
 * ux_v, uz_v (B, m, n), ux_t, uz_t (B, n, n, k), uz_u, ux_u (B, m, m), vx_v, vz_v (B, n, n), uz_v,
 * vx_v and vz_v already divided by 4. Each entry is ((P1 + P2) + P3) + P4, every product and sum
 * rounded on its own as those ops round them, so the lower triangle has their bits; the strict
 * upper triangle is set to 0 (the Cholesky factorisation reads only the lower one). One pass
 * over M where the torch ops make seven; vectorised along a row, which reorders no sum. */
ISA_TARGET void attnsvm_schur_lower(
    int64_t B, int64_t n, int64_t k, const double *restrict ux_v, const double *restrict uz_v,
    const double *restrict ux_t, const double *restrict uz_t, const double *restrict uz_u,
    const double *restrict ux_u, const double *restrict vx_v, const double *restrict vz_v,
    double *restrict M) {
    const int64_t m = n * k;
    for (int64_t b = 0; b < B; b++) {
        const double *xv = ux_v + b * m * n, *zv = uz_v + b * m * n;
        const double *xt = ux_t + b * n * n * k, *zt = uz_t + b * n * n * k;
        const double *zu = uz_u + b * m * m, *xu = ux_u + b * m * m;
        const double *vx = vx_v + b * n * n, *vz = vz_v + b * n * n;
        double *Mb = M + b * m * m;
        for (int64_t i = 0; i < n; i++) {
            for (int64_t s = 0; s < k; s++) {
                const int64_t r = i * k + s;
                for (int64_t i2 = 0; i2 <= i; i2++) {
                    const double zv_r = zv[r * n + i2], xv_r = xv[r * n + i2];
                    const double px = vx[i * n + i2], pz = vz[i * n + i2];
                    const double *restrict xt_ = xt + (i * n + i2) * k;
                    const double *restrict zt_ = zt + (i * n + i2) * k;
                    const double *restrict zu_ = zu + r * m + i2 * k;
                    const double *restrict xu_ = xu + r * m + i2 * k;
                    double *restrict out = Mb + r * m + i2 * k;
                    const int64_t len = i2 < i ? k : s + 1;
                    for (int64_t s2 = 0; s2 < len; s2++)
                        out[s2] = ((xt_[s2] * zv_r + xv_r * zt_[s2]) + zu_[s2] * px) + xu_[s2] * pz;
                }
                if (r + 1 < m) memset(Mb + r * m + r + 1, 0, (size_t)(m - r - 1) * sizeof(double));
            }
        }
    }
}

/* Whether this CPU runs this build (the AVX-512 one needs every x86-64-v4 feature). */
int attnsvm_cpu_supported(void) {
#ifdef ATTNSVM_V4
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
           && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")
           && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx2")
           && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
#else
    return 1;
#endif
}

/* vexp over count doubles (a multiple of LANES), for tests/test_fused.py. */
ISA_TARGET void attnsvm_exp(const vd *x, vd *out, int64_t count) {
    for (int64_t j = 0; j < count / LANES; j++) out[j] = vexp(x[j]);
}

/* A module object only so that the file is a regular extension (found by importlib); the
 * kernel is called through ctypes, which releases the GIL for the call. */
static struct PyModuleDef fused_module = {
    PyModuleDef_HEAD_INIT, MODULE_NAME, "Fused training kernel (called through ctypes).", -1, NULL,
};
PyMODINIT_FUNC MODULE_INIT(void) { return PyModule_Create(&fused_module); }
