/* make_seeds.c - writes the seed corpora of the fuzz targets into
 * OUT/{state,cache,manifest,credentials,jpeg,png,webp,tar,tokens,http,
 * listing}/: real saved states, index caches of a folder tree and of a
 * weighted manifest, manifests, credential sources' answers, JPEGs of
 * several sizes and qualities, PNGs of each colour type and bit depth
 * (interlaced too) and WebP files (lossy, lossless, alpha) behind the image
 * targets' 4 setting bytes, and small tar shards (ustar, GNU, pax) behind
 * the tar target's setting byte, and responses to ranged GETs behind the
 * http target's 17, and S3 listing pages (NUL between pages).
 * Usage: make_seeds OUT (scripts/fuzz.sh runs it). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "cli/synth.h"
#include "source/token_shard.h"
#include "rf_config.h"
#include "ringfeed.h"
#if RF_HAVE_PNG
#include <spng.h>
#endif
#if RF_HAVE_WEBP
#include <webp/encode.h>
#endif

static const char *out;

static void put(const char *kind, const char *name, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", out, kind);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", out, kind, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* An image seed behind the image targets' 4 setting bytes, in 3 variants. */
static void put_image(const char *kind, const char *name, const uint8_t *img, size_t n, size_t i)
{
	uint8_t *s = malloc(n + 4);
	if (!s)
		exit(1);
	memcpy(s + 4, img, n);
	for (int v = 0; v < 3; v++) {
		s[0] = (uint8_t)(i * 7 + (size_t)v);
		s[1] = (uint8_t)(v * 0x15 + i);
		s[2] = (uint8_t)(v * 5);
		s[3] = (uint8_t)(i * 31);
		char full[64];
		snprintf(full, sizeof(full), "%s_%d", name, v);
		put(kind, full, s, n + 4);
	}
	free(s);
}

/* Pixels for the PNG and WebP seeds: a gradient with some edges, bytes per
 * pixel ch (1-4, or 2x for 16-bit samples: every byte varies). */
static uint8_t *pattern(int w, int h, int bytes_per_pixel)
{
	size_t n = (size_t)w * h * bytes_per_pixel;
	uint8_t *p = malloc(n);
	if (!p)
		exit(1);
	for (size_t k = 0; k < n; k++)
		p[k] = (uint8_t)((k * 7 + (k / (size_t)(w * bytes_per_pixel)) * 13) ^ (k % 61 < 5 ? 0xFF : 0));
	return p;
}

#if RF_HAVE_PNG
/* One PNG (libspng's encoder) of the given colour type, depth, interlace;
 * the pixels as the format packs them (raw). */
static void put_png(const char *name, int w, int h, int type, int depth, int interlace, size_t i)
{
	int ch = type == 0 || type == 3 ? 1 : type == 4 ? 2 : type == 2 ? 3 : 4;
	size_t row = ((size_t)w * ch * depth + 7) / 8;
	uint8_t *px = pattern((int)row, h, 1);
	spng_ctx *c = spng_ctx_new(SPNG_CTX_ENCODER);
	spng_set_option(c, SPNG_ENCODE_TO_BUFFER, 1);
	struct spng_ihdr ihdr = { .width = (uint32_t)w, .height = (uint32_t)h,
				  .bit_depth = (uint8_t)depth, .color_type = (uint8_t)type,
				  .interlace_method = (uint8_t)interlace };
	spng_set_ihdr(c, &ihdr);
	if (type == 3) {
		static struct spng_plte plte;
		plte.n_entries = 1u << depth;
		for (uint32_t e = 0; e < plte.n_entries; e++)
			plte.entries[e] = (struct spng_plte_entry){ (uint8_t)(e * 37), (uint8_t)(e * 91),
								    (uint8_t)(255 - e), 255 };
		spng_set_plte(c, &plte); /* 2^depth entries: every index the pixels hold */
	}
	int err = spng_encode_image(c, px, row * (size_t)h, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
	size_t n = 0;
	void *png = err ? NULL : spng_get_png_buffer(c, &n, &err);
	if (!png) {
		fprintf(stderr, "make_seeds: png %s: %s\n", name, spng_strerror(err));
		exit(1);
	}
	put_image("png", name, png, n, i);
	free(png);
	spng_ctx_free(c);
	free(px);
}
#endif

#if RF_HAVE_WEBP
static void put_webp(const char *name, int w, int h, int alpha, int lossless, size_t i)
{
	int bpp = alpha ? 4 : 3;
	uint8_t *px = pattern(w, h, bpp), *webp = NULL;
	size_t n = lossless ? (alpha ? WebPEncodeLosslessRGBA : WebPEncodeLosslessRGB)(px, w, h, w * bpp, &webp)
			    : (alpha ? WebPEncodeRGBA : WebPEncodeRGB)(px, w, h, w * bpp, 70, &webp);
	if (!n) {
		fprintf(stderr, "make_seeds: webp %s failed\n", name);
		exit(1);
	}
	put_image("webp", name, webp, n, i);
	WebPFree(webp);
	free(px);
}
#endif

/* A tar shard being written, behind the tar target's setting byte. */
static uint8_t tar[1 << 16];
static size_t tar_len;

static void tar_put(const void *p, size_t n)
{
	if (tar_len + n + 1024 > sizeof(tar)) {
		fprintf(stderr, "make_seeds: tar seed too large\n");
		exit(1);
	}
	if (p)
		memcpy(tar + tar_len, p, n);
	else
		memset(tar + tar_len, 0, n);
	tar_len += n;
	if (tar_len % 512 != 1) /* blocks start after the setting byte */
		tar_put(NULL, 512 - (tar_len - 1) % 512);
}

/* One member: a header (ustar or GNU magic; prefix only for ustar) and its
 * data. size is the header's field; base256 writes it as GNU's base-256. */
static void tar_member(const char *name, const char *prefix, char type, const void *data,
		       size_t n, int gnu, int base256)
{
	uint8_t h[512] = { 0 };
	snprintf((char *)h, 100, "%s", name);
	memcpy(h + 100, "0000644\0" "0001750\0" "0001750", 24);
	if (base256) {
		h[124] = 0x80;
		for (int i = 0; i < 8; i++)
			h[135 - i] = (uint8_t)((uint64_t)n >> (8 * i));
	} else {
		snprintf((char *)h + 124, 12, "%011zo", n);
	}
	memcpy(h + 136, "14531066400", 11);
	h[156] = (uint8_t)type;
	memcpy(h + 257, gnu ? "ustar  " : "ustar\0" "00", 8);
	if (prefix)
		snprintf((char *)h + 345, 155, "%s", prefix);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 7, "%06o", sum);
	tar_put(h, 512);
	if (n)
		tar_put(data, n);
}

static void tar_seed(const char *name)
{
	tar_put(NULL, 1024); /* the end: two zero blocks */
	put("tar", name, tar, tar_len);
}

static void put_file(const char *kind, const char *name, const char *from)
{
	FILE *f = fopen(from, "rb");
	if (!f) {
		perror(from);
		exit(1);
	}
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	put(kind, name, buf, n);
}

/* Token shards behind the tokens target's setting byte (bit 0: .bin.zst,
 * bits 1-7: T - 1): a GPT-2 and a Llama-3 .bin of a few hundred tokens,
 * and a .bin.zst of the first in frames of 50 tokens. */
static uint8_t tok[1 << 16];

static void token_seeds(void)
{
	for (int llama = 0; llama < 2; llama++) {
		uint32_t width = llama ? 4 : 2, n = 300;
		int32_t h[256] = { 0 };
		h[0] = llama ? RF_TOKENS_LLAMA3 : RF_TOKENS_GPT2;
		h[1] = llama ? RF_TOKENS_LLAMA3_VERSION : RF_TOKENS_GPT2_VERSION;
		h[2] = (int32_t)n;
		tok[0] = (uint8_t)(15 << 1); /* T = 16 */
		memcpy(tok + 1, h, sizeof(h));
		for (uint32_t j = 0; j < n; j++) {
			uint32_t v = (j * 31 + 7) % 50257;
			memcpy(tok + 1 + 1024 + (size_t)j * width, &v, width);
		}
		put("tokens", llama ? "llama3.bin" : "gpt2.bin", tok, 1 + 1024 + (size_t)n * width);
		if (llama)
			continue;
		/* the same tokens as a .bin.zst, frames of 50 tokens */
		static uint8_t z[1 << 16];
		uint32_t F = 50, nf = (n + F - 1) / F;
		size_t table = 8 * ((size_t)nf + 1);
		uint32_t w[8] = { RF_TOKZ_MAGIC, RF_TOKZ_VERSION, width, RF_TOKENS_GPT2, F, nf, n, 0 };
		memset(z, 0, 1 + 1024 + table);
		z[0] = (uint8_t)(15 << 1) | 1;
		memcpy(z + 1, w, sizeof(w));
		uint64_t off = 1024 + table;
		for (uint32_t k = 0; k <= nf; k++) {
			memcpy(z + 1 + 1024 + 8 * (size_t)k, &off, 8);
			if (k == nf)
				break;
			uint32_t m = k == nf - 1 ? n - k * F : F;
			size_t r = ZSTD_compress(z + 1 + off, sizeof(z) - 1 - off,
						 tok + 1 + 1024 + (size_t)k * F * width, (size_t)m * width, 3);
			if (ZSTD_isError(r)) {
				fprintf(stderr, "make_seeds: zstd: %s\n", ZSTD_getErrorName(r));
				exit(1);
			}
			off += r;
		}
		put("tokens", "gpt2.bin.zst", z, 1 + off);
	}
}

/* Responses to ranged GETs behind the http target's 17 setting bytes
 * (tests/fuzz/fuzz_http.c): honest ones and the lies a proxy or store
 * tells (another range, gzip, another ETag, 416 inside the object, a 200
 * ignoring Range, headers of two minds). */
static void http_seeds(void)
{
	static const struct {
		uint8_t flags;
		uint32_t offset, len, size, body;
		const char *headers;
	} seeds[] = {
		{ 0x07, 512, 512, 4096, 0, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
		  "512-1023/4096\r\nContent-Length: 512\r\nETag: \"5f3a-1000\"\r\n\r\n" },
		{ 0x01, 512, 512, 0, 0, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
		  "0-511/4096\r\nContent-Length: 512\r\n\r\n" },
		{ 0x01, 4000, 512, 0, 0, "HTTP/2 206\r\ncontent-range: bytes 4000-4095/4096\r\n"
		  "content-length: 96\r\n\r\n" },
		{ 0x19, 0, 4096, 0, 0, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
		  "0-4095/4096\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" },
		{ 0x05, 0, 100, 0, 0, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
		  "0-99/*\r\nETag: W/\"other\"\r\n\r\n" },
		{ 0x1b, 0, 8192, 4096, 4096, "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n"
		  "ETag: \"5f3a-1000\"\r\n\r\n" },
		{ 0x11, 0, 100, 0, 0, "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n" },
		{ 0x03, 5000, 10, 4096, 0, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: "
		  "bytes */4096\r\n\r\n" },
		{ 0x01, 100, 10, 0, 0, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: "
		  "bytes */4096\r\n\r\n" },
		{ 0x01, 0, 10, 0, 0, "HTTP/1.1 307 Temporary Redirect\r\nLocation: "
		  "http://127.0.0.1:1/x\r\n\r\nHTTP/1.1 206 Partial Content\r\nContent-Range: "
		  "bytes 0-9/10\r\nContent-Range: bytes 0-9/11\r\n\r\n" },
		{ 0x01, 0, 10, 0, 0, "HTTP/1.1 503 Slow Down\r\nContent-Length: 9\r\n\r\n" },
	};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		uint8_t buf[512];
		size_t n = strlen(seeds[i].headers);
		buf[0] = seeds[i].flags;
		uint32_t v[4] = { seeds[i].offset, seeds[i].len, seeds[i].size, seeds[i].body };
		for (int k = 0; k < 4; k++)
			for (int b = 0; b < 4; b++)
				buf[1 + 4 * k + b] = (uint8_t)(v[k] >> (8 * b));
		memcpy(buf + 17, seeds[i].headers, n);
		char name[32];
		snprintf(name, sizeof(name), "seed%zu", i);
		put("http", name, buf, 17 + n);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds OUT\n");
		return 2;
	}
	out = argv[1];
	mkdir(out, 0755);
	char err[512], data[4096], path[4096], man[4096];
	snprintf(data, sizeof(data), "%s/data", out);
	rf_synth_tree t = { .out = data, .count = 12, .classes = 3, .seed = 7, .quality = 80,
			    .threads = 1 };
	if (rfi_synth_imagefolder(&t, err, sizeof(err))) {
		fprintf(stderr, "make_seeds: %s\n", err);
		return 1;
	}

	/* S3 listing pages, NUL between pages: a listing of two pages, one
	 * page, entities in keys, a page that repeats the token before */
	static const char listing[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>bk</Name>"
		"<Prefix>data/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>t2</NextContinuationToken>"
		"<Contents><Key>data/a.tar</Key><Size>10240</Size></Contents>"
		"<Contents><Key>data/b &amp; c.tar</Key><Size>20480</Size></Contents>"
		"</ListBucketResult>\0"
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<Contents><Key>data/cat/&#x6771;.tar</Key><Size>1</Size></Contents>"
		"</ListBucketResult>";
	put("listing", "two_pages.xml", listing, sizeof(listing) - 1);
	static const char looping[] =
		"<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>x"
		"</NextContinuationToken><Contents><Key>k1</Key><Size>1</Size></Contents>"
		"</ListBucketResult>\0<ListBucketResult><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>x</NextContinuationToken><Contents><Key>k2</Key>"
		"<Size>1</Size></Contents></ListBucketResult>";
	put("listing", "repeated_token.xml", looping, sizeof(looping) - 1);

	/* manifests: plain, weighted, with comments and odd lines */
	const char *mans[] = {
		"class_000/img_00000000.jpg\t0\nclass_001/img_00000001.jpg\t1\n",
		"# weights\nclass_000/img_00000000.jpg\t0\t0.5\nclass_001/img_00000001.jpg\t1\t2\n",
		"\n  \nclass_002/img_00000002.jpg\t7\n# c\nmissing.jpg\t3\n",
		"a\tb\tc.jpg\t1\t1e-310\n",
		/* columns: a caption (escapes) and fields beside the weight */
		"#columns: path label txt\nclass_000/img_00000000.jpg\t0\tcap\\tone\\n\\\\\n"
		"class_001/img_00000001.jpg\t1\t\n",
		"# c\n#columns: label weight path txt json\n2\t0.5\tclass_002/img_00000002.jpg\tx\t{}\n",
	};
	for (size_t i = 0; i < sizeof(mans) / sizeof(mans[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "seed%zu.tsv", i);
		put("manifest", name, mans[i], strlen(mans[i]));
	}

	/* credentials: IMDS's JSON, a container endpoint's, STS's XML and a
	 * credential_process's, behind the kind byte (fuzz_credentials.c) */
	const char *creds[] = {
		"\0{\n  \"Code\" : \"Success\",\n  \"AccessKeyId\" : \"ASIAEXAMPLE\",\n"
		"  \"SecretAccessKey\" : \"s/e+c\\\"ret\",\n  \"Token\" : \"IQoJb3JpZ2lu\",\n"
		"  \"Expiration\" : \"2100-01-01T00:00:00Z\"\n}",
		"\1{\"AccessKeyId\":\"ASIA2\",\"SecretAccessKey\":\"S\",\"Token\":\"T\","
		"\"Expiration\":\"2100-01-01T02:00:00.5+02:00\"}",
		"\2<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
		"<AccessKeyId>ASIA3</AccessKeyId><SecretAccessKey>a&amp;b</SecretAccessKey>"
		"<SessionToken>T&#x41;</SessionToken><Expiration>2100-01-01T00:00:00Z</Expiration>"
		"</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>",
		"\3{\"Version\": 1, \"AccessKeyId\": \"AKIA4\", \"SecretAccessKey\": \"S\", "
		"\"SessionToken\": \"T\", \"Expiration\": \"2099-12-31T19:00:00-05:00\"}\n",
	};
	for (size_t i = 0; i < sizeof(creds) / sizeof(creds[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "seed%zu", i);
		put("credentials", name, creds[i], 1 + strlen(creds[i] + 1));
	}

	/* caches: of the tree (two images with a caption file beside them:
	 * extras), of a weighted manifest, of the tree in raw mode, of a
	 * manifest with a caption column (extras kept in the index) */
	FILE *cap = NULL;
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/class_00%d/img_0000000%d.txt", data, k, k);
		if ((cap = fopen(path, "w"))) {
			fputs(k ? "" : "a caption", cap);
			fclose(cap);
		}
	}
	snprintf(path, sizeof(path), "%s/tree.cache", out);
	if (rf_index_write(data, 0, path, NULL, NULL, NULL, err, sizeof(err)))
		return fprintf(stderr, "make_seeds: %s\n", err), 1;
	put_file("cache", "tree", path);
	snprintf(man, sizeof(man), "%s/w.tsv", data);
	FILE *f = fopen(man, "w");
	fputs(mans[1], f);
	fclose(f);
	if (rf_index_write(man, 0, path, NULL, NULL, NULL, err, sizeof(err)))
		return fprintf(stderr, "make_seeds: %s\n", err), 1;
	put_file("cache", "weighted", path);
	if (rf_index_write(data, 1, path, NULL, NULL, NULL, err, sizeof(err)))
		return fprintf(stderr, "make_seeds: %s\n", err), 1;
	put_file("cache", "raw", path);
	snprintf(man, sizeof(man), "%s/c.tsv", data);
	f = fopen(man, "w");
	fputs(mans[5], f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/tree.cache", out);
	if (rf_index_write(man, 0, path, NULL, NULL, NULL, err, sizeof(err)))
		return fprintf(stderr, "make_seeds: %s\n", err), 1;
	put_file("cache", "columns", path);
	snprintf(man, sizeof(man), "%s/w.tsv", data); /* the weighted one, for the states */
	remove(path);

	/* states: at a few positions of a shuffled and a weighted run */
	for (int kind = 0; kind < 2; kind++) {
		rf_config cfg;
		rf_config_default(&cfg);
		cfg.source = kind ? man : data;
		cfg.batch_size = 2;
		cfg.resize = 32;
		cfg.crop = 24;
		cfg.threads = 1;
		cfg.io_depth = 8;
		cfg.read_pool_bytes = 1 << 20;
		cfg.rank = 0;
		cfg.world_size = 1;
		cfg.epochs = 3;
		if (kind)
			cfg.sampler = RF_SAMPLER_WEIGHTED;
		rf_loader *l;
		if (rf_loader_create(&l, &cfg, err, sizeof(err)))
			return fprintf(stderr, "make_seeds: %s\n", err), 1;
		for (int b = 0; b < 5; b++) {
			rf_batch *bt;
			if (rf_loader_next(l, &bt))
				break;
			rf_batch_release(l, bt);
			uint8_t st[4096];
			int n = rf_loader_state_save(l, st, sizeof(st));
			if (n > 0) {
				char name[32];
				snprintf(name, sizeof(name), "k%d_b%d", kind, b);
				put("state", name, st, (size_t)n);
			}
		}
		rf_loader_destroy(l);
	}
	/* a version-2 state: 2 ranks' state resumed on 1 rank, saved in the rest */
	{
		rf_config cfg;
		rf_config_default(&cfg);
		cfg.source = data;
		cfg.batch_size = 2;
		cfg.resize = 32;
		cfg.crop = 24;
		cfg.threads = 1;
		cfg.read_pool_bytes = 1 << 20;
		cfg.rank = 0;
		cfg.world_size = 2;
		uint8_t st[RF_STATE_MAX_BYTES];
		int n = 0;
		for (int pass = 0; pass < 2; pass++) {
			rf_loader *l;
			if (rf_loader_create(&l, &cfg, err, sizeof(err)))
				return fprintf(stderr, "make_seeds: %s\n", err), 1;
			rf_batch *bt;
			if (rf_loader_next(l, &bt) == 0)
				rf_batch_release(l, bt);
			n = rf_loader_state_save(l, st, sizeof(st));
			rf_loader_destroy(l);
			if (n <= 0)
				return fprintf(stderr, "make_seeds: state: %s\n", rf_strerror(n)), 1;
			cfg.world_size = 1; /* the second pass resumes on one rank */
			cfg.resume_state = st;
			cfg.resume_state_len = (size_t)n;
		}
		put("state", "elastic", st, (size_t)n);
	}

	/* JPEGs: sizes around the MCU, qualities, behind setting bytes */
	int sizes[][2] = { { 1, 1 }, { 8, 8 }, { 17, 9 }, { 64, 48 }, { 33, 200 }, { 250, 70 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *j;
		size_t n;
		if (rfi_synth_jpeg(sizes[i][0], sizes[i][1], i + 1, i % 2 ? 95 : 40, &j, &n, err,
				  sizeof(err)))
			return fprintf(stderr, "make_seeds: %s\n", err), 1;
		char name[32];
		snprintf(name, sizeof(name), "img%zu", i);
		put_image("jpeg", name, j, n, i);
		free(j);
	}
#if RF_HAVE_PNG
	/* PNGs: every colour type and bit depth the format allows, interlaced too */
	static const struct { int type, depth; } kinds[] = {
		{ 0, 1 }, { 0, 2 }, { 0, 4 }, { 0, 8 }, { 0, 16 }, { 2, 8 }, { 2, 16 }, { 3, 1 },
		{ 3, 4 }, { 3, 8 }, { 4, 8 }, { 4, 16 }, { 6, 8 }, { 6, 16 } };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "t%d_d%d", kinds[i].type, kinds[i].depth);
		put_png(name, 13 + (int)i * 5, 9 + (int)i * 3, kinds[i].type, kinds[i].depth, 0, i);
		snprintf(name, sizeof(name), "t%d_d%d_adam7", kinds[i].type, kinds[i].depth);
		put_png(name, 11 + (int)i, 7 + (int)i * 2, kinds[i].type, kinds[i].depth, 1, i);
	}
#endif
#if RF_HAVE_WEBP
	for (int k = 0; k < 4; k++) {
		char name[32];
		snprintf(name, sizeof(name), "%s%s", k & 1 ? "lossless" : "lossy", k & 2 ? "_alpha" : "");
		put_webp(name, 37 + k * 20, 29 + k * 9, k >> 1, k & 1, (size_t)k);
	}
#endif

	/* tar shards: each format, samples with labels, every kind of member */
	const char *pax = "21 path=dir/long.jpg\n10 size=3\n30 mtime=1700000000.123456789\n"
			  "27 comment=padding-to-4096\n";
	for (int v = 0; v < 4; v++) {
		tar_len = 0;
		tar_put((uint8_t[]){ (uint8_t)(v * 5 | (v & 1) << 4) }, 1); /* some mend checksums */
		tar_member("s1.jpg", NULL, '0', "\xff\xd8jpeg", 6, 0, 0);
		tar_member("s1.cls", NULL, '0', "3\n", 2, 0, 0);
		tar_member("s2.jpeg.zst", NULL, '0', "zz", 2, 0, 0);
		tar_member("s2.cls", NULL, '0', " 12 ", 4, 0, 0);
		tar_member("dir/", NULL, '5', NULL, 0, 0, 0);
		if (v == 0) {         /* ustar: a prefix */
			tar_member("x.jpg", "a/very/long/prefix", '0', "px", 2, 0, 0);
		} else if (v == 1) {  /* GNU: long names, base-256 */
			tar_member("././@LongLink", NULL, 'L', "long/name/x.jpg", 16, 1, 0);
			tar_member("long/name/x.", NULL, '0', "gx", 2, 1, 0);
			tar_member("././@LongLink", NULL, 'K', "target", 7, 1, 0);
			tar_member("l.jpg", NULL, '2', NULL, 0, 1, 0);
			tar_member("b.jpg", NULL, '0', "base256", 7, 1, 1);
		} else if (v == 2) {  /* pax: path, size over the header's, globals */
			tar_member("pax_global_header", NULL, 'g', "18 comment=global\n", 18, 0, 0);
			tar_member("././@PaxHeader", NULL, 'x', pax, strlen(pax), 0, 0);
			tar_member("short", NULL, '0', "abc", 3, 0, 0);
		} else {              /* raw members, no label, a bad label */
			tar_member("r.npy", NULL, '0', "npy", 3, 0, 0);
			tar_member("q.jpg", NULL, '0', "q", 1, 0, 0);
			tar_member("q.cls", NULL, '0', "x", 1, 0, 0);
			tar[0] |= 8;
		}
		char name[32];
		snprintf(name, sizeof(name), "shard%d", v);
		tar_seed(name);
	}
	/* what a damaged shard looks like: cut right after a member larger
	 * than the window (the end found by a hop), a zero block between
	 * members, a block of junk where a header was */
	static uint8_t big[2000];
	memset(big, 'b', sizeof(big));
	tar_len = 0;
	tar_put((uint8_t[]){ 1 }, 1); /* windows of 512 */
	tar_member("c.jpg", NULL, '0', big, sizeof(big), 0, 0);
	put("tar", "cut-after-hop", tar, tar_len);
	for (int v = 0; v < 2; v++) {
		tar_len = 0;
		tar_put((uint8_t[]){ 2 }, 1);
		tar_member("d1.jpg", NULL, '0', "d1", 2, 0, 0);
		uint8_t block[512];
		memset(block, v ? 0x5a : 0, sizeof(block));
		tar_put(block, sizeof(block));
		tar_member("d2.jpg", NULL, '0', "d2", 2, 0, 0);
		tar_seed(v ? "junk-block" : "zero-block");
	}
	token_seeds();
	http_seeds();
	return 0;
}
