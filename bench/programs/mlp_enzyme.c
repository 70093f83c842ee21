/* mlp.c's loss differentiated by Enzyme (see gpt2_enzyme.c): mlp_enzyme_grad has the activities
 * of mlp_grad and seeds the loss with 1. */
#define mlp_loss enzyme_copy_mlp_loss
#define mlp_backward enzyme_copy_mlp_backward
#define mlp_num_params enzyme_copy_mlp_num_params
#define mlp_num_acts enzyme_copy_mlp_num_acts
#include "mlp.c"

extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);

void mlp_enzyme_grad(float *params, float *d_params, float *acts, float *d_acts, const float *inputs,
                     const int *targets, int B, int D, int H, int K)
{
    __enzyme_autodiff((void *)mlp_loss, enzyme_dup, params, d_params, enzyme_dup, acts, d_acts, enzyme_const, inputs,
                      enzyme_const, targets, enzyme_const, B, enzyme_const, D, enzyme_const, H, enzyme_const, K);
}
