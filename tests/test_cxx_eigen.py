"""Eigen code as a newcomer writes it (specs/cxx.md): least squares with the matrix and right
side `const` and x `dup`, whose product expression holds pointers to both (runtime activity:
ir_ad/shadows.py), and a small MLP whose matrix-matrix products go through Eigen's GEMM (its
blocking and packing: copies of evaluators and blocks, typed by TBAA; packed doubles broadcast
as integer lanes), in both modes, against central finite differences at sizes that take the
matrix-vector, coefficient-based and blocked GEMM paths, from programs built by g++ (libstdc++)
and the bundled clang (libc++); a `float` variant; and what runtime activity does where a value
with derivatives is stored into memory that keeps none."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import zig_cc

EIGEN = next((d for d in ("/usr/include/eigen3", "/usr/local/include/eigen3") if Path(d, "Eigen").is_dir()), None)
needs_eigen = pytest.mark.skipif(EIGEN is None, reason="no Eigen headers at /usr/include/eigen3 "
                                                       "(Debian's libeigen3-dev, which .ci/run installs)")

SOURCE = r"""#include <Eigen/Dense>
// @diff(lsq_grad: (const, const, dup) -> active; lsq_fwd: forward (const, const, dual) -> dual)
double lsq(const Eigen::MatrixXd &A, const Eigen::VectorXd &b, const Eigen::VectorXd &x) { return (A * x - b).squaredNorm(); }
// @diff(mlp_grad: (dup, dup, const) -> active; mlp_all_grad: (dup, dup, dup) -> active)
// @diff(mlp_fwd: forward (dual, dual, const) -> dual)
double mlp(const Eigen::MatrixXd &W1, const Eigen::MatrixXd &W2, const Eigen::MatrixXd &X) {
    Eigen::MatrixXd H = (W1 * X).array().tanh().matrix();
    return (W2 * H).squaredNorm();
}
// @diff(lsqf_grad: (const, const, dup) -> active)
float lsqf(const Eigen::MatrixXf &A, const Eigen::VectorXf &b, const Eigen::VectorXf &x) { return (A * x - b).squaredNorm(); }
"""

MAIN = r"""#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
#include "eigen_nn.adgen.h"
double lsq(const Eigen::MatrixXd &A, const Eigen::VectorXd &b, const Eigen::VectorXd &x);
double mlp(const Eigen::MatrixXd &W1, const Eigen::MatrixXd &W2, const Eigen::MatrixXd &X);
float lsqf(const Eigen::MatrixXf &A, const Eigen::VectorXf &b, const Eigen::VectorXf &x);
static const double h = 1e-6;
static double worst = 0;  // the largest |fd - derivative| / (1 + |derivative|)
static void near(double fd, double d) { worst = std::fmax(worst, std::fabs(fd - d) / (1 + std::fabs(d))); }
static void fill(double *p, long n, double a, double s) { for (long i = 0; i < n; i++) p[i] = s * std::sin(a + 0.37 * i); }

static bool least_squares(int m, int n) {
    Eigen::MatrixXd A(m, n); Eigen::VectorXd b(m), x(n), u(n);
    fill(A.data(), A.size(), 1, 0.3); fill(b.data(), m, 2, 1); fill(x.data(), n, 3, 1); fill(u.data(), n, 4, 1);
    const Eigen::MatrixXd A0 = A; const Eigen::VectorXd b0 = b;
    Eigen::VectorXd dx = Eigen::VectorXd::Zero(n);
    double r = lsq_grad(A, b, x, dx, 1.0);
    near(lsq(A, b, x), r);
    for (int i = 0; i < n; i++) { Eigen::VectorXd p = x, q = x; p(i) += h; q(i) -= h; near((lsq(A, b, p) - lsq(A, b, q)) / (2 * h), dx(i)); }
    lsq_fwd_result f = lsq_fwd(A, b, x, u);
    near((lsq(A, b, x + h * u) - lsq(A, b, x - h * u)) / (2 * h), f.d_ret);
    near(dx.dot(u), f.d_ret);
    return A == A0 && b == b0;  // (the const arguments: never written)
}

static bool network(int hidden, int in, int out, int n) {
    Eigen::MatrixXd W1(hidden, in), W2(out, hidden), X(in, n), U1(hidden, in), U2(out, hidden);
    fill(W1.data(), W1.size(), 1, 0.3); fill(W2.data(), W2.size(), 2, 0.2); fill(X.data(), X.size(), 3, 1);
    fill(U1.data(), U1.size(), 4, 1); fill(U2.data(), U2.size(), 5, 1);
    const Eigen::MatrixXd X0 = X;
    Eigen::MatrixXd d1 = Eigen::MatrixXd::Zero(hidden, in), d2 = Eigen::MatrixXd::Zero(out, hidden);
    Eigen::MatrixXd e1 = d1, e2 = d2, eX = Eigen::MatrixXd::Zero(in, n);
    near(mlp(W1, W2, X), mlp_grad(W1, d1, W2, d2, X, 1.0));
    mlp_all_grad(W1, e1, W2, e2, X, eX, 1.0);
    long step1 = W1.size() / 30 + 1, step2 = W2.size() / 30 + 1, stepX = X.size() / 30 + 1;  // (a sample of large ones)
    for (long i = 0; i < W1.size(); i += step1) { Eigen::MatrixXd p = W1, q = W1; p.data()[i] += h; q.data()[i] -= h;
        double fd = (mlp(p, W2, X) - mlp(q, W2, X)) / (2 * h); near(fd, d1.data()[i]); near(fd, e1.data()[i]); }
    for (long i = 0; i < W2.size(); i += step2) { Eigen::MatrixXd p = W2, q = W2; p.data()[i] += h; q.data()[i] -= h;
        double fd = (mlp(W1, p, X) - mlp(W1, q, X)) / (2 * h); near(fd, d2.data()[i]); near(fd, e2.data()[i]); }
    for (long i = 0; i < X.size(); i += stepX) { Eigen::MatrixXd p = X, q = X; p.data()[i] += h; q.data()[i] -= h;
        near((mlp(W1, W2, p) - mlp(W1, W2, q)) / (2 * h), eX.data()[i]); }
    mlp_fwd_result f = mlp_fwd(W1, U1, W2, U2, X);
    near((mlp(W1 + h * U1, W2 + h * U2, X) - mlp(W1 - h * U1, W2 - h * U2, X)) / (2 * h), f.d_ret);
    return X == X0;
}

static bool in_float(int m, int n) {  // against the gradient in closed form, 2 A^T (A x - b), in double
    Eigen::MatrixXf A(m, n); Eigen::VectorXf b(m), x(n);
    for (int i = 0; i < A.size(); i++) A.data()[i] = 0.3f * std::sin(1.0f + 0.37f * i);
    for (int i = 0; i < m; i++) b(i) = std::sin(2.0f + 0.37f * i);
    for (int i = 0; i < n; i++) x(i) = std::sin(3.0f + 0.37f * i);
    Eigen::VectorXf dx = Eigen::VectorXf::Zero(n);
    lsqf_grad(A, b, x, dx, 1.0f);
    Eigen::MatrixXd Ad = A.cast<double>();
    Eigen::VectorXd g = 2 * Ad.transpose() * (Ad * x.cast<double>() - b.cast<double>());
    double err = (g - dx.cast<double>()).norm() / (1 + g.norm());
    std::printf("float %dx%d: err %g\n", m, n, err);
    return err < 1e-4;
}

int main() {
    bool ok = true;
    int sizes[][2] = {{1, 1}, {3, 2}, {9, 8}, {40, 30}, {130, 120}};
    for (auto &s : sizes) ok &= least_squares(s[0], s[1]);
    // coefficient-based (small), matrix-vector (one column, one row), blocked GEMM (large)
    int nets[][4] = {{3, 2, 1, 4}, {4, 3, 2, 1}, {1, 5, 1, 3}, {24, 30, 20, 40}, {70, 80, 3, 90}};
    for (auto &s : nets) ok &= network(s[0], s[1], s[2], s[3]);
    ok &= in_float(5, 4) && in_float(60, 50);
    std::printf("worst %g\n", worst);
    return !(ok && worst < 1e-5);
}
"""


@needs_eigen
@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_least_squares_and_mlp(adgen, tmp_path, compiler):
    """`lsq` with A and b const and x dup (its product expression holds pointers to A and x:
    runtime activity), both modes; `mlp` through Eigen's GEMM, its data const or dup, both modes;
    a `MatrixXf` variant: against central finite differences (forward: a directional one, and
    against reverse), the const arguments left as they were."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    src, entry = tmp_path / "eigen_nn.cpp", tmp_path / "main.cpp"
    src.write_text(SOURCE)
    entry.write_text(MAIN)
    library = ["--cxx-library=libc++"] if compiler == "bundled" else []  # (the program's C++ library)
    result = adgen("build", "-q", src, "-o", tmp_path, *library, "--", "-I", EIGEN)
    assert result.status == 0, result.err
    files = ["-I", EIGEN, str(entry), str(src), str(tmp_path / "eigen_nn.adgen.o"), "-o", str(tmp_path / "app")]
    command = ["g++", "-O2", *files] if compiler == "g++" else zig_cc("-O2", *files, cxx=True)
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


PICK = r"""struct two { double *p[2]; };
__attribute__((noinline)) static void put(struct two *t, int k, double v) { t->p[k][0] = v; }
__attribute__((noinline)) static double get(struct two *t, int k) { return t->p[k][0]; }
/* a const pointer beside one with derivatives in memory that has them: its own shadow */
// @diff(pick_grad: (const, dup, const) -> active; pick_fwd: forward (const, dual, const) -> dual)
double pick(const double *c, double *x, int k) {
    struct two t = {{(double *)c, x}};
    put(&t, k, x[0] * 2);
    return get(&t, k) * x[0] + get(&t, 0) * x[1];
}
"""

PICK_MAIN = r"""#include <stdio.h>
#include <stdlib.h>
#include "pick.adgen.h"
int main(int argc, char **argv) {
    int k = atoi(argv[1]);
    double c[1] = {3}, x[2] = {0.5, 2}, dx[2] = {0, 0}, u[2] = {1, 0};
    pick_fwd_result f = pick_fwd(c, (double[]){0.5, 2}, u, k);
    double r = pick_grad(c, x, dx, k, 1.0);
    printf("%g %g %g %g %g\n", r, dx[0], dx[1], f.d_ret, c[0]);
    return 0;
}
"""


def test_runtime_activity_checks_stores(adgen, tmp_path):
    """A 'const' pointer stored beside a pointer with derivatives is its own shadow: where the
    program reads and writes through the other, the derivatives are exact (k = 1: f = 4 x0^2 +
    c x1, x0 doubled in place); where it writes a value carrying derivatives through the const
    one (k = 0), which would lose them, the program aborts with a message, in either mode."""
    src, entry = tmp_path / "pick.c", tmp_path / "main.c"
    src.write_text(PICK)
    entry.write_text(PICK_MAIN)
    result = adgen("build", "-q", src, "-o", tmp_path)
    assert result.status == 0, result.err
    done = subprocess.run(zig_cc("-O2", "-I", str(tmp_path), str(entry), str(src), str(tmp_path / "pick.adgen.o"),
                                 "-o", str(tmp_path / "app")), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "app"), "1"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.split() == ["7", "4", "3", "4", "3"], run.stdout + run.stderr
    run = subprocess.run([str(tmp_path / "app"), "0"], capture_output=True, text=True)
    assert run.returncode != 0 and run.stdout == "", run.stdout
    assert "adgen: a value carrying derivatives was stored into memory adgen keeps no derivatives of" in run.stderr
