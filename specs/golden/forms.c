/* The annotation's forms: comment styles, several entries, aliases, case, names. */
static const char *not_an_annotation = "// @diff(ignored: (const) -> const)";

/**
 * A documented function.
 * @diff(g_fwd: Forward (Dual, Const) -> DualOnly;
 *       g_rev: (Active, const) -> ActiveOnly)
 */
// @diff(g_rev2: REVERSE[3] (ACTIVE, Const) -> active)
__attribute__((noinline)) static double g(double, int);

static double g(double x, int k) { return x * k; }

// @diff(h_grad: (Duplicated, DuplicatedOnly))
void h(float *p, float *q);

// @diff(unnamed_grad: (const, active) -> active)
double unnamed(int, double);

// @diff(noproto_grad: () -> active)
double noproto();
