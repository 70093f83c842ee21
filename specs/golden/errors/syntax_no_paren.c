// See @diff for how to differentiate this.
double f(double x);
