// @diff(f_grad: (active) -> active)
/* computes f */
double f(double x);

// @diff(g_grad: (active) -> active)
double table[4];

double h(double x)
{
    // @diff(k_grad: (active) -> active)
    return x;
}

// @diff(end_grad: (active) -> active)
