/* train_cuda.c - a minimal C training loop on the GPU: ringfeed copies each
 * finished batch to the device on its own transfer stream; the loop's
 * "model" (examples/train_model.cu, one kernel) consumes it on the training
 * stream. Nothing waits on the host.
 *
 * Build (after installing ringfeed with CUDA support):
 *   nvcc -O2 -c train_model.cu -o train_model.o
 *   cc -O2 train_cuda.c train_model.o -o train_cuda $(pkg-config --cflags --libs ringfeed) \
 *      -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart
 * Run: ./train_cuda /path/to/imagefolder
 *
 * The contract, in order:
 * 1. rf_loader_next() lends a batch whose copy to the device was *issued*
 *    (by the loader thread that finished it), not necessarily done.
 * 2. rf_batch_wait(batch, train_stream) makes the training stream wait for
 *    that copy (and the conversion to float16 CHW) on the device. Launch
 *    the step after it, on the same stream.
 * 3. rf_batch_release_on(loader, batch, train_stream) after the last launch
 *    that reads batch->device_data: the loader records the release point on
 *    the stream and copies a later batch into that device slot only once the
 *    stream has passed it. So a slow step never sees its input overwritten,
 *    and the host never blocks for it.
 * 4. The host slot (batch->data) may be reused once the batch is released
 *    and its copy has read it; the loader waits for that itself.
 */
#include <stdio.h>

#include <cuda_runtime.h>
#include <ringfeed.h>

int model_step(const void *x, size_t n, float *acc, void *stream); /* train_model.cu */

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	rf_config cfg;
	rf_config_default(&cfg);
	cfg.source = argv[1];
	cfg.batch_size = 64;
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	cfg.device = 0;
	cfg.device_convert = 1;          /* uint8 over the bus, float16 CHW on the device */
	cfg.dtype = RF_DTYPE_FLOAT16;
	cfg.layout = RF_LAYOUT_CHW;
	const float mean[3] = { 0.485f, 0.456f, 0.406f }, sd[3] = { 0.229f, 0.224f, 0.225f };
	for (int c = 0; c < 3; c++) {
		cfg.mean[c] = mean[c];
		cfg.std[c] = sd[c];
	}

	char err[512];
	rf_loader *loader;
	int ret = rf_loader_create(&loader, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "rf_loader_create: %s (%s)\n", err, rf_strerror(ret));
		return 1;
	}
	cudaStream_t train;
	float *acc;
	if (cudaStreamCreateWithFlags(&train, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaMalloc((void **)&acc, sizeof(float)) != cudaSuccess ||
	    cudaMemsetAsync(acc, 0, sizeof(float), train) != cudaSuccess) {
		fprintf(stderr, "CUDA set-up failed\n");
		rf_loader_destroy(loader);
		return 1;
	}
	rf_batch *b;
	unsigned long long steps = 0;
	while ((ret = rf_loader_next(loader, &b)) == 0) {
		ret = rf_batch_wait(b, train);                        /* 2: device-side wait */
		if (!ret)
			ret = model_step(b->device_data, b->count * b->device_sample_bytes / 2, acc, train);
		rf_batch_release_on(loader, b, train);                /* 3: release point */
		if (ret) {
			fprintf(stderr, "step %llu failed: %d\n", steps, ret);
			break;
		}
		steps++;
	}
	float sum = 0;
	cudaMemcpyAsync(&sum, acc, sizeof(sum), cudaMemcpyDeviceToHost, train);
	cudaStreamSynchronize(train); /* the only host synchronization: the end */
	if (ret != RF_EOF && ret != 0)
		fprintf(stderr, "rf_loader_next: %s: %s\n", rf_strerror(ret), rf_loader_error(loader));
	printf("%llu steps, checksum %.3f\n", steps, sum);
	cudaFree(acc);
	cudaStreamDestroy(train);
	rf_loader_destroy(loader);
	return ret == RF_EOF ? 0 : 1;
}
