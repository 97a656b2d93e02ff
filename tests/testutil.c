/* testutil.c - see testutil.h. */
#define _GNU_SOURCE
#include "testutil.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/synth.h"

#include <jpeglib.h>
#include <turbojpeg.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

void tu_assert_no_leaks(void)
{
#if defined(__SANITIZE_ADDRESS__)
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "LeakSanitizer found leaks (see above)");
#endif
}

char *tu_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *p;
	cr_assert(asprintf(&p, "%s/rf-test-%s-XXXXXX", base && *base ? base : "/tmp", tag) > 0);
	cr_assert(mkdtemp(p), "mkdtemp %s: %s", p, strerror(errno));
	return p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void tu_rmrf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tu_mkdirs(const char *dir, const char *rel)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	for (char *s = p + strlen(dir) + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	mkdir(p, 0755);
}

void tu_write(const char *dir, const char *rel, const void *data, size_t len)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", rel);
	char *slash = strrchr(p, '/');
	if (slash) {
		*slash = '\0';
		tu_mkdirs(dir, p);
	}
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "wb");
	cr_assert(f, "fopen %s: %s", p, strerror(errno));
	cr_assert(fwrite(data, 1, len, f) == len || len == 0);
	fclose(f);
}

size_t tu_jpeg(const char *dir, const char *rel, int w, int h, uint64_t seed)
{
	uint8_t *j;
	size_t len;
	char err[256];
	cr_assert(rfi_synth_jpeg(w, h, seed, 90, &j, &len, err, sizeof(err)) == 0, "%s", err);
	tu_write(dir, rel, j, len);
	free(j);
	return len;
}

uint8_t *tu_read(const char *dir, const char *rel, size_t *len)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "rb");
	cr_assert(f, "fopen %s", p);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*len ? *len : 1);
	cr_assert(fread(b, 1, *len, f) == *len);
	fclose(f);
	return b;
}

char *tu_tree(const char *tag, int classes, int per_class)
{
	char *dir = tu_tmpdir(tag);
	char rel[256];
	for (int c = 0; c < classes; c++)
		for (int i = 0; i < per_class; i++) {
			uint64_t seed = (uint64_t)c * 1000 + (uint64_t)i + 1;
			int w = 40 + (int)(seed * 37 % 81), h = 40 + (int)(seed * 53 % 81);
			snprintf(rel, sizeof(rel), "c%d/img_%03d.jpg", c, i);
			tu_jpeg(dir, rel, w, h, seed);
		}
	return dir;
}

void tu_config(rf_config *cfg, const char *source)
{
	rf_config_default(cfg);
	cfg->source = source;
	cfg->resize = 48;
	cfg->crop = 40;
	cfg->batch_size = 8;
	cfg->threads = 2;
	cfg->io_depth = 32;
	cfg->read_pool_bytes = 1 << 20;
	cfg->rank = 0;
	cfg->world_size = 1;
}

const char *tu_parquet_python(void)
{
	static int usable = -1;
	const char *py = getenv("RINGFEED_PARQUET_PYTHON");
	py = py && *py ? py : "/root/.cache/ringfeed-parquet-venv/bin/python";
	if (usable < 0) {
		char cmd[4096];
		snprintf(cmd, sizeof(cmd), "'%s' -c 'import pyarrow' 2>/dev/null", py);
		usable = access(py, X_OK) == 0 && system(cmd) == 0;
	}
	if (!usable)
		cr_skip_test("no python with pyarrow at %s (scripts/parquet_venv.sh makes it; "
			     "RINGFEED_PARQUET_PYTHON names another)", py);
	return py;
}

uint64_t tu_fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

size_t tu_take(rf_loader *l, size_t max, tu_batch **out)
{
	size_t n = 0, cap = 16;
	tu_batch *v = malloc(cap * sizeof(*v));
	rf_batch *b;
	int r = 0;
	while (n < max && (r = rf_loader_next(l, &b)) == 0) {
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		tu_batch *t = &v[n++];
		t->index = b->index;
		t->epoch = b->epoch;
		t->count = b->count;
		t->replaced = b->replaced;
		t->data_hash = tu_fnv1a(b->data, (size_t)b->count * b->sample_bytes);
		t->ids = malloc(b->count * sizeof(*t->ids));
		t->labels = malloc(b->count * sizeof(*t->labels));
		memcpy(t->ids, b->ids, b->count * sizeof(*t->ids));
		memcpy(t->labels, b->labels, b->count * sizeof(*t->labels));
		rf_batch_release(l, b);
	}
	cr_assert(r == 0 || r == RF_EOF, "next: %s: %s", rf_strerror(r), rf_loader_error(l));
	*out = v;
	return n;
}

void tu_batches_free(tu_batch *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(b[i].ids);
		free(b[i].labels);
	}
	free(b);
}

void tu_assert_same_batch(const tu_batch *a, const tu_batch *b, const char *what)
{
	cr_assert_eq(a->index, b->index, "%s: batch index %llu vs %llu", what,
		     (unsigned long long)a->index, (unsigned long long)b->index);
	cr_assert_eq(a->epoch, b->epoch, "%s: batch %llu: epoch", what, (unsigned long long)a->index);
	cr_assert_eq(a->count, b->count, "%s: batch %llu: count", what, (unsigned long long)a->index);
	cr_assert_eq(a->replaced, b->replaced, "%s: batch %llu: replaced", what,
		     (unsigned long long)a->index);
	for (uint32_t i = 0; i < a->count; i++) {
		cr_assert_eq(a->ids[i], b->ids[i], "%s: batch %llu place %u: id %llu vs %llu", what,
			     (unsigned long long)a->index, i, (unsigned long long)a->ids[i],
			     (unsigned long long)b->ids[i]);
		cr_assert_eq(a->labels[i], b->labels[i], "%s: batch %llu place %u: label", what,
			     (unsigned long long)a->index, i);
	}
	cr_assert_eq(a->data_hash, b->data_hash, "%s: batch %llu: pixels differ", what,
		     (unsigned long long)a->index);
}

uint64_t *tu_drain_ids(const rf_config *cfg, size_t *n)
{
	rf_loader *l;
	char err[512];
	int r = rf_loader_create(&l, cfg, err, sizeof(err));
	cr_assert_eq(r, 0, "create: %s", err);
	size_t cap = 1024, k = 0;
	uint64_t *ids = malloc(cap * sizeof(*ids));
	rf_batch *b;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			if (k == cap)
				ids = realloc(ids, (cap *= 2) * sizeof(*ids));
			ids[k++] = b->ids[i];
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "next: %s: %s", rf_strerror(r), rf_loader_error(l));
	rf_loader_destroy(l);
	*n = k;
	return ids;
}

static void write_cmyk_plain(const char *dir, const char *rel, const uint8_t *cmyk, int w, int h)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	unsigned char *buf = NULL;
	unsigned long len = 0;
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &buf, &len);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = 4;
	c.in_color_space = JCS_CMYK;
	jpeg_set_defaults(&c);
	jpeg_set_colorspace(&c, JCS_CMYK); /* writes an Adobe marker, transform 0 */
	jpeg_set_quality(&c, 95, TRUE);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = (JSAMPROW)(cmyk + (size_t)c.next_scanline * w * 4);
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	tu_write(dir, rel, buf, len);
	free(buf);
}

size_t tu_jpeg_kind(const char *dir, const char *rel, int w, int h, uint64_t seed, tu_kind kind)
{
	uint8_t *rgb = malloc((size_t)w * h * 3), *px = malloc((size_t)w * h * 4);
	rfi_synth_pixels(rgb, w, h, seed);
	int pf = TJPF_RGB, ss = TJSAMP_420, flags = 0;
	switch (kind) {
	case TU_BASELINE_420: memcpy(px, rgb, (size_t)w * h * 3); break;
	case TU_BASELINE_422: memcpy(px, rgb, (size_t)w * h * 3); ss = TJSAMP_422; break;
	case TU_BASELINE_444: memcpy(px, rgb, (size_t)w * h * 3); ss = TJSAMP_444; break;
	case TU_PROGRESSIVE_420: memcpy(px, rgb, (size_t)w * h * 3); flags = TJFLAG_PROGRESSIVE; break;
	case TU_GRAY:
		pf = TJPF_GRAY;
		ss = TJSAMP_GRAY;
		for (size_t i = 0; i < (size_t)w * h; i++)
			px[i] = (uint8_t)((rgb[3 * i] * 77 + rgb[3 * i + 1] * 150 + rgb[3 * i + 2] * 29) >> 8);
		break;
	case TU_YCCK:
	case TU_CMYK:
		pf = TJPF_CMYK;
		ss = TJSAMP_444;
		for (size_t i = 0; i < (size_t)w * h; i++) {
			px[4 * i] = rgb[3 * i];
			px[4 * i + 1] = rgb[3 * i + 1];
			px[4 * i + 2] = rgb[3 * i + 2];
			px[4 * i + 3] = 255;
		}
		break;
	}
	size_t out_len;
	if (kind == TU_CMYK) {
		write_cmyk_plain(dir, rel, px, w, h);
		free(tu_read(dir, rel, &out_len));
	} else {
		tjhandle tj = tjInitCompress();
		unsigned char *jpeg = NULL;
		unsigned long len = 0;
		cr_assert_eq(tjCompress2(tj, px, w, 0, h, pf, &jpeg, &len, ss, 95, flags), 0, "%s",
			     tjGetErrorStr2(tj));
		tu_write(dir, rel, jpeg, len);
		tjFree(jpeg);
		tjDestroy(tj);
		out_len = len;
	}
	free(rgb);
	free(px);
	return out_len;
}

uint8_t *tu_drain_bytes(const rf_config *cfg, size_t *len, rf_stats *st)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "create: %s", err);
	size_t cap = 1 << 20, n = 0;
	uint8_t *all = malloc(cap);
	rf_batch *b;
	int r;
	while ((r = rf_loader_next(l, &b)) == 0) {
		size_t k = b->count * b->sample_bytes;
		while (n + k > cap)
			all = realloc(all, cap *= 2);
		memcpy(all + n, b->data, k);
		n += k;
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "next: %s: %s", rf_strerror(r), rf_loader_error(l));
	if (st)
		rf_loader_stats(l, st);
	rf_loader_destroy(l);
	*len = n;
	return all;
}

void tu_take_then_destroy(const rf_config *cfg, int batches)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "create: %s", err);
	rf_batch *b;
	for (int i = 0; i < batches; i++) {
		cr_assert_eq(rf_loader_next(l, &b), 0, "next: %s", rf_loader_error(l));
		rf_batch_release(l, b);
	}
	rf_loader_destroy(l);
}

void tu_assert_resumes_exactly(const rf_config *ref_cfg, const rf_config *cfg, const char *what)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, ref_cfg, err, sizeof(err)), 0, "%s", err);
	tu_batch *ref;
	size_t nref = tu_take(l, SIZE_MAX, &ref);
	rf_loader_destroy(l);
	cr_assert_gt(nref, 4, "%s: too few batches to cut", what);
	const size_t cuts[] = { 1, nref / 3, nref / 2 + 1, nref - 1 };
	for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		size_t k = cuts[c];
		cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
		tu_batch *b;
		size_t n = tu_take(l, k, &b);
		cr_assert_eq(n, k);
		for (size_t i = 0; i < n; i++)
			tu_assert_same_batch(&ref[i], &b[i], what);
		tu_batches_free(b, n);
		uint8_t state[RF_STATE_MAX_BYTES];
		int len = rf_loader_state_save(l, state, sizeof(state));
		cr_assert_gt(len, 0, "%s", rf_loader_error(l));
		rf_loader_destroy(l);
		rf_config r = *cfg;
		r.resume_state = state;
		r.resume_state_len = (size_t)len;
		r.threads = 1 + (int)(c % 3);
		r.io_depth = 3 + (int)c;
		cr_assert_eq(rf_loader_create(&l, &r, err, sizeof(err)), 0, "%s", err);
		n = tu_take(l, SIZE_MAX, &b);
		cr_assert_eq(n, nref - k, "%s: resumed after %zu: %zu batches, not %zu", what, k, n,
			     nref - k);
		for (size_t i = 0; i < n; i++)
			tu_assert_same_batch(&ref[k + i], &b[i], what);
		tu_batches_free(b, n);
		rf_loader_destroy(l);
	}
	tu_batches_free(ref, nref);
}

void tu_on_bad(void *user, const char *path, int err, const char *reason)
{
	(void)path;
	(void)err;
	tu_bad_log *b = user;
	b->n++;
	snprintf(b->reason, sizeof(b->reason), "%s", reason);
}

int tu_wait_until(int (*cond)(void *ctx), void *ctx, double seconds)
{
	struct timespec t0, now, ms = { 0, 1000 * 1000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (cond(ctx))
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9 > seconds)
			return 0;
		nanosleep(&ms, NULL);
	}
}

void tu_run(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	va_start(ap, fmt);
	cr_assert(vasprintf(&cmd, fmt, ap) > 0);
	va_end(ap);
	int r = system(cmd);
	cr_assert_eq(r, 0, "failed (%d): %s", r, cmd);
	free(cmd);
}

uint8_t *tu_noise(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n ? n : 1);
	cr_assert(p);
	uint64_t x = seed;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (uint8_t)x;
	}
	return p;
}

/* ---- nginx for the remote tests ---------------------------------------- */

extern char **environ;
static pid_t nginx_pid = -1;
static char *nginx_dir;
static int nginx_port;

int tu_free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof(a);
	cr_assert(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		  getsockname(s, (struct sockaddr *)&a, &n) == 0);
	close(s);
	return ntohs(a.sin_port);
}

static int nginx_accepts(void *ctx)
{
	(void)ctx;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)nginx_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(s);
	return ok;
}

static int nginx_start(const char *root, const char *cert, const char *key, const char *extra);

int tu_nginx_start(const char *root)
{
	return nginx_start(root, NULL, NULL, NULL);
}

int tu_nginx_start_with(const char *root, const char *extra)
{
	return nginx_start(root, NULL, NULL, extra);
}

int tu_nginx_start_tls(const char *root, char **ca)
{
	if (access("/usr/bin/openssl", X_OK) != 0)
		return 0;
	char *d = tu_tmpdir("tls");
	/* a CA, and a certificate for 127.0.0.1 (its IP in subjectAltName) signed by it */
	tu_run("cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
	       "-days 2 -subj /CN=ringfeed-test-ca >/dev/null 2>&1 && "
	       "openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr "
	       "-subj /CN=127.0.0.1 >/dev/null 2>&1 && "
	       "printf 'subjectAltName=IP:127.0.0.1\\n' > ext.cnf && "
	       "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
	       "-out srv.pem -days 2 -extfile ext.cnf >/dev/null 2>&1", d);
	char cert[4096], key[4096];
	snprintf(cert, sizeof(cert), "%s/srv.pem", d);
	snprintf(key, sizeof(key), "%s/srv.key", d);
	int ret = asprintf(ca, "%s/ca.pem", d);
	cr_assert(ret > 0);
	int port = nginx_start(root, cert, key, NULL);
	free(d); /* the folder stays until the test's end: the CA file is in it */
	return port;
}

static int nginx_start(const char *root, const char *cert, const char *key, const char *extra)
{
	static const char *const where[] = { "/usr/sbin/nginx", "/usr/bin/nginx",
					     "/usr/local/sbin/nginx" };
	const char *bin = NULL;
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]) && !bin; i++)
		if (access(where[i], X_OK) == 0)
			bin = where[i];
	if (!bin)
		return 0;
	nginx_dir = tu_tmpdir("nginx");
	tu_mkdirs(nginx_dir, "tmp");
	nginx_port = tu_free_port();
	const char *d = nginx_dir;
	char conf[3072];
	int n = snprintf(conf, sizeof(conf),
		"daemon off; master_process off; worker_processes 1;\n"
		"pid %s/nginx.pid; error_log %s/error.log;\n"
		"events { worker_connections 4096; }\n"
		"http { log_format ranges '$status $http_range $body_bytes_sent $uri';\n"
		"  access_log %s/access.log ranges; client_body_temp_path %s/tmp; proxy_temp_path %s/tmp;\n"
		"  fastcgi_temp_path %s/tmp; uwsgi_temp_path %s/tmp; scgi_temp_path %s/tmp;\n"
		"  keepalive_requests 1000000;\n"
		"  server { listen 127.0.0.1:%d%s; root %s;%s%s%s%s%s %s } }\n",
		d, d, d, d, d, d, d, d, nginx_port, cert ? " ssl" : "", root,
		cert ? " ssl_certificate " : "", cert ? cert : "", cert ? "; ssl_certificate_key " : "",
		key ? key : "", cert ? ";" : "", extra ? extra : "");
	tu_write(nginx_dir, "nginx.conf", conf, (size_t)n);
	char confpath[4096];
	snprintf(confpath, sizeof(confpath), "%s/nginx.conf", nginx_dir);
	char *argv[] = { (char *)bin, "-p", nginx_dir, "-c", confpath, NULL };
	nginx_pid = fork();
	cr_assert(nginx_pid >= 0);
	if (nginx_pid == 0) {
		/* it ends with the test, whatever ends the test (a crash, a
		 * timeout's kill): a server never outlives its test */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1); /* the test is gone already */
		execve(bin, argv, environ);
		_exit(127);
	}
	cr_assert(tu_wait_until(nginx_accepts, NULL, 30), "nginx did not listen on port %d",
		  nginx_port);
	return nginx_port;
}

uint64_t tu_nginx_ranges(uint64_t *bytes)
{
	uint64_t n = 0, sum = 0;
	char path[4200], line[512];
	snprintf(path, sizeof(path), "%s/access.log", nginx_dir);
	FILE *f = fopen(path, "r");
	cr_assert(f, "no access log of the test's nginx");
	while (fgets(line, sizeof(line), f)) {
		unsigned status;
		char range[256];
		unsigned long long sent;
		if (sscanf(line, "%u %255s %llu", &status, range, &sent) != 3)
			continue;
		/* a whole object (an index object) or a one-byte probe (size, ETag) */
		if (!strcmp(range, "-") || !strcmp(range, "bytes=0-0"))
			continue;
		n++;
		sum += sent;
	}
	fclose(f);
	if (bytes)
		*bytes = sum;
	return n;
}

void tu_nginx_stop(void)
{
	if (nginx_pid > 0) {
		kill(nginx_pid, SIGTERM);
		waitpid(nginx_pid, NULL, 0);
		nginx_pid = -1;
	}
	if (nginx_dir) {
		tu_rmrf(nginx_dir);
		free(nginx_dir);
		nginx_dir = NULL;
	}
}

int tu_fault_start(tu_fault *s, const char *root, const char *const *args)
{
	*s = (tu_fault){ .pid = -1, .out = -1 };
	if (access("/usr/bin/python3", X_OK) != 0)
		return 0;
	const char *argv[48] = { "/usr/bin/python3", TU_FAULT_SERVER, root, "--lifetime", "300" };
	int n = 5;
	for (; args && *args; args++) {
		cr_assert(n < 46, "too many fault_server.py arguments");
		argv[n++] = *args;
	}
	argv[n] = NULL;
	int fds[2];
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	s->pid = fork();
	cr_assert(s->pid >= 0);
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives its test */
		if (getppid() == 1)
			_exit(1);
		dup2(fds[1], 1);
		execve(argv[0], (char **)argv, environ);
		_exit(127);
	}
	close(fds[1]);
	s->out = fds[0];
	/* "port N", the first line it prints once it listens (it exits, and the
	 * read ends, if it cannot start) */
	char line[64];
	size_t k = 0;
	while (k + 1 < sizeof(line)) {
		ssize_t r = read(s->out, line + k, 1);
		if (r <= 0 || line[k] == '\n')
			break;
		k++;
	}
	line[k] = '\0';
	cr_assert(sscanf(line, "port %d", &s->port) == 1, "fault_server.py did not start: '%s'",
		  line);
	return s->port;
}

void tu_fault_stop(tu_fault *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, NULL, 0);
	}
	if (s->out >= 0)
		close(s->out);
	*s = (tu_fault){ .pid = -1, .out = -1 };
}

int tu_fault_server_start(tu_fault *s, const char *root, const char *flags)
{
	/* the random faults off, then flags split at spaces (no quoting) */
	char copy[1024];
	const char *args[40] = { "--p503", "0", "--preset", "0", "--pshort", "0" };
	int n = 6;
	snprintf(copy, sizeof(copy), "%s", flags ? flags : "");
	for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		cr_assert(n < 39, "too many fault_server.py arguments");
		args[n++] = t;
	}
	args[n] = NULL;
	return tu_fault_start(s, root, args);
}

void tu_s3_env(int port, const char *token)
{
	char endpoint[64];
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", port);
	setenv("AWS_ENDPOINT_URL", endpoint, 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret", 1);
	setenv("AWS_REGION", "us-east-1", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_PROFILE");
	if (token)
		setenv("AWS_SESSION_TOKEN", token, 1);
	else
		unsetenv("AWS_SESSION_TOKEN");
}
