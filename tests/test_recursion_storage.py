"""Reverse mode's storage on a per-thread stack (specs/abi.md, "Storage"): a recursive
determinant by Laplace expansion (a loop buffer and a callee's record per recursive call)
against central differences for n = 1..6, a linear recursion 10,000 calls deep, two threads
computing gradients at once against one thread's, and split mode's tapes of a recursion (which
outlive the call: malloc's) reversed out of order, released, or reversed on another thread."""

from __future__ import annotations

import subprocess

from conftest import compile_c

SOURCE = r"""
#include <math.h>
static double det_rec(const double *a, int n, int stride, int *cols)
{
    if (n == 1) {
        for (int c = 0; c < stride; c++)
            if (cols[c])
                return a[c];
        return 0;
    }
    double s = 0, sign = 1;
    for (int c = 0; c < stride; c++) {
        if (!cols[c])
            continue;
        cols[c] = 0;
        s += sign * a[c] * det_rec(a + stride, n - 1, stride, cols);
        cols[c] = 1;
        sign = -sign;
    }
    return s;
}

// @diff(det_grad: (dup, const) -> activeonly; det_split: split (dup, const) -> active)
double det(const double *a, int n)
{
    int cols[16];
    for (int i = 0; i < n; i++)
        cols[i] = 1;
    return det_rec(a, n, n, cols);
}

__attribute__((noinline)) static double chain(const double *x, int k)
{
    if (k == 0)
        return x[0];
    return sin(x[k % 7] + 0.5 * chain(x, k - 1));
}

// @diff(deep_grad: (dup, const) -> activeonly)
double deep(const double *x, int depth) { return chain(x, depth); }
"""

DRIVER = r"""
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "src.adgen.h"
double det(const double *a, int n);
double deep(const double *x, int depth);

static int failures;
static void check(const char *what, double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol * (1 + fabs(want)))) {
        printf("%s: %.12g, expected %.12g\n", what, got, want);
        failures++;
    }
}

static void matrix(double *a, int n, int seed)
{
    srand(seed);
    for (int i = 0; i < n * n; i++)
        a[i] = rand() / (double)RAND_MAX - 0.5;
}

static void *gradients(void *out)  /* det_grad 6x6 many times on one thread */
{
    double a[36], *g = out;
    matrix(a, 6, 6);
    for (int rep = 0; rep < 200; rep++) {
        memset(g, 0, 36 * sizeof *g);
        det_grad(a, g, 6, 1.0);
    }
    return NULL;
}

static void *reverse_tape(void *tape)
{
    det_split_reverse(tape, 1.0);
    return NULL;
}

int main(void)
{
    double a[36], g[36], h = 1e-6;
    char name[64];
    for (int n = 1; n <= 6; n++) {  /* against central differences */
        matrix(a, n, n);
        memset(g, 0, sizeof g);
        det_grad(a, g, n, 1.0);
        for (int i = 0; i < n * n; i++) {
            double s = a[i];
            a[i] = s + h;
            double up = det(a, n);
            a[i] = s - h;
            double down = det(a, n);
            a[i] = s;
            snprintf(name, sizeof name, "det n=%d d/da[%d]", n, i);
            check(name, g[i], (up - down) / (2 * h), 1e-7);
        }
    }
    double x[7] = {0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7}, dx[7] = {0};
    deep_grad(x, dx, 10000, 1.0);  /* 10,000 records on the stack, freed in order */
    for (int i = 0; i < 7; i++) {
        double s = x[i];
        x[i] = s + h;
        double up = deep(x, 10000);
        x[i] = s - h;
        double down = deep(x, 10000);
        x[i] = s;
        snprintf(name, sizeof name, "deep d/dx[%d]", i);
        check(name, dx[i], (up - down) / (2 * h), 1e-6);
    }
    double alone[36], both[2][36];  /* two threads at once, each as one thread alone */
    gradients(alone);
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&t[k], NULL, gradients, both[k]);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 36; i++)
            check("two threads", both[k][i], alone[i], 0);
    /* split mode: four tapes of 3x3 determinants, reversed out of order, one released, one
       reversed on another thread, inside a gradient of this thread */
    enum { T = 4 };
    double m[T][9], dm[T][9], want[9];
    void *tapes[T];
    for (int k = 0; k < T; k++) {
        matrix(m[k], 3, 10 + k);
        memset(dm[k], 0, sizeof dm[k]);
        tapes[k] = aligned_alloc(16, (det_split_tape_size() + 15) / 16 * 16);
        det_split_forward(m[k], dm[k], 3, tapes[k]);
    }
    det_split_free(tapes[1]);
    pthread_t other;
    pthread_create(&other, NULL, reverse_tape, tapes[3]);
    pthread_join(other, NULL);
    int order[] = {2, 0, 3};
    for (int j = 0; j < 3; j++) {
        int k = order[j];
        memset(g, 0, sizeof g);
        det_grad(a, g, 6, 1.0);  /* a gradient between the reverse sweeps */
        if (k != 3)
            det_split_reverse(tapes[k], 1.0);
        memset(want, 0, sizeof want);
        det_grad(m[k], want, 3, 1.0);
        for (int i = 0; i < 9; i++)
            check("split", dm[k][i], want[i], 1e-14);
    }
    for (int k = 0; k < T; k++)
        free(tapes[k]);
    if (!failures)
        printf("ok\n");
    return failures != 0;
}
"""


def test_recursive_gradients_on_the_stack(tmp_path, adgen):
    (tmp_path / "src.c").write_text(SOURCE)
    (tmp_path / "driver.c").write_text(DRIVER)
    result = adgen("build", "-q", tmp_path / "src.c", "-o", tmp_path)
    assert result.status == 0, result.err
    compile_c("-O2", "-I", tmp_path, tmp_path / "driver.c", tmp_path / "src.c", tmp_path / "src.adgen.o",
              "-o", tmp_path / "driver", "-lm", "-lpthread")
    done = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr


CHUNKS = r"""
#include <math.h>
// @diff(twice_grad: (dup, const) -> activeonly)
double twice(const double *x, int n)
{
    double m = -INFINITY, s = -INFINITY;
    for (int i = 0; i < n; i++)
        m = fmax(m, x[i]);
    for (int i = 0; i < n; i++)
        s = fmax(s, sin(x[i]));
    return m + s;
}
"""

# two loops storing a byte per iteration each (which argument of fmax won): two buffers, each
# larger than a chunk's 64 KiB at these sizes, in chunks of their own
CHUNKS_DRIVER = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "chunks.adgen.h"

int main(void)
{
    int sizes[] = {100000, 20000, 200000, 100000, 100, 300000, 100000};
    for (int k = 0; k < 7; k++) {
        int n = sizes[k], big = 0, top = 0;
        double *x = malloc(n * sizeof *x), *g = calloc(n, sizeof *g);
        for (int i = 0; i < n; i++) {
            x[i] = 3 * sin(0.37 * i + k) + 1e-6 * i;  /* no ties */
            big = x[i] > x[big] ? i : big;
            top = sin(x[i]) > sin(x[top]) ? i : top;
        }
        twice_grad(x, g, n, 1.0);
        for (int i = 0; i < n; i++) {
            double want = (i == big) + (i == top ? cos(x[i]) : 0.0);
            if (fabs(g[i] - want) > 1e-15) {
                printf("n = %d, i = %d: %g, want %g\n", n, i, g[i], want);
                return 1;
            }
        }
        free(x), free(g);
    }
    printf("ok\n");
    return 0;
}
"""


def test_gradients_of_every_size_one_after_another(tmp_path, adgen):
    """A gradient whose storage takes several chunks leaves one chunk as large as them all for the
    next (templates/runtime.ll.j2, adgen.arena.leave): calls larger and smaller than the one
    before, each gradient right."""
    (tmp_path / "chunks.c").write_text(CHUNKS)
    (tmp_path / "driver.c").write_text(CHUNKS_DRIVER)
    result = adgen("build", "-q", tmp_path / "chunks.c", "-o", tmp_path)
    assert result.status == 0, result.err
    compile_c("-O2", "-I", tmp_path, tmp_path / "driver.c", tmp_path / "chunks.c", tmp_path / "chunks.adgen.o",
              "-o", tmp_path / "driver", "-lm")
    done = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
