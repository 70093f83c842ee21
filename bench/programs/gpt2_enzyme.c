/* gpt2.c's loss differentiated by Enzyme: compiled by clang-19 with Enzyme's plugin, its public
 * functions renamed so that they do not clash with gpt2.o's. gpt2_enzyme_grad has the
 * activities of gpt2_grad (params and acts duplicated, the rest constant) and seeds the loss
 * with 1. */
#define gpt2_loss enzyme_copy_gpt2_loss
#define gpt2_backward enzyme_copy_gpt2_backward
#define gpt2_num_params enzyme_copy_gpt2_num_params
#define gpt2_num_acts enzyme_copy_gpt2_num_acts
#include "gpt2.c"

extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);

void gpt2_enzyme_grad(float *params, float *d_params, float *acts, float *d_acts, const int *inputs,
                      const int *targets, int B, int T, int C, int L, int NH, int V)
{
    __enzyme_autodiff((void *)gpt2_loss, enzyme_dup, params, d_params, enzyme_dup, acts, d_acts, enzyme_const,
                      inputs, enzyme_const, targets, enzyme_const, B, enzyme_const, T, enzyme_const, C, enzyme_const,
                      L, enzyme_const, NH, enzyme_const, V);
}
