/* train_tokens_cuda.c - train_tokens.c on the GPU: the same model, options,
 * losses printed and checkpoint file (a checkpoint of either resumes on the
 * other), with the step's kernels in train_tokens_model.cu. ringfeed copies
 * each batch of token rows to the device on its transfer stream; the loop
 * orders its kernels after that copy on its own stream and never waits on
 * the host, except to copy one float back when it prints the loss and the
 * parameters when it writes a checkpoint.
 *
 * Build (after installing ringfeed with CUDA support; train_tokens.h beside it):
 *   nvcc -O3 -c train_tokens_model.cu -o train_tokens_model.o
 *   cc -O3 train_tokens_cuda.c train_tokens_model.o -o train_tokens_cuda \
 *      $(pkg-config --cflags --libs ringfeed) -I/usr/local/cuda/include \
 *      -L/usr/local/cuda/lib64 -lcudart -lstdc++ -lm
 * Run:
 *   ./train_tokens_cuda --source 'data/fineweb_train_*.bin' --steps 2000 \
 *       --checkpoint ck.bin --checkpoint-every 500
 *
 * Each step, as train_cuda.c explains the contract:
 * 1. rf_loader_next() lends a batch whose copy to the device was issued;
 *    the host rows (b->data) are checked against --vocab meanwhile.
 * 2. rf_batch_wait(b, stream) makes the training stream wait for the copy.
 * 3. tokens_step() launches forward, loss, backward and the SGD update on
 *    the stream, reading b->device_data.
 * 4. rf_batch_release_on(loader, b, stream): the loader reuses the slot once
 *    the stream has passed the step.
 * Deterministic as the CPU example is (no atomics in the kernels), but the
 * GPU rounds otherwise (fused multiply-adds, other summation orders): its
 * losses equal the CPU's to a few digits, not bit for bit.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fsync, O_CLOEXEC, O_DIRECTORY */

#include <cuda_runtime.h>

#include "train_tokens.h"

/* train_tokens_model.cu */
size_t tokens_work_floats(uint32_t rows, uint32_t seq, uint32_t vocab, uint32_t dim);
int tokens_step(const int32_t *tok, size_t stride, uint32_t rows, uint32_t seq, uint32_t vocab,
		uint32_t dim, float lr, float *params, float *grads, float *work, float *loss,
		void *stream);

/* @return : 0 when e is cudaSuccess; -1 with a message naming what failed. */
static int cuda_check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", prog, what, cudaGetErrorString(e));
	return -1;
}

/* The device's copy of the model and the step's memory: cudaMalloc'ed by
 * main(), used on its stream only. */
struct device {
	cudaStream_t stream;
	float *params; /* params_count() floats: emb, out, bias */
	float *grads;  /* the same layout; zero between steps */
	float *work;   /* tokens_work_floats() floats */
	float *loss;   /* the last step's mean loss */
};

static void device_free(struct device *d)
{
	cudaFree(d->params);
	cudaFree(d->grads);
	cudaFree(d->work);
	cudaFree(d->loss);
	if (d->stream)
		cudaStreamDestroy(d->stream);
}

/* Allocates *d on device 0 and copies the host parameters in.
 * @return : 0, or -1 with a message (what was allocated is freed). */
static int device_alloc(struct device *d, const struct options *o, const float *params)
{
	size_t pbytes = params_count(o->vocab, o->dim) * sizeof(float);
	size_t wbytes = tokens_work_floats(o->batch, o->seq, o->vocab, o->dim) * sizeof(float);
	*d = (struct device){ 0 };
	if (cuda_check(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), "stream") ||
	    cuda_check(cudaMalloc((void **)&d->params, pbytes), "parameters") ||
	    cuda_check(cudaMalloc((void **)&d->grads, pbytes), "gradients") ||
	    cuda_check(cudaMalloc((void **)&d->work, wbytes), "logits") ||
	    cuda_check(cudaMalloc((void **)&d->loss, sizeof(float)), "loss") ||
	    cuda_check(cudaMemcpy(d->params, params, pbytes, cudaMemcpyHostToDevice), "parameters in") ||
	    cuda_check(cudaMemset(d->grads, 0, pbytes), "gradients")) {
		device_free(d);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	prog = "train_tokens_cuda";
	struct options o;
	int ret = parse_options(argc, argv, &o);
	if (ret)
		return ret < 0 ? 0 : ret;

	int status = 1;
	rf_loader *loader = NULL;
	struct device dev = { 0 };
	uint64_t steps_done;
	unsigned char state[RF_STATE_MAX_BYTES];
	size_t state_len;
	size_t pbytes = params_count(o.vocab, o.dim) * sizeof(float);
	float *params = malloc(pbytes); /* the host copy: initialization and checkpoints */
	if (!params) {
		fprintf(stderr, "%s: out of memory for vocab %u, dim %u\n", prog, o.vocab, o.dim);
		goto done;
	}
	ret = start_model(&o, params, &steps_done, state, &state_len);
	if (ret) {
		status = ret > 0 ? 0 : 1;
		goto done;
	}
	/* the loader's device is 0: the model's too */
	if (cuda_check(cudaSetDevice(0), "device 0") || device_alloc(&dev, &o, params))
		goto done;
	if (open_loader(&o, 0, state_len ? state : NULL, state_len, &loader))
		goto done;
	print_plan(&o, loader, steps_done);

	struct loss_clock clock = { now_ms(), 0 };
	while (steps_done < o.steps) {
		rf_batch *b;
		if (next_rows(&o, loader, &b))                                      /* 1 */
			goto done;
		ret = rf_batch_wait(b, dev.stream);                                   /* 2 */
		if (ret) {
			fprintf(stderr, "%s: rf_batch_wait: %s\n", prog, rf_strerror(ret));
			rf_batch_release(loader, b);
			goto done;
		}
		ret = tokens_step((const int32_t *)b->device_data,                   /* 3 */
				  b->device_sample_bytes / sizeof(int32_t), b->count, o.seq,
				  o.vocab, o.dim, o.lr, dev.params, dev.grads, dev.work, dev.loss,
				  dev.stream);
		rf_batch_release_on(loader, b, dev.stream);                           /* 4 */
		if (cuda_check((cudaError_t)ret, "the step's kernels"))
			goto done;
		steps_done++;
		clock.steps++;
		if (print_due(&o, steps_done)) { /* the loss comes back, and is checked, here */
			float loss;
			if (cuda_check(cudaMemcpyAsync(&loss, dev.loss, sizeof(loss), cudaMemcpyDeviceToHost,
						       dev.stream), "loss out") ||
			    cuda_check(cudaStreamSynchronize(dev.stream), "the step") ||
			    print_loss(&clock, steps_done, loss))
				goto done;
		}
		if (checkpoint_due(&o, steps_done) &&
		    (cuda_check(cudaMemcpyAsync(params, dev.params, pbytes, cudaMemcpyDeviceToHost,
						dev.stream), "parameters out") ||
		     cuda_check(cudaStreamSynchronize(dev.stream), "the step") ||
		     checkpoint_save(o.checkpoint, params, o.vocab, o.dim, steps_done, loader)))
			goto done;
	}
	if (cuda_check(cudaStreamSynchronize(dev.stream), "the last step"))
		goto done;
	status = 0;
done:
	rf_loader_destroy(loader); /* before the stream its releases were recorded on */
	device_free(&dev);
	free(params);
	return status;
}
