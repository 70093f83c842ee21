// @diff(f_grad: (active) -> active)
double féλ(double λ) { return λ * λ; }
