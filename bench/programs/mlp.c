/* A three-layer perceptron's training loss, written for adgen's benchmarks on the pattern of
 * gpt2.c: the weights are slices of one parameter block, the layers' outputs slices of one
 * activation block. B inputs of D features, two hidden layers of H units with ReLU, K classes,
 * softmax and cross-entropy.
 *
 * mlp_loss is differentiated by adgen (the annotation) and by Enzyme (mlp_enzyme.c); mlp_backward
 * is the forward pass followed by a backward pass written by hand, the reference. */
#include <math.h>
#include <stddef.h>

size_t mlp_num_params(int D, int H, int K)
{
    return (size_t)H * D + H + (size_t)H * H + H + (size_t)K * H + K;
}

size_t mlp_num_acts(int B, int H, int K)
{
    return (size_t)B * (4 * H + 2 * K + 1);
}

typedef struct {
    float *w1, *b1; /* (H, D), (H) */
    float *w2, *b2; /* (H, H), (H) */
    float *w3, *b3; /* (K, H), (K) */
} Weights;

typedef struct {
    float *h1, *a1;        /* (B, H): before and after the ReLU */
    float *h2, *a2;        /* (B, H) */
    float *logits, *probs; /* (B, K) */
    float *losses;         /* (B) */
} Layers;

static Weights weights_in(float *block, int D, int H, int K)
{
    Weights w;
    w.w1 = block;
    w.b1 = w.w1 + H * D;
    w.w2 = w.b1 + H;
    w.b2 = w.w2 + H * H;
    w.w3 = w.b2 + H;
    w.b3 = w.w3 + K * H;
    return w;
}

static Layers layers_in(float *block, int B, int H, int K)
{
    Layers a;
    a.h1 = block;
    a.a1 = a.h1 + B * H;
    a.h2 = a.a1 + B * H;
    a.a2 = a.h2 + B * H;
    a.logits = a.a2 + B * H;
    a.probs = a.logits + B * K;
    a.losses = a.probs + B * K;
    return a;
}

/* out (B, OC) = inp (B, C) · weight (OC, C)ᵀ + bias */
static void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int B, int C, int OC)
{
    for (int b = 0; b < B; b++) {
        const float *x = inp + b * C;
        for (int o = 0; o < OC; o++) {
            const float *w = weight + o * C;
            float sum = bias[o];
            for (int i = 0; i < C; i++)
                sum += x[i] * w[i];
            out[b * OC + o] = sum;
        }
    }
}

static void relu_forward(float *out, const float *inp, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

/* probs = softmax(logits) per row, losses = -log(probs[target]) */
static void softmax_crossentropy_forward(float *probs, float *losses, const float *logits, const int *targets, int B,
                                         int K)
{
    for (int b = 0; b < B; b++) {
        const float *z = logits + b * K;
        float *p = probs + b * K;
        float maxval = -1e30f;
        for (int i = 0; i < K; i++)
            if (z[i] > maxval)
                maxval = z[i];
        float sum = 0.0f;
        for (int i = 0; i < K; i++) {
            p[i] = expf(z[i] - maxval);
            sum += p[i];
        }
        for (int i = 0; i < K; i++)
            p[i] /= sum;
        losses[b] = -logf(p[targets[b]]);
    }
}

static float mlp_forward(float *params, float *acts, const float *inputs, const int *targets, int B, int D, int H,
                         int K)
{
    Weights w = weights_in(params, D, H, K);
    Layers a = layers_in(acts, B, H, K);
    linear_forward(a.h1, inputs, w.w1, w.b1, B, D, H);
    relu_forward(a.a1, a.h1, B * H);
    linear_forward(a.h2, a.a1, w.w2, w.b2, B, H, H);
    relu_forward(a.a2, a.h2, B * H);
    linear_forward(a.logits, a.a2, w.w3, w.b3, B, H, K);
    softmax_crossentropy_forward(a.probs, a.losses, a.logits, targets, B, K);
    float loss = 0.0f;
    for (int b = 0; b < B; b++)
        loss += a.losses[b];
    return loss / B;
}

/* The mean cross-entropy of classifying inputs (B, D) as targets (B class ids); params holds
 * mlp_num_params floats, acts mlp_num_acts (written). */
// @diff(mlp_grad: (dup, dup, const, const, const, const, const, const) -> activeonly)
float mlp_loss(float *params, float *acts, const float *inputs, const int *targets, int B, int D, int H, int K)
{
    return mlp_forward(params, acts, inputs, targets, B, D, H, K);
}

/* ------------------------------------------------------------------ backward, by hand */

static void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int B, int C, int OC)
{
    for (int b = 0; b < B; b++) {
        const float *x = inp + b * C;
        float *dx = dinp == NULL ? NULL : dinp + b * C;
        for (int o = 0; o < OC; o++) {
            const float *w = weight + o * C;
            float *dw = dweight + o * C;
            float g = dout[b * OC + o];
            dbias[o] += g;
            for (int i = 0; i < C; i++)
                dw[i] += x[i] * g;
            if (dx != NULL)
                for (int i = 0; i < C; i++)
                    dx[i] += w[i] * g;
        }
    }
}

static void relu_backward(float *dinp, const float *inp, const float *dout, int n)
{
    for (int i = 0; i < n; i++)
        dinp[i] += inp[i] > 0.0f ? dout[i] : 0.0f;
}

/* Runs the forward pass, then adds the gradient of the mean loss (times d_loss) into grads (the
 * params' layout); grad_acts (acts' layout) is scratch and must be zero on entry. Returns the
 * loss. */
float mlp_backward(float *params, float *grads, float *acts, float *grad_acts, const float *inputs,
                   const int *targets, int B, int D, int H, int K, float d_loss)
{
    float loss = mlp_forward(params, acts, inputs, targets, B, D, H, K);
    Weights w = weights_in(params, D, H, K), g = weights_in(grads, D, H, K);
    Layers a = layers_in(acts, B, H, K), d = layers_in(grad_acts, B, H, K);
    for (int b = 0; b < B; b++) {
        float *dz = d.logits + b * K;
        const float *p = a.probs + b * K;
        for (int i = 0; i < K; i++)
            dz[i] += (p[i] - (i == targets[b] ? 1.0f : 0.0f)) * d_loss / B;
    }
    linear_backward(d.a2, g.w3, g.b3, d.logits, a.a2, w.w3, B, H, K);
    relu_backward(d.h2, a.h2, d.a2, B * H);
    linear_backward(d.a1, g.w2, g.b2, d.h2, a.a1, w.w2, B, H, H);
    relu_backward(d.h1, a.h1, d.a1, B * H);
    linear_backward(NULL, g.w1, g.b1, d.h1, inputs, w.w1, B, D, H);
    return loss;
}
