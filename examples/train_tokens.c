/* train_tokens.c - a complete, minimal training loop on token shards, on the
 * CPU: ringfeed reads windows of seq + 1 tokens from llm.c's .bin shards
 * (or ringfeed's .bin.zst) in shuffled order; a bigram language model (a
 * low-rank table, see train_tokens.h) learns to predict each row's next
 * tokens with softmax cross-entropy and plain SGD; checkpoints hold the
 * parameters, the step and the loader's position, so that a resumed run
 * continues exactly (the same losses bit for bit, whatever --threads).
 *
 * Build (after installing ringfeed; train_tokens.h beside it):
 *   cc -O3 train_tokens.c -o train_tokens $(pkg-config --cflags --libs ringfeed) -lm
 * Run:
 *   ./train_tokens --source 'data/fineweb_train_*.bin' --steps 2000 \
 *       --checkpoint ck.bin --checkpoint-every 500
 *   ./train_tokens --source 'data/fineweb_train_*.bin' --steps 4000 --resume ck.bin \
 *       --checkpoint ck.bin --checkpoint-every 500
 *
 * The step runs on this thread, in a fixed order, so that one binary gives
 * the same bits every time (another compiler or -march may round
 * differently). A bigram model's logits depend on the input token alone, so
 * the step computes one softmax per distinct input of the batch (about 330
 * of B * T = 512 on the Zipf-distributed tokens of `ringfeed gen --tokens`),
 * whose gradient is (count * softmax - one-hot of each target) / (B * T).
 * The distinct inputs go through the table GROUP at a time, CHUNK columns at
 * a time, so that the columns of out being read stay in the cache. With
 * vocab 50257, dim 8, B = 8, T = 64 that is 50 to 70 ms a step on one core
 * of a shared 2-core AMD EPYC VM (dim 16: about 90 ms).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fsync, O_CLOEXEC, O_DIRECTORY */

#include "train_tokens.h"

#define GROUP 16   /* distinct inputs whose logits are computed together */
#define CHUNK 1024 /* columns of out (dim x CHUNK floats) reused by the group */

/* The step's working memory: allocated by work_alloc(), used by step() only. */
struct work {
	int32_t *slot;      /* [vocab]: a token's place in uniq during a step; -1 otherwise */
	int32_t *uniq;      /* [batch * seq]: the step's distinct inputs, in order of first use */
	uint32_t *count;    /* [batch * seq]: positions that have uniq[u] as input */
	uint32_t *first;    /* [batch * seq + 1]: uniq[u]'s targets are targets[first[u] ..] */
	int32_t *targets;   /* [batch * seq]: every position's target, grouped by input */
	float *logits;      /* [GROUP][vocab]: logits, then the loss's gradient on them */
	float *h, *dh;      /* [GROUP][dim]: the group's emb rows and their gradients */
	float *d_out, *d_bias; /* [dim][vocab], [vocab]: gradients summed over the step */
};

static void work_free(struct work *w)
{
	free(w->slot);
	free(w->uniq);
	free(w->count);
	free(w->first);
	free(w->targets);
	free(w->logits);
	free(w->h);
	free(w->dh);
	free(w->d_out);
	free(w->d_bias);
}

/* @return : 0, or -1 (out of memory; what was allocated is freed). */
static int work_alloc(struct work *w, const struct options *o)
{
	size_t pos = (size_t)o->batch * o->seq, v = o->vocab;
	*w = (struct work){
		.slot = malloc(v * sizeof(int32_t)),
		.uniq = malloc(pos * sizeof(int32_t)),
		.count = malloc(pos * sizeof(uint32_t)),
		.first = malloc((pos + 1) * sizeof(uint32_t)),
		.targets = malloc(pos * sizeof(int32_t)),
		.logits = malloc(GROUP * v * sizeof(float)),
		.h = malloc(GROUP * (size_t)o->dim * sizeof(float)),
		.dh = malloc(GROUP * (size_t)o->dim * sizeof(float)),
		.d_out = calloc((size_t)o->dim * v, sizeof(float)),
		.d_bias = calloc(v, sizeof(float)),
	};
	if (!w->slot || !w->uniq || !w->count || !w->first || !w->targets || !w->logits || !w->h ||
	    !w->dh || !w->d_out || !w->d_bias) {
		work_free(w);
		return -1;
	}
	for (size_t i = 0; i < v; i++)
		w->slot[i] = -1;
	return 0;
}

/* ---- vector helpers: plain loops the compiler vectorizes ------------------ */

static void axpy(float *restrict y, const float *restrict x, float a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] += a * x[i];
}

/* Sums, dot products and maxima in 8 independent lanes: one accumulator
 * would be a chain of dependent adds that the compiler must keep in order
 * (it may not reassociate floats), 8 lanes it turns into vector adds. The
 * order is fixed either way: the same inputs, the same bits. */
static float dot(const float *restrict x, const float *restrict y, size_t n)
{
	float acc[8] = { 0 };
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			acc[k] += x[i + k] * y[i + k];
	float s = 0;
	for (; i < n; i++)
		s += x[i] * y[i];
	for (int k = 0; k < 8; k++)
		s += acc[k];
	return s;
}

static double sum(const float *x, size_t n)
{
	float acc[8] = { 0 };
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			acc[k] += x[i + k];
	double s = 0;
	for (; i < n; i++)
		s += x[i];
	for (int k = 0; k < 8; k++)
		s += acc[k];
	return s;
}

static float max_of(const float *x, size_t n)
{
	float m[8];
	size_t i = 0;
	for (int k = 0; k < 8; k++)
		m[k] = x[0];
	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
	float r = m[0];
	for (; i < n; i++)
		r = x[i] > r ? x[i] : r;
	for (int k = 0; k < 8; k++)
		r = m[k] > r ? m[k] : r;
	return r;
}

/* The two products of the step, each LANES columns at a time in local
 * accumulators that the compiler keeps in vector registers, so that the
 * inner loop over k (or g) loads its operands and stores nothing: an axpy
 * per k would load and store the row once per k. */
#define LANES 16

/* l[j] = bias[j] + sum_k h[k] out[k][j] for j < n (out's rows stride apart). */
static void logits_row(float *restrict l, const float *restrict bias, const float *restrict out,
		       size_t stride, const float *restrict h, uint32_t dim, size_t n)
{
	size_t j = 0;
	for (; j + LANES <= n; j += LANES) {
		float acc[LANES];
		for (int q = 0; q < LANES; q++)
			acc[q] = bias[j + q];
		for (uint32_t k = 0; k < dim; k++)
			for (int q = 0; q < LANES; q++)
				acc[q] += h[k] * out[k * stride + j + q];
		memcpy(l + j, acc, sizeof(acc));
	}
	for (; j < n; j++) { /* the same sums in the same order */
		float a = bias[j];
		for (uint32_t k = 0; k < dim; k++)
			a += h[k] * out[k * stride + j];
		l[j] = a;
	}
}

/* d[j] += sum_g hk[g * dim] grad[g][j] for j < n (grad's rows stride apart):
 * row k of d_out, hk = &h[0][k]. */
static void grad_out_row(float *restrict d, const float *restrict grad, size_t stride,
			 const float *restrict hk, uint32_t dim, uint32_t groups, size_t n)
{
	size_t j = 0;
	for (; j + LANES <= n; j += LANES) {
		float acc[LANES];
		memcpy(acc, d + j, sizeof(acc));
		for (uint32_t g = 0; g < groups; g++)
			for (int q = 0; q < LANES; q++)
				acc[q] += hk[g * dim] * grad[g * stride + j + q];
		memcpy(d + j, acc, sizeof(acc));
	}
	for (; j < n; j++) {
		float a = d[j];
		for (uint32_t g = 0; g < groups; g++)
			a += hk[g * dim] * grad[g * stride + j];
		d[j] = a;
	}
}

/* e^x for x <= 0 (a softmax's logit minus the row's maximum): x = n ln 2 + r
 * with |r| <= ln 2 / 2, e^r by its Taylor polynomial of degree 6 (relative
 * error below 3e-7 over [-87, 0]), 2^n written into the exponent bits. No
 * branch and no call, so that the loop around it is vectorized: glibc's
 * expf is not, and took most of the step. */
static inline float exp_neg(float x)
{
	/* x = max(x, -87), so that 2^n stays a normal float: for x <= 0 a larger
	 * magnitude is a larger unsigned bit pattern (up to -inf), so this is an
	 * integer min, which the compiler vectorizes (a float compare and select
	 * it may not, without -ffast-math) */
	uint32_t b;
	memcpy(&b, &x, sizeof(b));
	b = b < 0xc2ae0000u ? b : 0xc2ae0000u; /* -87.0f */
	memcpy(&x, &b, sizeof(x));
	/* round to nearest: adding 1.5 * 2^23 leaves no fraction bits */
	float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
	float r = x - n * 0.693145751953125f - n * 1.428606765330187e-6f; /* ln 2, split */
	float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 +
		  r * (1.0f / 120 + r * (1.0f / 720))))));
	int32_t bits = ((int32_t)n + 127) << 23;
	float scale;
	memcpy(&scale, &bits, sizeof(scale));
	return p * scale;
}

/* ---- the step ------------------------------------------------------------- */

/* Turns row u's logits into the gradient of the step's summed loss over
 * positions (the caller's 1 / positions makes it the mean's) and returns
 * that input's share of the summed loss: for each target y,
 * log(sum_j e^l_j) - l_y. */
static double softmax_grad(float *l, uint32_t vocab, const int32_t *targets, uint32_t count,
			   float inv_positions)
{
	float m = max_of(l, vocab);
	double target_logits = 0;
	for (uint32_t i = 0; i < count; i++)
		target_logits += l[targets[i]];
	for (uint32_t j = 0; j < vocab; j++)
		l[j] = exp_neg(l[j] - m);
	double s = sum(l, vocab);
	float scale = (float)(count / s) * inv_positions;
	for (uint32_t j = 0; j < vocab; j++)
		l[j] *= scale;
	for (uint32_t i = 0; i < count; i++)
		l[targets[i]] -= inv_positions;
	return count * (m + log(s)) - target_logits;
}

/* One SGD step on count rows of seq + 1 tokens (checked below vocab).
 * @return : the rows' mean loss before the update. */
static double step(float *params, const struct options *o, struct work *w, const int32_t *rows,
		   uint32_t count)
{
	const uint32_t V = o->vocab, D = o->dim, T = o->seq;
	float *emb = params, *out = params + (size_t)V * D, *bias = out + (size_t)D * V;

	/* the distinct inputs, and each one's targets (a counting sort) */
	uint32_t nu = 0, positions = count * T;
	for (uint32_t r = 0; r < count; r++)
		for (uint32_t t = 0; t < T; t++) {
			int32_t x = rows[(size_t)r * (T + 1) + t];
			if (w->slot[x] < 0) {
				w->slot[x] = (int32_t)nu;
				w->uniq[nu] = x;
				w->count[nu++] = 0;
			}
			w->count[w->slot[x]]++;
		}
	w->first[0] = 0;
	for (uint32_t u = 0; u < nu; u++)
		w->first[u + 1] = w->first[u] + w->count[u];
	for (uint32_t r = 0; r < count; r++)
		for (uint32_t t = 0; t < T; t++) {
			const int32_t *p = rows + (size_t)r * (T + 1) + t;
			w->targets[w->first[w->slot[p[0]]]++] = p[1];
		}
	for (uint32_t u = 0; u < nu; u++) /* first[] was advanced to the ends: back */
		w->first[u] -= w->count[u];

	double loss = 0;
	const float inv_positions = 1.0f / (float)positions;
	for (uint32_t g0 = 0; g0 < nu; g0 += GROUP) {
		uint32_t G = nu - g0 < GROUP ? nu - g0 : GROUP;
		for (uint32_t g = 0; g < G; g++)
			memcpy(w->h + (size_t)g * D, emb + (size_t)w->uniq[g0 + g] * D, D * sizeof(float));
		/* forward: logits = bias + h . out */
		for (uint32_t j0 = 0; j0 < V; j0 += CHUNK) {
			size_t n = V - j0 < CHUNK ? V - j0 : CHUNK;
			for (uint32_t g = 0; g < G; g++)
				logits_row(w->logits + (size_t)g * V + j0, bias + j0, out + j0, V,
					   w->h + (size_t)g * D, D, n);
		}
		for (uint32_t g = 0; g < G; g++) {
			uint32_t u = g0 + g;
			loss += softmax_grad(w->logits + (size_t)g * V, V, w->targets + w->first[u],
					     w->count[u], inv_positions);
		}
		/* backward: d_out += h^T grad, d_bias += grad, dh = grad . out^T */
		memset(w->dh, 0, (size_t)G * D * sizeof(float));
		for (uint32_t j0 = 0; j0 < V; j0 += CHUNK) {
			size_t n = V - j0 < CHUNK ? V - j0 : CHUNK;
			const float *grad = w->logits + j0;
			for (uint32_t k = 0; k < D; k++)
				grad_out_row(w->d_out + (size_t)k * V + j0, grad, V, w->h + k, D, G, n);
			for (uint32_t g = 0; g < G; g++) {
				axpy(w->d_bias + j0, grad + (size_t)g * V, 1.0f, n);
				for (uint32_t k = 0; k < D; k++)
					w->dh[(size_t)g * D + k] +=
						dot(out + (size_t)k * V + j0, grad + (size_t)g * V, n);
			}
		}
		/* each emb row belongs to one distinct input: update it now */
		for (uint32_t g = 0; g < G; g++)
			axpy(emb + (size_t)w->uniq[g0 + g] * D, w->dh + (size_t)g * D, -o->lr, D);
	}
	/* out and bias last: every group above read them as they were */
	size_t n_out = (size_t)D * V;
	axpy(out, w->d_out, -o->lr, n_out);
	axpy(bias, w->d_bias, -o->lr, V);
	memset(w->d_out, 0, n_out * sizeof(float));
	memset(w->d_bias, 0, V * sizeof(float));
	for (uint32_t u = 0; u < nu; u++)
		w->slot[w->uniq[u]] = -1;
	return loss / positions;
}

int main(int argc, char **argv)
{
	struct options o;
	int ret = parse_options(argc, argv, &o);
	if (ret)
		return ret < 0 ? 0 : ret;

	int status = 1;
	rf_loader *loader = NULL;
	struct work w = { 0 };
	float *params = malloc(params_count(o.vocab, o.dim) * sizeof(float));
	if (!params || work_alloc(&w, &o)) {
		fprintf(stderr, "%s: out of memory for vocab %u, dim %u\n", prog, o.vocab, o.dim);
		goto done;
	}
	uint64_t steps_done;
	unsigned char state[RF_STATE_MAX_BYTES];
	size_t state_len;
	ret = start_model(&o, params, &steps_done, state, &state_len);
	if (ret) {
		status = ret > 0 ? 0 : 1;
		goto done;
	}
	if (open_loader(&o, -1, state_len ? state : NULL, state_len, &loader))
		goto done;
	print_plan(&o, loader, steps_done);

	struct loss_clock clock = { now_ms(), 0 };
	while (steps_done < o.steps) {
		rf_batch *b;
		if (next_rows(&o, loader, &b))
			goto done;
		double loss = step(params, &o, &w, (const int32_t *)b->data, b->count);
		rf_batch_release(loader, b);
		steps_done++;
		clock.steps++;
		if (!isfinite(loss) || print_due(&o, steps_done)) {
			if (print_loss(&clock, steps_done, loss))
				goto done;
		}
		if (checkpoint_due(&o, steps_done) &&
		    checkpoint_save(o.checkpoint, params, o.vocab, o.dim, steps_done, loader))
			goto done;
	}
	status = 0;
done:
	rf_loader_destroy(loader);
	work_free(&w);
	free(params);
	return status;
}
