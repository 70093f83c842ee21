/* One call, N directional derivatives: square(x) at widths 1, 2, 4 and 8. The N tangents
 * travel as one SIMD vector through the derivative code. */

// @diff(square_1: forward[1] (dual) -> dual;
//       square_2: forward[2] (dual) -> dual;
//       square_4: forward[4] (dual) -> dual;
//       square_8: forward[8] (dual) -> dualonly)
double square(double x)
{
    return x * x;
}
