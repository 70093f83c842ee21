/* What a program's bench glue (gpt2_bench.c, mlp_bench.c) gives harness.c: the sizes of its two
 * blocks and its loss and gradients as calls on them, the other arguments (inputs, targets,
 * sizes) made by program_setup from the command line. A gradient adds d loss / d params into
 * grads; grad_acts, the activations' shadow, is zero on entry. */
#ifndef HARNESS_H
#define HARNESS_H
#include <stddef.h>

typedef struct {
    size_t n_params, n_acts;
    float (*loss)(float *params, float *acts);
    void (*hand)(float *params, float *grads, float *acts, float *grad_acts);
    void (*adgen)(float *params, float *grads, float *acts, float *grad_acts);  /* NULL: not built */
    void (*enzyme)(float *params, float *grads, float *acts, float *grad_acts); /* NULL: not built */
} Program;

/* argv: the program's sizes; exits with a message when they are wrong */
Program program_setup(int argc, char **argv);

/* uniform in [-scale, scale), from a fixed seed: the same numbers in every process */
float harness_random(float scale);

#endif
