/* gpt2.c for harness.c. Sizes: B T C L NH V. Token ids are drawn at random from the fixed seed. */
#include <stdio.h>
#include <stdlib.h>
#include "harness.h"

size_t gpt2_num_params(int T, int C, int L, int V);
size_t gpt2_num_acts(int B, int T, int C, int L, int NH, int V);
float gpt2_loss(float *params, float *acts, const int *inputs, const int *targets, int B, int T, int C, int L,
                int NH, int V);
float gpt2_backward(float *params, float *grads, float *acts, float *grad_acts, const int *inputs,
                    const int *targets, int B, int T, int C, int L, int NH, int V, float d_loss);

static int B, T, C, L, NH, V;
static int *inputs, *targets;

static float loss(float *params, float *acts)
{
    return gpt2_loss(params, acts, inputs, targets, B, T, C, L, NH, V);
}

static void hand(float *params, float *grads, float *acts, float *grad_acts)
{
    gpt2_backward(params, grads, acts, grad_acts, inputs, targets, B, T, C, L, NH, V, 1.0f);
}

#ifdef WITH_ADGEN
#include "gpt2.adgen.h"

static void adgen(float *params, float *grads, float *acts, float *grad_acts)
{
    gpt2_grad(params, grads, acts, grad_acts, inputs, targets, B, T, C, L, NH, V, 1.0f);
}
#endif

#ifdef WITH_ENZYME
void gpt2_enzyme_grad(float *params, float *d_params, float *acts, float *d_acts, const int *inputs,
                      const int *targets, int B, int T, int C, int L, int NH, int V);

static void enzyme(float *params, float *grads, float *acts, float *grad_acts)
{
    gpt2_enzyme_grad(params, grads, acts, grad_acts, inputs, targets, B, T, C, L, NH, V);
}
#endif

Program program_setup(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "gpt2: sizes B T C L NH V\n");
        exit(2);
    }
    int *sizes[] = {&B, &T, &C, &L, &NH, &V};
    for (int i = 0; i < 6; i++)
        *sizes[i] = atoi(argv[i]);
    if (B * T % 8 != 0 || C % NH != 0) {
        fprintf(stderr, "gpt2: B*T must be a multiple of 8 and C of NH\n");
        exit(2);
    }
    inputs = malloc(B * T * sizeof(int));
    targets = malloc(B * T * sizeof(int));
    for (int i = 0; i < B * T; i++) {
        inputs[i] = (int)((harness_random(0.5f) + 0.5f) * V) % V;
        targets[i] = (int)((harness_random(0.5f) + 0.5f) * V) % V;
    }
    Program program = {gpt2_num_params(T, C, L, V), gpt2_num_acts(B, T, C, L, NH, V), loss, hand, NULL, NULL};
#ifdef WITH_ADGEN
    program.adgen = adgen;
#endif
#ifdef WITH_ENZYME
    program.enzyme = enzyme;
#endif
    return program;
}
