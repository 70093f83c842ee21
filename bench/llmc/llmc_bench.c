/* llmc_loss.c for bench/programs/harness.c. Sizes: B T C L NH V (the vocabulary unpadded, the
 * longest sequence T). Token ids are drawn at random from the harness's fixed seed. The
 * hand-written gradient is llm.c's own training step: gpt2_zero_grad, gpt2_forward, gpt2_backward
 * on a model kept from call to call (as its training loop keeps it), its gradient then copied out. */
#include "llmc_loss.c"
#include "harness.h"

static GPT2Config config;
static int B, T;
static int *inputs, *targets;
static GPT2 model; /* the hand-written pass's */

static float loss(float *params, float *acts)
{
    (void)acts;
    return llmc_loss(&config, params, inputs, targets, B, T);
}

static void hand(float *params, float *grads, float *acts, float *grad_acts)
{
    (void)acts, (void)grad_acts;
    if (model.params_memory != params) {
        model.config = config;
        llmc_point_parameters(&model, params);
        model.num_parameters = 0;
        for (int i = 0; i < NUM_PARAMETER_TENSORS; i++)
            model.num_parameters += model.param_sizes[i];
    }
    gpt2_zero_grad(&model);
    gpt2_forward(&model, inputs, targets, B, T);
    gpt2_backward(&model);
    for (size_t i = 0; i < model.num_parameters; i++)
        grads[i] += model.grads_memory[i];
}

#ifdef WITH_ADGEN
#include "llmc_loss.adgen.h"

static void adgen(float *params, float *grads, float *acts, float *grad_acts)
{
    (void)acts, (void)grad_acts;
    llmc_loss_grad(&config, params, grads, inputs, targets, B, T, 1.0f);
}
#endif

#ifdef WITH_ENZYME
void llmc_enzyme_grad(const GPT2Config *config, float *params, float *d_params, int *inputs, int *targets, int B,
                      int T);

static void enzyme(float *params, float *grads, float *acts, float *grad_acts)
{
    (void)acts, (void)grad_acts;
    llmc_enzyme_grad(&config, params, grads, inputs, targets, B, T);
}
#endif

Program program_setup(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "llmc: sizes B T C L NH V\n");
        exit(2);
    }
    B = atoi(argv[0]);
    T = atoi(argv[1]);
    config = (GPT2Config){.max_seq_len = T, .vocab_size = atoi(argv[5]), .padded_vocab_size = atoi(argv[5]),
                          .num_layers = atoi(argv[3]), .num_heads = atoi(argv[4]), .channels = atoi(argv[2])};
    if (config.channels % config.num_heads != 0) {
        fprintf(stderr, "llmc: C must be a multiple of NH\n");
        exit(2);
    }
    inputs = malloc(B * T * sizeof(int));
    targets = malloc(B * T * sizeof(int));
    for (int i = 0; i < B * T; i++) {
        inputs[i] = (int)((harness_random(0.5f) + 0.5f) * config.vocab_size) % config.vocab_size;
        targets[i] = (int)((harness_random(0.5f) + 0.5f) * config.vocab_size) % config.vocab_size;
    }
    size_t sizes[NUM_PARAMETER_TENSORS], n = 0;
    fill_in_parameter_sizes(sizes, config);
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++)
        n += sizes[i];
    Program program = {n, 1, loss, hand, NULL, NULL};
#ifdef WITH_ADGEN
    program.adgen = adgen;
#endif
#ifdef WITH_ENZYME
    program.enzyme = enzyme;
#endif
    return program;
}
