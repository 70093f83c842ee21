/* llm.c's GPT-2 as its author wrote it: train_gpt2.c of github.com/karpathy/llm.c, unchanged,
 * included here (its directory on the include path), with its training loss as a function of
 * the flat parameter array. gpt2_forward allocates the activations itself, lazily, in one
 * malloc, and points its 23 tensors into that block; the parameter tensors are slices of
 * `params`, as malloc_and_point_parameters lays them out. Nothing here is written for adgen but
 * the annotation. */
#define TESTING /* (train_gpt2.c's own main is left out) */
#include "train_gpt2.c"

/* The parameter tensors pointed into `params`, in llm.c's order and sizes. */
void llmc_point_parameters(GPT2 *model, float *params)
{
    float **tensors[] = {&model->params.wte, &model->params.wpe, &model->params.ln1w, &model->params.ln1b,
                         &model->params.qkvw, &model->params.qkvb, &model->params.attprojw, &model->params.attprojb,
                         &model->params.ln2w, &model->params.ln2b, &model->params.fcw, &model->params.fcb,
                         &model->params.fcprojw, &model->params.fcprojb, &model->params.lnfw, &model->params.lnfb};
    fill_in_parameter_sizes(model->param_sizes, model->config);
    float *next = params;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
        *tensors[i] = next;
        next += model->param_sizes[i];
    }
    model->params_memory = params;
}

/* The mean cross-entropy of `targets` given `inputs` (B x T tokens) under the parameters. */
// @diff(llmc_loss_grad: (const, dup, const, const, const, const) -> active)
float llmc_loss(const GPT2Config *config, float *params, int *inputs, int *targets, int B, int T)
{
    GPT2 model = {0};
    model.config = *config;
    llmc_point_parameters(&model, params);
    model.mean_loss = -1.0f;
    gpt2_forward(&model, inputs, targets, B, T);
    free(model.acts_memory);
    free(model.inputs);
    free(model.targets);
    return model.mean_loss;
}
