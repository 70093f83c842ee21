/* A small GPT-2 training loss, written for adgen's benchmarks in the style of a CPU reference
 * implementation: every parameter tensor is a slice of one block (one malloc), every activation a
 * per-layer slice of another, and the layers are plain loops over them (a tiled matmul, layernorm,
 * causal multi-head attention, GELU, residual adds, softmax and cross-entropy). The token
 * embedding is tied to the output projection, as in GPT-2.
 *
 * gpt2_loss is the forward pass, differentiated by adgen (the annotation) and by Enzyme
 * (gpt2_enzyme.c); gpt2_backward is the same forward pass followed by a backward pass written by
 * hand, the reference the tools' gradients are checked against.
 *
 * Shapes: B sequences of T tokens, C channels, L layers, NH heads, vocabulary V; B*T must be a
 * multiple of 8 (the matmul's tile) and C of NH. Sizes come from gpt2_num_params and
 * gpt2_num_acts.
 *
 * Built with -fopenmp (`python -m bench.programs --openmp`), the matmuls, the attention and the
 * softmax run their outer loops in parallel, and so do the hand-written matmul's backward loops,
 * as in the reference implementation; each iteration writes its own rows. Without it the pragmas
 * are ignored. */
#include <math.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------ the blocks and their slices */

typedef struct {
    float *wte;      /* (V, C) token embedding, also the output projection */
    float *wpe;      /* (T, C) position embedding */
    float *ln1w;     /* (L, C) */
    float *ln1b;     /* (L, C) */
    float *qkvw;     /* (L, 3C, C) */
    float *qkvb;     /* (L, 3C) */
    float *attprojw; /* (L, C, C) */
    float *attprojb; /* (L, C) */
    float *ln2w;     /* (L, C) */
    float *ln2b;     /* (L, C) */
    float *fcw;      /* (L, 4C, C) */
    float *fcb;      /* (L, 4C) */
    float *fcprojw;  /* (L, C, 4C) */
    float *fcprojb;  /* (L, C) */
    float *lnfw;     /* (C) */
    float *lnfb;     /* (C) */
} Params;

typedef struct {
    float *encoded;   /* (B, T, C) */
    float *ln1;       /* (L, B, T, C) */
    float *ln1_mean;  /* (L, B, T) */
    float *ln1_rstd;  /* (L, B, T) */
    float *qkv;       /* (L, B, T, 3C) */
    float *atty;      /* (L, B, T, C) */
    float *preatt;    /* (L, B, NH, T, T) */
    float *att;       /* (L, B, NH, T, T) */
    float *attproj;   /* (L, B, T, C) */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C) */
    float *ln2_mean;  /* (L, B, T) */
    float *ln2_rstd;  /* (L, B, T) */
    float *fch;       /* (L, B, T, 4C) */
    float *fch_gelu;  /* (L, B, T, 4C) */
    float *fcproj;    /* (L, B, T, C) */
    float *residual3; /* (L, B, T, C) */
    float *lnf;       /* (B, T, C) */
    float *lnf_mean;  /* (B, T) */
    float *lnf_rstd;  /* (B, T) */
    float *logits;    /* (B, T, V) */
    float *probs;     /* (B, T, V) */
    float *losses;    /* (B, T) */
} Acts;

#define NUM_PARAM_TENSORS 16
#define NUM_ACT_TENSORS 23

static void param_sizes(size_t *s, int T, int C, int L, int V)
{
    size_t c = C, l = L;
    size_t sizes[NUM_PARAM_TENSORS] = {(size_t)V * c, (size_t)T * c, l * c, l * c, l * 3 * c * c, l * 3 * c,
                                       l * c * c, l * c, l * c, l * c, l * 4 * c * c, l * 4 * c, l * c * 4 * c,
                                       l * c, c, c};
    memcpy(s, sizes, sizeof sizes);
}

static void act_sizes(size_t *s, int B, int T, int C, int L, int NH, int V)
{
    size_t bt = (size_t)B * T, c = C, l = L;
    size_t sizes[NUM_ACT_TENSORS] = {bt * c,     l * bt * c,     l * bt,     l * bt,     l * bt * 3 * c, l * bt * c,
                                     l * B * NH * (size_t)T * T, l * B * NH * (size_t)T * T, l * bt * c,
                                     l * bt * c, l * bt * c,     l * bt,     l * bt,     l * bt * 4 * c, l * bt * 4 * c,
                                     l * bt * c, l * bt * c,     bt * c,     bt,         bt,         bt * V,
                                     bt * V,     bt};
    memcpy(s, sizes, sizeof sizes);
}

static size_t total(const size_t *sizes, int n)
{
    size_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += sizes[i];
    return sum;
}

size_t gpt2_num_params(int T, int C, int L, int V)
{
    size_t sizes[NUM_PARAM_TENSORS];
    param_sizes(sizes, T, C, L, V);
    return total(sizes, NUM_PARAM_TENSORS);
}

size_t gpt2_num_acts(int B, int T, int C, int L, int NH, int V)
{
    size_t sizes[NUM_ACT_TENSORS];
    act_sizes(sizes, B, T, C, L, NH, V);
    return total(sizes, NUM_ACT_TENSORS);
}

/* Points each field at its slice of one block, in order. */
static void point_slices(float **fields[], float *block, const size_t *sizes, int n)
{
    for (int i = 0; i < n; i++) {
        *fields[i] = block;
        block += sizes[i];
    }
}

static Params params_in(float *block, int T, int C, int L, int V)
{
    size_t sizes[NUM_PARAM_TENSORS];
    Params p;
    float **fields[NUM_PARAM_TENSORS] = {&p.wte,  &p.wpe,      &p.ln1w,     &p.ln1b, &p.qkvw, &p.qkvb,
                                         &p.attprojw, &p.attprojb, &p.ln2w, &p.ln2b, &p.fcw,  &p.fcb,
                                         &p.fcprojw,  &p.fcprojb,  &p.lnfw, &p.lnfb};
    param_sizes(sizes, T, C, L, V);
    point_slices(fields, block, sizes, NUM_PARAM_TENSORS);
    return p;
}

static Acts acts_in(float *block, int B, int T, int C, int L, int NH, int V)
{
    size_t sizes[NUM_ACT_TENSORS];
    Acts a;
    float **fields[NUM_ACT_TENSORS] = {&a.encoded,  &a.ln1,      &a.ln1_mean, &a.ln1_rstd, &a.qkv,      &a.atty,
                                       &a.preatt,   &a.att,      &a.attproj,  &a.residual2, &a.ln2,     &a.ln2_mean,
                                       &a.ln2_rstd, &a.fch,      &a.fch_gelu, &a.fcproj,   &a.residual3, &a.lnf,
                                       &a.lnf_mean, &a.lnf_rstd, &a.logits,   &a.probs,    &a.losses};
    act_sizes(sizes, B, T, C, L, NH, V);
    point_slices(fields, block, sizes, NUM_ACT_TENSORS);
    return a;
}

/* ------------------------------------------------------------------ forward layers */

static void encoder_forward(float *out, const int *inputs, const float *wte, const float *wpe, int B, int T, int C)
{
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float *o = out + (b * T + t) * C;
            const float *tok = wte + inputs[b * T + t] * C;
            const float *pos = wpe + t * C;
            for (int i = 0; i < C; i++)
                o[i] = tok[i] + pos[i];
        }
    }
}

static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                              const float *bias, int B, int T, int C)
{
    const float eps = 1e-5f;
    for (int bt = 0; bt < B * T; bt++) {
        const float *x = inp + bt * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = x[i] - m;
            v += d * d;
        }
        v /= C;
        float s = 1.0f / sqrtf(v + eps);
        float *o = out + bt * C;
        for (int i = 0; i < C; i++)
            o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[bt] = m;
        rstd[bt] = s;
    }
}

/* out (B*T, OC) = inp (B*T, C) · weight (OC, C)ᵀ + bias, eight rows of inp at a time so that each
 * weight loaded serves eight of them. */
static void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int B, int T, int C,
                           int OC)
{
    #pragma omp parallel for
    for (int obt = 0; obt < B * T; obt += 8) {
        for (int o = 0; o < OC; o++) {
            float result[8];
            for (int ibt = 0; ibt < 8; ibt++)
                result[ibt] = (bias != NULL) ? bias[o] : 0.0f;
            for (int i = 0; i < C; i++) {
                float w = weight[i + o * C];
                for (int ibt = 0; ibt < 8; ibt++) {
                    int bt = obt + ibt;
                    result[ibt] += inp[bt * C + i] * w;
                }
            }
            for (int ibt = 0; ibt < 8; ibt++) {
                int bt = obt + ibt;
                out[bt * OC + o] = result[ibt];
            }
        }
    }
}

/* Causal self-attention: inp holds (B, T, 3C) queries, keys and values; preatt the scaled scores
 * and att their softmax over the positions up to t (zero after), per head. */
static void attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T, int C, int NH)
{
    int C3 = 3 * C, hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    #pragma omp parallel for
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                const float *q = inp + b * T * C3 + t * C3 + h * hs;
                float *pre = preatt + b * NH * T * T + h * T * T + t * T;
                float *w = att + b * NH * T * T + h * T * T + t * T;
                float maxval = -1e30f;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = inp + b * T * C3 + t2 * C3 + h * hs + C;
                    float dot = 0.0f;
                    for (int i = 0; i < hs; i++)
                        dot += q[i] * k[i];
                    dot *= scale;
                    pre[t2] = dot;
                    if (dot > maxval)
                        maxval = dot;
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    float e = expf(pre[t2] - maxval);
                    w[t2] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                for (int t2 = 0; t2 < T; t2++)
                    w[t2] = t2 <= t ? w[t2] * inv : 0.0f;
                float *o = out + b * T * C + t * C + h * hs;
                for (int i = 0; i < hs; i++)
                    o[i] = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = inp + b * T * C3 + t2 * C3 + h * hs + 2 * C;
                    for (int i = 0; i < hs; i++)
                        o[i] += w[t2] * v[i];
                }
            }
        }
    }
}

#define GELU_SCALE 0.7978845608f /* sqrt(2 / pi) */

/* GELU, the tanh approximation GPT-2 uses. */
static void gelu_forward(float *out, const float *inp, int n)
{
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + 0.044715f * x * x * x)));
    }
}

static void residual_forward(float *out, const float *a, const float *b, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

static void softmax_forward(float *probs, const float *logits, int B, int T, int V)
{
    #pragma omp parallel for
    for (int bt = 0; bt < B * T; bt++) {
        const float *z = logits + bt * V;
        float *p = probs + bt * V;
        float maxval = -1e30f;
        for (int i = 0; i < V; i++)
            if (z[i] > maxval)
                maxval = z[i];
        float sum = 0.0f;
        for (int i = 0; i < V; i++) {
            p[i] = expf(z[i] - maxval);
            sum += p[i];
        }
        for (int i = 0; i < V; i++)
            p[i] /= sum;
    }
}

static void crossentropy_forward(float *losses, const float *probs, const int *targets, int B, int T, int V)
{
    for (int bt = 0; bt < B * T; bt++)
        losses[bt] = -logf(probs[bt * V + targets[bt]]);
}

static float gpt2_forward(float *params, float *acts, const int *inputs, const int *targets, int B, int T, int C,
                          int L, int NH, int V)
{
    Params p = params_in(params, T, C, L, V);
    Acts a = acts_in(acts, B, T, C, L, NH, V);
    int BT = B * T;
    encoder_forward(a.encoded, inputs, p.wte, p.wpe, B, T, C);
    for (int l = 0; l < L; l++) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;
        float *ln1 = a.ln1 + l * BT * C, *ln1_mean = a.ln1_mean + l * BT, *ln1_rstd = a.ln1_rstd + l * BT;
        float *qkv = a.qkv + l * BT * 3 * C, *atty = a.atty + l * BT * C;
        float *preatt = a.preatt + l * B * NH * T * T, *att = a.att + l * B * NH * T * T;
        float *attproj = a.attproj + l * BT * C, *residual2 = a.residual2 + l * BT * C;
        float *ln2 = a.ln2 + l * BT * C, *ln2_mean = a.ln2_mean + l * BT, *ln2_rstd = a.ln2_rstd + l * BT;
        float *fch = a.fch + l * BT * 4 * C, *fch_gelu = a.fch_gelu + l * BT * 4 * C;
        float *fcproj = a.fcproj + l * BT * C, *residual3 = a.residual3 + l * BT * C;
        layernorm_forward(ln1, ln1_mean, ln1_rstd, residual, p.ln1w + l * C, p.ln1b + l * C, B, T, C);
        matmul_forward(qkv, ln1, p.qkvw + l * 3 * C * C, p.qkvb + l * 3 * C, B, T, C, 3 * C);
        attention_forward(atty, preatt, att, qkv, B, T, C, NH);
        matmul_forward(attproj, atty, p.attprojw + l * C * C, p.attprojb + l * C, B, T, C, C);
        residual_forward(residual2, residual, attproj, BT * C);
        layernorm_forward(ln2, ln2_mean, ln2_rstd, residual2, p.ln2w + l * C, p.ln2b + l * C, B, T, C);
        matmul_forward(fch, ln2, p.fcw + l * 4 * C * C, p.fcb + l * 4 * C, B, T, C, 4 * C);
        gelu_forward(fch_gelu, fch, BT * 4 * C);
        matmul_forward(fcproj, fch_gelu, p.fcprojw + l * C * 4 * C, p.fcprojb + l * C, B, T, 4 * C, C);
        residual_forward(residual3, residual2, fcproj, BT * C);
    }
    layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, a.residual3 + (L - 1) * BT * C, p.lnfw, p.lnfb, B, T, C);
    matmul_forward(a.logits, a.lnf, p.wte, NULL, B, T, C, V);
    softmax_forward(a.probs, a.logits, B, T, V);
    crossentropy_forward(a.losses, a.probs, targets, B, T, V);
    float loss = 0.0f;
    for (int bt = 0; bt < BT; bt++)
        loss += a.losses[bt];
    return loss / BT;
}

/* The mean cross-entropy of predicting targets from inputs (B*T token ids each); params holds
 * gpt2_num_params floats, acts gpt2_num_acts (written). */
// @diff(gpt2_grad: (dup, dup, const, const, const, const, const, const, const, const) -> activeonly)
float gpt2_loss(float *params, float *acts, const int *inputs, const int *targets, int B, int T, int C, int L,
                int NH, int V)
{
    return gpt2_forward(params, acts, inputs, targets, B, T, C, L, NH, V);
}

/* ------------------------------------------------------------------ backward layers, by hand */

static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inputs, int B, int T, int C)
{
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *d = dout + (b * T + t) * C;
            float *dtok = dwte + inputs[b * T + t] * C;
            float *dpos = dwpe + t * C;
            for (int i = 0; i < C; i++) {
                dtok[i] += d[i];
                dpos[i] += d[i];
            }
        }
    }
}

static void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int B, int T, int C)
{
    for (int bt = 0; bt < B * T; bt++) {
        const float *d = dout + bt * C, *x = inp + bt * C;
        float *dx = dinp + bt * C;
        float m = mean[bt], s = rstd[bt];
        /* with n = (x - m) s and dn = weight dout: dx = s (dn - mean(dn) - n mean(dn n)) */
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int i = 0; i < C; i++) {
            float n = (x[i] - m) * s;
            float dn = weight[i] * d[i];
            dnorm_mean += dn;
            dnorm_norm_mean += dn * n;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int i = 0; i < C; i++) {
            float n = (x[i] - m) * s;
            float dn = weight[i] * d[i];
            dbias[i] += d[i];
            dweight[i] += n * d[i];
            dx[i] += s * (dn - dnorm_mean - n * dnorm_norm_mean);
        }
    }
}

static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int B, int T, int C, int OC)
{
    #pragma omp parallel for
    for (int bt = 0; bt < B * T; bt++) {
        const float *d = dout + bt * OC;
        float *dx = dinp + bt * C;
        for (int o = 0; o < OC; o++) {
            const float *w = weight + o * C;
            float g = d[o];
            for (int i = 0; i < C; i++)
                dx[i] += w[i] * g;
        }
    }
    #pragma omp parallel for
    for (int o = 0; o < OC; o++) {
        float *dw = dweight + o * C;
        float db = 0.0f;
        for (int bt = 0; bt < B * T; bt++) {
            const float *x = inp + bt * C;
            float g = dout[bt * OC + o];
            db += g;
            for (int i = 0; i < C; i++)
                dw[i] += x[i] * g;
        }
        if (dbias != NULL)
            dbias[o] += db;
    }
}

/* softmax's backward in O(T) per row: dpre[t2] = att[t2] (datt[t2] - sum_t3 att[t3] datt[t3]) */
static void attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout, const float *inp,
                               const float *att, int B, int T, int C, int NH)
{
    int C3 = 3 * C, hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                const float *q = inp + b * T * C3 + t * C3 + h * hs;
                float *dq = dinp + b * T * C3 + t * C3 + h * hs;
                const float *w = att + b * NH * T * T + h * T * T + t * T;
                float *dw = datt + b * NH * T * T + h * T * T + t * T;
                float *dpre = dpreatt + b * NH * T * T + h * T * T + t * T;
                const float *d = dout + b * T * C + t * C + h * hs;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = inp + b * T * C3 + t2 * C3 + h * hs + 2 * C;
                    float *dv = dinp + b * T * C3 + t2 * C3 + h * hs + 2 * C;
                    float g = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        g += v[i] * d[i];
                        dv[i] += w[t2] * d[i];
                    }
                    dw[t2] += g;
                }
                float wdw = 0.0f;
                for (int t2 = 0; t2 <= t; t2++)
                    wdw += w[t2] * dw[t2];
                for (int t2 = 0; t2 <= t; t2++)
                    dpre[t2] += w[t2] * (dw[t2] - wdw);
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = inp + b * T * C3 + t2 * C3 + h * hs + C;
                    float *dk = dinp + b * T * C3 + t2 * C3 + h * hs + C;
                    float g = dpre[t2] * scale;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += k[i] * g;
                        dk[i] += q[i] * g;
                    }
                }
            }
        }
    }
}

static void gelu_backward(float *dinp, const float *inp, const float *dout, int n)
{
    for (int i = 0; i < n; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
        dinp[i] += grad * dout[i];
    }
}

static void residual_backward(float *da, float *db, const float *dout, int n)
{
    for (int i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

/* softmax and cross-entropy together: dlogits = (probs - onehot(target)) dloss */
static void crossentropy_softmax_backward(float *dlogits, const float *dlosses, const float *probs,
                                          const int *targets, int B, int T, int V)
{
    for (int bt = 0; bt < B * T; bt++) {
        float *dz = dlogits + bt * V;
        const float *p = probs + bt * V;
        for (int i = 0; i < V; i++)
            dz[i] += (p[i] - (i == targets[bt] ? 1.0f : 0.0f)) * dlosses[bt];
    }
}

/* Runs the forward pass, then adds the gradient of the mean loss (times d_loss) into grads (the
 * params' layout); grad_acts (acts' layout) is scratch and must be zero on entry. Returns the
 * loss. */
float gpt2_backward(float *params, float *grads, float *acts, float *grad_acts, const int *inputs,
                    const int *targets, int B, int T, int C, int L, int NH, int V, float d_loss)
{
    float loss = gpt2_forward(params, acts, inputs, targets, B, T, C, L, NH, V);
    Params p = params_in(params, T, C, L, V), g = params_in(grads, T, C, L, V);
    Acts a = acts_in(acts, B, T, C, L, NH, V), d = acts_in(grad_acts, B, T, C, L, NH, V);
    int BT = B * T;
    for (int bt = 0; bt < BT; bt++)
        d.losses[bt] = d_loss / BT;
    crossentropy_softmax_backward(d.logits, d.losses, a.probs, targets, B, T, V);
    matmul_backward(d.lnf, g.wte, NULL, d.logits, a.lnf, p.wte, B, T, C, V);
    float *last = a.residual3 + (L - 1) * BT * C, *dlast = d.residual3 + (L - 1) * BT * C;
    layernorm_backward(dlast, g.lnfw, g.lnfb, d.lnf, last, p.lnfw, a.lnf_mean, a.lnf_rstd, B, T, C);
    for (int l = L - 1; l >= 0; l--) {
        const float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * BT * C;
        float *dresidual = l == 0 ? d.encoded : d.residual3 + (l - 1) * BT * C;
        size_t o1 = (size_t)l * BT * C, o3 = 3 * o1, o4 = 4 * o1, os = (size_t)l * BT;
        size_t oatt = (size_t)l * B * NH * T * T;
        residual_backward(d.residual2 + o1, d.fcproj + o1, d.residual3 + o1, BT * C);
        matmul_backward(d.fch_gelu + o4, g.fcprojw + l * C * 4 * C, g.fcprojb + l * C, d.fcproj + o1,
                        a.fch_gelu + o4, p.fcprojw + l * C * 4 * C, B, T, 4 * C, C);
        gelu_backward(d.fch + o4, a.fch + o4, d.fch_gelu + o4, BT * 4 * C);
        matmul_backward(d.ln2 + o1, g.fcw + l * 4 * C * C, g.fcb + l * 4 * C, d.fch + o4, a.ln2 + o1,
                        p.fcw + l * 4 * C * C, B, T, C, 4 * C);
        layernorm_backward(d.residual2 + o1, g.ln2w + l * C, g.ln2b + l * C, d.ln2 + o1, a.residual2 + o1,
                           p.ln2w + l * C, a.ln2_mean + os, a.ln2_rstd + os, B, T, C);
        residual_backward(dresidual, d.attproj + o1, d.residual2 + o1, BT * C);
        matmul_backward(d.atty + o1, g.attprojw + l * C * C, g.attprojb + l * C, d.attproj + o1, a.atty + o1,
                        p.attprojw + l * C * C, B, T, C, C);
        attention_backward(d.qkv + o3, d.preatt + oatt, d.att + oatt, d.atty + o1, a.qkv + o3, a.att + oatt, B, T,
                           C, NH);
        matmul_backward(d.ln1 + o1, g.qkvw + l * 3 * C * C, g.qkvb + l * 3 * C, d.qkv + o3, a.ln1 + o1,
                        p.qkvw + l * 3 * C * C, B, T, C, 3 * C);
        layernorm_backward(dresidual, g.ln1w + l * C, g.ln1b + l * C, d.ln1 + o1, residual, p.ln1w + l * C,
                           a.ln1_mean + os, a.ln1_rstd + os, B, T, C);
    }
    encoder_backward(g.wte, g.wpe, d.encoded, inputs, B, T, C);
    return loss;
}
