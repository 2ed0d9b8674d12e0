// Softmax cross-entropy for the training run's classifier head, fused with its
// gradient: one thread per row of a row-major (rows, classes) logit matrix.
#include "common.cuh"

// logits: rows × classes (bias not yet added); bias: classes; labels: rows (int).
// loss[row] = logsumexp(z) − z[label]; grad = (softmax(z) − onehot(label)) / rows,
// the gradient of the batch-mean loss. Numerically stable: subtracts the row max.
extern "C" __global__ void softmax_xent_f32(const float* logits, const float* bias, const int* labels,
                                            float* loss, float* grad,
                                            unsigned long long rows, unsigned long long classes) {
    for (unsigned long long r = global_index(); r < rows; r += grid_stride()) {
        const float* z = logits + r * classes;
        float m = z[0] + bias[0];
        for (unsigned long long c = 1; c < classes; ++c) m = fmaxf(m, z[c] + bias[c]);
        float sum = 0.0f;
        for (unsigned long long c = 0; c < classes; ++c) sum += expf(z[c] + bias[c] - m);
        const int y = labels[r];
        loss[r] = logf(sum) + m - (z[y] + bias[y]);
        for (unsigned long long c = 0; c < classes; ++c) {
            const float p = expf(z[c] + bias[c] - m) / sum;
            grad[r * classes + c] = (p - (c == (unsigned long long)y ? 1.0f : 0.0f)) / (float)rows;
        }
    }
}
