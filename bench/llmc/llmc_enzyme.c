/* llmc_loss.c's loss differentiated by Enzyme (clang-19 with its plugin): the same activities as
 * llmc_loss_grad (the parameters duplicated, the rest constant), the loss seeded with 1. Its other
 * symbols are made local after compiling (objcopy), so that they do not clash with llm.c's own. */
#include "llmc_loss.c"

extern int enzyme_dup, enzyme_const;
float __enzyme_autodiff(void *, ...);

void llmc_enzyme_grad(const GPT2Config *config, float *params, float *d_params, int *inputs, int *targets, int B,
                      int T)
{
    __enzyme_autodiff((void *)llmc_loss, enzyme_const, config, enzyme_dup, params, d_params, enzyme_const, inputs,
                      enzyme_const, targets, enzyme_const, B, enzyme_const, T);
}
