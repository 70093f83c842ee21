/* mlp.c for harness.c. Sizes: B D H K. Inputs and class ids are drawn at random from the fixed
 * seed. */
#include <stdio.h>
#include <stdlib.h>
#include "harness.h"

size_t mlp_num_params(int D, int H, int K);
size_t mlp_num_acts(int B, int H, int K);
float mlp_loss(float *params, float *acts, const float *inputs, const int *targets, int B, int D, int H, int K);
float mlp_backward(float *params, float *grads, float *acts, float *grad_acts, const float *inputs,
                   const int *targets, int B, int D, int H, int K, float d_loss);

static int B, D, H, K;
static float *inputs;
static int *targets;

static float loss(float *params, float *acts)
{
    return mlp_loss(params, acts, inputs, targets, B, D, H, K);
}

static void hand(float *params, float *grads, float *acts, float *grad_acts)
{
    mlp_backward(params, grads, acts, grad_acts, inputs, targets, B, D, H, K, 1.0f);
}

#ifdef WITH_ADGEN
#include "mlp.adgen.h"

static void adgen(float *params, float *grads, float *acts, float *grad_acts)
{
    mlp_grad(params, grads, acts, grad_acts, inputs, targets, B, D, H, K, 1.0f);
}
#endif

#ifdef WITH_ENZYME
void mlp_enzyme_grad(float *params, float *d_params, float *acts, float *d_acts, const float *inputs,
                     const int *targets, int B, int D, int H, int K);

static void enzyme(float *params, float *grads, float *acts, float *grad_acts)
{
    mlp_enzyme_grad(params, grads, acts, grad_acts, inputs, targets, B, D, H, K);
}
#endif

Program program_setup(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "mlp: sizes B D H K\n");
        exit(2);
    }
    int *sizes[] = {&B, &D, &H, &K};
    for (int i = 0; i < 4; i++)
        *sizes[i] = atoi(argv[i]);
    inputs = malloc((size_t)B * D * sizeof(float));
    targets = malloc(B * sizeof(int));
    for (int i = 0; i < B * D; i++)
        inputs[i] = harness_random(1.0f);
    for (int i = 0; i < B; i++)
        targets[i] = (int)((harness_random(0.5f) + 0.5f) * K) % K;
    Program program = {mlp_num_params(D, H, K), mlp_num_acts(B, H, K), loss, hand, NULL, NULL};
#ifdef WITH_ADGEN
    program.adgen = adgen;
#endif
#ifdef WITH_ENZYME
    program.enzyme = enzyme;
#endif
    return program;
}
