// @diff(f_grad: (active) -> active)
double f(double x)
{
    return x * undeclared_thing;
}
