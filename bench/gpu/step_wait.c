/* step_wait.c - how long a training step waits for its input on the GPU:
 * the loader copies batches to device 0; each step makes the training stream
 * wait for its batch (rf_batch_wait), then runs a kernel that spins for T ms
 * (spin.cu), then releases the batch at that point. Events recorded around
 * each wait measure, on the GPU, the time the stream stalled for input; the
 * target is at most 1% of the run when T >= 1.1x the loader's batch period.
 *
 *   build/bench/step_wait --source DIR --step-ms T [--batches N] [bench-like options:
 *        --batch B --threads N --random-resized-crop C --dtype float16 --device-convert]
 * Prints one JSON object. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringfeed.h>

int spin_step(unsigned long long ns, void *stream); /* spin.cu */

int main(int argc, char **argv)
{
	rf_config cfg;
	rf_config_default(&cfg);
	cfg.device = 0;
	cfg.epochs = 0;
	double step_ms = 0;
	long batches = 200;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--source") && v) cfg.source = argv[++i];
		else if (!strcmp(a, "--step-ms") && v) step_ms = atof(argv[++i]);
		else if (!strcmp(a, "--batches") && v) batches = atol(argv[++i]);
		else if (!strcmp(a, "--batch") && v) cfg.batch_size = atoi(argv[++i]);
		else if (!strcmp(a, "--threads") && v) cfg.threads = atoi(argv[++i]);
		else if (!strcmp(a, "--random-resized-crop") && v) {
			cfg.random_resized_crop = 1;
			cfg.crop = atoi(argv[++i]);
		} else if (!strcmp(a, "--dtype") && v) {
			const char *d = argv[++i];
			cfg.dtype = !strcmp(d, "float16") ? RF_DTYPE_FLOAT16 : !strcmp(d, "float32") ? RF_DTYPE_FLOAT32 : RF_DTYPE_UINT8;
		} else if (!strcmp(a, "--device-convert")) cfg.device_convert = 1;
		else {
			fprintf(stderr, "usage: step_wait --source DIR --step-ms T [--batches N] [--batch B] "
				"[--threads N] [--random-resized-crop C] [--dtype D] [--device-convert]\n");
			return 2;
		}
	}
	if (!cfg.source || step_ms <= 0) {
		fprintf(stderr, "step_wait: --source and --step-ms are required\n");
		return 2;
	}
	char err[512];
	rf_loader *l;
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "step_wait: %s (%s)\n", err, rf_strerror(ret));
		return 1;
	}
	cudaStream_t s;
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	cudaEvent_t *before = calloc((size_t)batches, sizeof(cudaEvent_t));
	cudaEvent_t *after = calloc((size_t)batches, sizeof(cudaEvent_t));
	cudaEvent_t start, end;
	cudaEventCreate(&start);
	cudaEventCreate(&end);
	for (long i = 0; i < batches; i++) {
		cudaEventCreate(&before[i]);
		cudaEventCreate(&after[i]);
	}
	cudaEventRecord(start, s);
	rf_batch *b;
	long n = 0;
	while (n < batches && rf_loader_next(l, &b) == 0) {
		cudaEventRecord(before[n], s);
		rf_batch_wait(b, s);           /* the stream stalls here if the copy is late */
		cudaEventRecord(after[n], s);
		spin_step((unsigned long long)(step_ms * 1e6), s);
		rf_batch_release_on(l, b, s);
		n++;
	}
	cudaEventRecord(end, s);
	cudaEventSynchronize(end);
	double wait_ms = 0, first_ms = 0;
	for (long i = 0; i < n; i++) {
		float ms;
		cudaEventElapsedTime(&ms, before[i], after[i]);
		if (i == 0)
			first_ms = ms; /* start-up: the time to first batch */
		else
			wait_ms += ms;
	}
	float total;
	cudaEventElapsedTime(&total, start, end);
	printf("{\"batches\":%ld,\"step_ms\":%.3f,\"run_ms\":%.3f,\"first_wait_ms\":%.3f,"
	       "\"wait_ms\":%.3f,\"wait_pct\":%.3f}\n", n, step_ms, total, first_ms, wait_ms,
	       total > first_ms ? 100.0 * wait_ms / (total - first_ms) : 0.0);
	rf_loader_destroy(l);
	return 0;
}
