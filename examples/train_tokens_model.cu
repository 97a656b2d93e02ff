// train_tokens_model.cu - the kernels of examples/train_tokens_cuda.c: one
// SGD step of train_tokens.h's bigram model (logits = emb[x] . out + bias,
// softmax cross-entropy) on a batch of token rows in device memory. C
// callable; every launch goes on the caller's stream, nothing waits.
//
// Deterministic, like the CPU example: no atomics. Every sum is computed by
// one thread in a fixed order or by a block in a fixed tree, and each
// gradient element is written by one thread; so the same binary on the same
// GPU gives the same bits every run. The positions are taken CHUNK at a time
// (the logits of a chunk are CHUNK x vocab floats); the gradients of the
// chunks are summed in order, and the parameters change only after the
// last chunk, so a step is one step on the whole batch, as on the CPU.
#include <math.h>
#include <stdint.h>

#define CHUNK 512   // positions a chunk: logits of 512 x 50257 floats = 103 MB
#define THREADS 256 // a block; the reductions below assume this power of two

// Position n is column n % seq of row n / seq: its input token, and its
// target (the token after it in the row; a row holds seq + 1).
__device__ static int32_t input_at(const int32_t *tok, size_t stride, uint32_t seq, size_t n)
{
	return tok[(n / seq) * stride + n % seq];
}

__device__ static int32_t target_at(const int32_t *tok, size_t stride, uint32_t seq, size_t n)
{
	return tok[(n / seq) * stride + n % seq + 1];
}

// buf[0] = op over buf[0 .. THREADS - 1], as a fixed tree; every thread
// must call it and reads the result after.
template <typename Op> __device__ static float block_reduce(float *buf, float v, Op op)
{
	unsigned t = threadIdx.x;
	buf[t] = v;
	__syncthreads();
	for (unsigned s = THREADS / 2; s > 0; s >>= 1) {
		if (t < s)
			buf[t] = op(buf[t], buf[t + s]);
		__syncthreads();
	}
	float r = buf[0];
	__syncthreads(); // buf may be reused at once
	return r;
}

struct op_max {
	__device__ float operator()(float a, float b) const { return a > b ? a : b; }
};
struct op_add {
	__device__ float operator()(float a, float b) const { return a + b; }
};

// logits[r][j] = bias[j] + emb[x_r] . out[.][j]: blocks (vocab / THREADS, rows)
__global__ static void forward_kernel(const int32_t *tok, size_t stride, uint32_t seq, size_t n0,
				      const float *emb, const float *out, const float *bias,
				      uint32_t vocab, uint32_t dim, float *logits)
{
	uint32_t j = blockIdx.x * THREADS + threadIdx.x;
	if (j >= vocab)
		return;
	const float *h = emb + (size_t)input_at(tok, stride, seq, n0 + blockIdx.y) * dim;
	float acc = bias[j];
	for (uint32_t k = 0; k < dim; k++)
		acc += h[k] * out[(size_t)k * vocab + j];
	logits[(size_t)blockIdx.y * vocab + j] = acc;
}

// Row r of the logits becomes the gradient of the mean loss on them,
// (softmax - one-hot of the target) * inv_n, and row_loss[r] its loss,
// log(sum e^l) - l_target: a block a row.
__global__ static void softmax_kernel(const int32_t *tok, size_t stride, uint32_t seq, size_t n0,
				      uint32_t vocab, float inv_n, float *logits, float *row_loss)
{
	__shared__ float buf[THREADS];
	size_t n = n0 + blockIdx.x;
	float *l = logits + (size_t)blockIdx.x * vocab;
	int32_t y = target_at(tok, stride, seq, n);
	float m = -INFINITY;
	for (uint32_t j = threadIdx.x; j < vocab; j += THREADS)
		m = l[j] > m ? l[j] : m;
	m = block_reduce(buf, m, op_max());
	float s = 0;
	for (uint32_t j = threadIdx.x; j < vocab; j += THREADS)
		s += expf(l[j] - m);
	s = block_reduce(buf, s, op_add()); // its last barrier: l[y] is still a logit below
	if (threadIdx.x == 0)
		row_loss[n] = logf(s) + m - l[y];
	__syncthreads();
	float scale = inv_n / s;
	for (uint32_t j = threadIdx.x; j < vocab; j += THREADS)
		l[j] = expf(l[j] - m) * scale;
	__syncthreads();
	if (threadIdx.x == 0)
		l[y] -= inv_n;
}

// dh[r][k] = grad[r] . out[k]: blocks (rows, dim)
__global__ static void grad_h_kernel(const float *logits, const float *out, uint32_t vocab,
				     uint32_t dim, float *dh)
{
	__shared__ float buf[THREADS];
	const float *g = logits + (size_t)blockIdx.x * vocab, *o = out + (size_t)blockIdx.y * vocab;
	float acc = 0;
	for (uint32_t j = threadIdx.x; j < vocab; j += THREADS)
		acc += g[j] * o[j];
	acc = block_reduce(buf, acc, op_add());
	if (threadIdx.x == 0)
		dh[(size_t)blockIdx.x * dim + blockIdx.y] = acc;
}

// d_out[k][j] += sum_r emb[x_r][k] grad[r][j] (k < dim), d_bias[j] += sum_r
// grad[r][j] (k = dim): blocks (vocab / THREADS, dim + 1), rows in order
__global__ static void grad_out_kernel(const int32_t *tok, size_t stride, uint32_t seq, size_t n0,
				       uint32_t rows, const float *emb, const float *logits,
				       uint32_t vocab, uint32_t dim, float *d_out, float *d_bias)
{
	uint32_t j = blockIdx.x * THREADS + threadIdx.x, k = blockIdx.y;
	if (j >= vocab)
		return;
	float acc = 0;
	for (uint32_t r = 0; r < rows; r++) {
		float g = logits[(size_t)r * vocab + j];
		acc += k < dim ? emb[(size_t)input_at(tok, stride, seq, n0 + r) * dim + k] * g : g;
	}
	if (k < dim)
		d_out[(size_t)k * vocab + j] += acc;
	else
		d_bias[j] += acc;
}

// d_emb[x][k] += the sum of dh[r][k] over the chunk's rows r with input x,
// in order, written by the thread of x's first row alone: threads (rows x dim)
__global__ static void grad_emb_kernel(const int32_t *tok, size_t stride, uint32_t seq, size_t n0,
				       uint32_t rows, const float *dh, uint32_t dim, float *d_emb)
{
	size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x;
	if (i >= (size_t)rows * dim)
		return;
	uint32_t r = (uint32_t)(i / dim), k = (uint32_t)(i % dim);
	int32_t x = input_at(tok, stride, seq, n0 + r);
	for (uint32_t q = 0; q < r; q++)
		if (input_at(tok, stride, seq, n0 + q) == x)
			return; // an earlier row's thread sums this input
	float acc = 0;
	for (uint32_t q = r; q < rows; q++)
		if (input_at(tok, stride, seq, n0 + q) == x)
			acc += dh[(size_t)q * dim + k];
	d_emb[(size_t)x * dim + k] += acc;
}

// p -= lr * g, then g = 0 for the next step
__global__ static void sgd_kernel(float *p, float *g, size_t n, float lr)
{
	size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x;
	if (i < n) {
		p[i] -= lr * g[i];
		g[i] = 0;
	}
}

// *loss = the mean of row_loss[0 .. n - 1]: one block
__global__ static void loss_kernel(const float *row_loss, size_t n, float *loss)
{
	__shared__ float buf[THREADS];
	float acc = 0;
	for (size_t i = threadIdx.x; i < n; i += THREADS)
		acc += row_loss[i];
	acc = block_reduce(buf, acc, op_add());
	if (threadIdx.x == 0)
		*loss = acc / (float)n;
}

static unsigned blocks(size_t n)
{
	return (unsigned)((n + THREADS - 1) / THREADS);
}

// Floats of device memory tokens_step() needs as work for rows of seq
// positions: a chunk's logits and dh, and every position's loss.
extern "C" size_t tokens_work_floats(uint32_t rows, uint32_t seq, uint32_t vocab, uint32_t dim)
{
	size_t n = (size_t)rows * seq, c = n < CHUNK ? n : CHUNK;
	return c * vocab + c * dim + n;
}

// Launches one SGD step on stream: tok holds rows rows of seq + 1 int32
// tokens below vocab, stride tokens apart; params and grads hold
// (2 dim + 1) vocab floats each (emb, out, bias; grads zero, and left zero),
// work tokens_work_floats() floats; *loss (device) gets the rows' mean loss.
// @return : 0, or the cudaError_t of a launch that failed.
extern "C" int tokens_step(const int32_t *tok, size_t stride, uint32_t rows, uint32_t seq,
			   uint32_t vocab, uint32_t dim, float lr, float *params, float *grads,
			   float *work, float *loss, void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	size_t n = (size_t)rows * seq, c_max = n < CHUNK ? n : CHUNK;
	size_t n_emb = (size_t)vocab * dim;
	const float *emb = params, *out = params + n_emb, *bias = out + n_emb;
	float *d_emb = grads, *d_out = grads + n_emb, *d_bias = d_out + n_emb;
	float *logits = work, *dh = logits + c_max * vocab, *row_loss = dh + c_max * dim;
	for (size_t n0 = 0; n0 < n; n0 += CHUNK) {
		uint32_t c = (uint32_t)(n - n0 < CHUNK ? n - n0 : CHUNK);
		forward_kernel<<<dim3(blocks(vocab), c), THREADS, 0, s>>>(tok, stride, seq, n0, emb, out,
									  bias, vocab, dim, logits);
		softmax_kernel<<<c, THREADS, 0, s>>>(tok, stride, seq, n0, vocab, 1.0f / (float)n,
						     logits, row_loss);
		// out and emb as they were: the updates come after the last chunk
		grad_h_kernel<<<dim3(c, dim), THREADS, 0, s>>>(logits, out, vocab, dim, dh);
		grad_out_kernel<<<dim3(blocks(vocab), dim + 1), THREADS, 0, s>>>(
			tok, stride, seq, n0, c, emb, logits, vocab, dim, d_out, d_bias);
		grad_emb_kernel<<<blocks((size_t)c * dim), THREADS, 0, s>>>(tok, stride, seq, n0, c, dh,
									    dim, d_emb);
	}
	size_t n_params = n_emb * 2 + vocab;
	sgd_kernel<<<blocks(n_params), THREADS, 0, s>>>(params, grads, n_params, lr);
	loss_kernel<<<1, THREADS, 0, s>>>(row_loss, n, loss);
	return (int)cudaGetLastError();
}
