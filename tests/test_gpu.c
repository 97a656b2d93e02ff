/* test_gpu.c - batches on the GPU. Without a CUDA device (this machine, CI),
 * asking for one is refused with the reason, and the device tests skip
 * saying why. With one: device batches equal host batches byte for byte;
 * converted floats (device_convert) equal the host's float output bit for
 * bit; a consumer slower than the loader never sees its batch overwritten
 * (its stream's work before the release point reads the batch intact);
 * destroy while copies are in flight returns and leaks nothing. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rf_config.h"
#include "testutil.h"
#if RF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

/* 1 when a CUDA device is usable; else why not in why[]. */
static int have_device(char *why, size_t len)
{
#if RF_HAVE_CUDA
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		snprintf(why, len, "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return 0;
	}
	return 1;
#else
	snprintf(why, len, "CUDA support is not built in");
	return 0;
#endif
}

#define NEED_DEVICE()                                  \
	char why_[256];                                \
	if (!have_device(why_, sizeof(why_)))          \
		cr_skip_test("%s", why_)

static char *dir;
static void setup(void) { dir = tu_tree("gpu", 3, 20); }
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

Test(gpu, asking_without_a_device_is_refused, .init = setup, .fini = teardown)
{
	char why[256];
	if (have_device(why, sizeof(why)))
		cr_skip_test("a CUDA device is present: refusal is not what happens here");
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.device = 0;
	rf_loader *l = NULL;
	char err[512];
	int r = rf_loader_create(&l, &cfg, err, sizeof(err));
	cr_assert(r == -ENODEV || r == -ENOTSUP, "got %d: %s", r, err);
	cr_assert_null(l);
	cr_assert(strstr(err, "device = 0"), "the message names the setting: %s", err);
	/* device_convert without a device, or to uint8, is a config error */
	cfg.device = -1;
	cfg.device_convert = 1;
	cfg.dtype = RF_DTYPE_FLOAT16;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "device_convert"), "%s", err);
	tu_assert_no_leaks();
}

#if RF_HAVE_CUDA
/* Every batch's bytes, host data (device = -1) or device data read back. */
static uint8_t *collect(rf_config *cfg, size_t *len, int from_device)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	size_t cap = 1 << 20, n = 0;
	uint8_t *all = malloc(cap);
	rf_batch *b;
	int r;
	while ((r = rf_loader_next(l, &b)) == 0) {
		size_t k = b->count * (from_device ? b->device_sample_bytes : b->sample_bytes);
		while (n + k > cap)
			all = realloc(all, cap *= 2);
		if (from_device) {
			cr_assert_eq(rf_batch_wait(b, NULL), 0);
			cr_assert_eq(cudaMemcpy(all + n, b->device_data, k, cudaMemcpyDeviceToHost), cudaSuccess);
		} else {
			memcpy(all + n, b->data, k);
		}
		n += k;
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	rf_loader_destroy(l);
	*len = n;
	return all;
}
#endif

Test(gpu, device_batches_equal_host_batches, .init = setup, .fini = teardown)
{
	NEED_DEVICE();
#if RF_HAVE_CUDA
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 2;
	size_t n1, n2;
	uint8_t *host = collect(&cfg, &n1, 0);
	cfg.device = 0;
	uint8_t *dev = collect(&cfg, &n2, 1);
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(host, dev, n1), 0);
	free(host);
	free(dev);
#endif
}

/* Token rows (cfg.seq_len) through the transfer stream: the device rows
 * equal the host rows, as stored and widened. */
Test(gpu, token_rows_on_the_device_equal_host_rows)
{
	NEED_DEVICE();
#if RF_HAVE_CUDA
	char *tok = tu_tmpdir("gputok");
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "python3 -c \"import struct\n"
		 "for i, n in enumerate([40000, 9000]):\n"
		 "    h = [0] * 256; h[0], h[1], h[2] = 20240520, 1, n\n"
		 "    open('%s/train_%%06d.bin' %% i, 'wb').write(struct.pack('<256i', *h) + "
		 "struct.pack('<%%dH' %% n, *[(j * 31 + i) %% 50257 for j in range(n)]))\"", tok);
	int r = system(cmd);
	cr_assert_eq(r, 0, "%s", cmd);
	const rf_dtype types[] = { RF_DTYPE_UINT16, RF_DTYPE_INT32 };
	for (int t = 0; t < 2; t++) {
		rf_config cfg;
		tu_config(&cfg, tok);
		cfg.seq_len = 1024;
		cfg.token_dtype = types[t];
		cfg.epochs = 2;
		size_t n1, n2;
		uint8_t *host = collect(&cfg, &n1, 0);
		cfg.device = 0;
		uint8_t *dev = collect(&cfg, &n2, 1);
		cr_assert_eq(n1, n2);
		cr_assert_gt(n1, 0);
		cr_assert_eq(memcmp(host, dev, n1), 0);
		free(host);
		free(dev);
	}
	tu_rmrf(tok);
	free(tok);
#endif
}

Test(gpu, converted_floats_equal_host_floats, .init = setup, .fini = teardown)
{
	NEED_DEVICE();
#if RF_HAVE_CUDA
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	float mean[3] = { 0.485f, 0.456f, 0.406f }, sd[3] = { 0.229f, 0.224f, 0.225f };
	memcpy(cfg.mean, mean, sizeof(mean));
	memcpy(cfg.std, sd, sizeof(sd));
	rf_dtype types[2] = { RF_DTYPE_FLOAT16, RF_DTYPE_FLOAT32 };
	for (int t = 0; t < 2; t++)
		for (int layout = 0; layout < 2; layout++) {
			cfg.dtype = types[t];
			cfg.layout = (rf_layout)layout;
			cfg.device = -1;
			cfg.device_convert = 0;
			size_t n1, n2;
			uint8_t *host = collect(&cfg, &n1, 0);
			cfg.device = 0;
			cfg.device_convert = 1;
			uint8_t *dev = collect(&cfg, &n2, 1);
			cr_assert_eq(n1, n2);
			cr_assert_eq(memcmp(host, dev, n1), 0, "dtype %d layout %d", types[t], layout);
			free(host);
			free(dev);
		}
#endif
}

#if RF_HAVE_CUDA
static void CUDART_CB slow_step(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 30 * 1000 * 1000 }; /* a 30 ms training step */
	nanosleep(&ts, NULL);
}
#endif

Test(gpu, slow_consumer_never_sees_its_batch_overwritten, .init = setup, .fini = teardown)
{
	NEED_DEVICE();
#if RF_HAVE_CUDA
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 3;
	cfg.prefetch = 2;
	size_t n1;
	uint8_t *ref = collect(&cfg, &n1, 0);
	cfg.device = 0;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	cudaStream_t s;
	cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
	uint8_t *snap;
	cr_assert_eq(cudaMallocHost((void **)&snap, n1), cudaSuccess);
	size_t off = 0;
	rf_batch *b;
	while (rf_loader_next(l, &b) == 0) {
		size_t k = b->count * b->device_sample_bytes;
		/* on the consumer's stream: wait for the batch, a slow step, then
		 * read the batch: it must still be this batch */
		cr_assert_eq(rf_batch_wait(b, s), 0);
		cr_assert_eq(cudaLaunchHostFunc(s, slow_step, NULL), cudaSuccess);
		cr_assert_eq(cudaMemcpyAsync(snap + off, b->device_data, k, cudaMemcpyDeviceToHost, s),
			     cudaSuccess);
		off += k;
		rf_batch_release_on(l, b, s); /* the host goes on: no synchronization */
	}
	cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
	cr_assert_eq(off, n1);
	cr_assert_eq(memcmp(snap, ref, n1), 0, "a batch was overwritten before its release point");
	rf_loader_destroy(l);
	cudaFreeHost(snap);
	cudaStreamDestroy(s);
	free(ref);
#endif
}

Test(gpu, destroy_with_copies_in_flight, .init = setup, .fini = teardown)
{
	NEED_DEVICE();
	for (int round = 0; round < 10; round++) {
		rf_config cfg;
		tu_config(&cfg, dir);
		cfg.device = 0;
		cfg.epochs = 0;
		cfg.prefetch = 6;
		tu_take_then_destroy(&cfg, round % 3);
	}
	tu_assert_no_leaks();
}
