/* resample_x86.c - the resampling kernels in SSE2, SSSE3 and AVX2 (see
 * resample.h for what each computes). They give the same bytes as the plain
 * C kernels in resample.c, which tests check: the same integer arithmetic,
 * sums of pixel x weight rounded as (sum + 2^13) >> 14, two taps at a time
 * by pmaddwd on 16-bit lanes (weights <= 2^14 and bytes fit; sums stay
 * under 2^22).
 *
 * Why: the resampler was 20% of the compute threads' time, and perf put 60%
 * of it in the horizontal gather (six byte loads and six multiplies per
 * pixel, scalar) and 30% in the vertical blend (which GCC vectorizes with
 * SSE2, but through 32-bit multiplies it has to emulate). With these, the
 * transform went from 0.142 to 0.040 ms per 224 x 224 image.
 *
 * SSE2 is part of x86-64, so the SSE2 vertical kernel needs no check; its
 * AVX2 twin (32 columns a step), the horizontal kernel and the split of a
 * row into planes for CHW output (SSSE3, for pshufb) are chosen at run
 * time, by rfi_resample_kernels_x86. */
#include "transform/resample.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <cpuid.h>
#include <emmintrin.h>
#include <immintrin.h>
#include <string.h>
#include <tmmintrin.h>

#define ROUND (1 << 13)
/* Kernel bodies are inlined into per-tap-count copies; the ISA a function
 * needs beyond SSE2 is named on it (and checked before it is chosen). */
#define INLINE static inline __attribute__((always_inline))
#define SSSE3 __attribute__((target("ssse3")))
#define AVX2 __attribute__((target("avx2")))

/* Adds rows a and b (16 bytes each) times the weight pair w = (wa wb) x 4 to
 * the sums of their 16 columns: interleaved to (a0 b0 a1 b1 ..) and widened
 * to 16 bits, so one pmaddwd gives a_i * wa + b_i * wb for four columns. */
INLINE void vblend(__m128i va, __m128i vb, __m128i w, __m128i s[4])
{
	const __m128i zero = _mm_setzero_si128();
	__m128i lo = _mm_unpacklo_epi8(va, vb), hi = _mm_unpackhi_epi8(va, vb);
	s[0] = _mm_add_epi32(s[0], _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), w));
	s[1] = _mm_add_epi32(s[1], _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), w));
	s[2] = _mm_add_epi32(s[2], _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), w));
	s[3] = _mm_add_epi32(s[3], _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), w));
}

static inline __m128i wpair(int32_t w0, int32_t w1)
{
	return _mm_set1_epi32((int32_t)((uint32_t)(uint16_t)w0 | ((uint32_t)(uint16_t)w1 << 16)));
}

INLINE void vpass_body(const uint8_t *in, size_t stride, const int16_t *w, int taps, uint8_t *mid,
		       int n)
{
	const __m128i round = _mm_set1_epi32(ROUND);
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i s[4] = { round, round, round, round };
		const uint8_t *p = in + i;
		int k = 0;
		for (; k + 2 <= taps; k += 2, p += 2 * stride)
			vblend(_mm_loadu_si128((const __m128i *)p),
			       _mm_loadu_si128((const __m128i *)(p + stride)), wpair(w[k], w[k + 1]), s);
		if (k < taps) /* an odd row out, paired with zeros (the row after may not exist) */
			vblend(_mm_loadu_si128((const __m128i *)p), _mm_setzero_si128(), wpair(w[k], 0), s);
		for (int j = 0; j < 4; j++)
			s[j] = _mm_srai_epi32(s[j], 14);
		__m128i out = _mm_packus_epi16(_mm_packs_epi32(s[0], s[1]), _mm_packs_epi32(s[2], s[3]));
		_mm_storeu_si128((__m128i *)(mid + i), out);
	}
	if (i < n)
		rfi_vpass_c(in + i, stride, w, taps, mid + i, n - i);
}

/* The common tap counts get their own copies, the loop over taps unrolled
 * away by the compiler: 2 (enlarging: bilinear), 3 and 4 (shrinking by 1x to
 * 2x, antialiased; scaled decode leaves most shrinks in that range). */
static void vpass_sse2(const uint8_t *in, size_t stride, const int16_t *w, int taps, uint8_t *mid,
		       int n)
{
	if (taps == 2)
		vpass_body(in, stride, w, 2, mid, n);
	else if (taps == 3)
		vpass_body(in, stride, w, 3, mid, n);
	else if (taps == 4)
		vpass_body(in, stride, w, 4, mid, n);
	else
		vpass_body(in, stride, w, taps, mid, n);
}

/* The same 32 columns at a time. unpack and pack both work within each
 * 128-bit lane, so the bytes come back in order without a permute. */
AVX2 INLINE void vblend_avx2(__m256i va, __m256i vb, __m256i w, __m256i s[4])
{
	const __m256i zero = _mm256_setzero_si256();
	__m256i lo = _mm256_unpacklo_epi8(va, vb), hi = _mm256_unpackhi_epi8(va, vb);
	s[0] = _mm256_add_epi32(s[0], _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), w));
	s[1] = _mm256_add_epi32(s[1], _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), w));
	s[2] = _mm256_add_epi32(s[2], _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), w));
	s[3] = _mm256_add_epi32(s[3], _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), w));
}

AVX2 INLINE void vpass_avx2_body(const uint8_t *in, size_t stride, const int16_t *w, int taps,
				 uint8_t *mid, int n)
{
	const __m256i round = _mm256_set1_epi32(ROUND);
	int i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256i s[4] = { round, round, round, round };
		const uint8_t *p = in + i;
		int k = 0;
		for (; k + 2 <= taps; k += 2, p += 2 * stride)
			vblend_avx2(_mm256_loadu_si256((const __m256i *)p),
				    _mm256_loadu_si256((const __m256i *)(p + stride)),
				    _mm256_broadcastsi128_si256(wpair(w[k], w[k + 1])), s);
		if (k < taps)
			vblend_avx2(_mm256_loadu_si256((const __m256i *)p), _mm256_setzero_si256(),
				    _mm256_broadcastsi128_si256(wpair(w[k], 0)), s);
		for (int j = 0; j < 4; j++)
			s[j] = _mm256_srai_epi32(s[j], 14);
		__m256i out = _mm256_packus_epi16(_mm256_packs_epi32(s[0], s[1]),
						  _mm256_packs_epi32(s[2], s[3]));
		_mm256_storeu_si256((__m256i *)(mid + i), out);
	}
	if (i < n)
		vpass_body(in + i, stride, w, taps, mid + i, n - i);
}

AVX2 static void vpass_avx2(const uint8_t *in, size_t stride, const int16_t *w, int taps,
			    uint8_t *mid, int n)
{
	if (taps == 2)
		vpass_avx2_body(in, stride, w, 2, mid, n);
	else if (taps == 3)
		vpass_avx2_body(in, stride, w, 3, mid, n);
	else if (taps == 4)
		vpass_avx2_body(in, stride, w, 4, mid, n);
	else
		vpass_avx2_body(in, stride, w, taps, mid, n);
}

/* One output pixel's sums (R, G, B, 0), not yet shifted: for each pair of
 * taps, the 8 bytes at p (RGB of both taps and 2 more) arranged as 16-bit
 * pairs (R0 R1, G0 G1, B0 B1, 0 0) and multiplied-added with its weights. */
SSSE3 INLINE __m128i hpixel(const uint8_t *p, const int16_t *w, int pairs, __m128i spread)
{
	__m128i s = _mm_set1_epi32(ROUND);
	for (int j = 0; j < pairs; j++, p += 6, w += 8) {
		__m128i v = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)p), spread);
		s = _mm_add_epi32(s, _mm_madd_epi16(v, _mm_loadu_si128((const __m128i *)w)));
	}
	return _mm_srai_epi32(s, 14);
}

/* Four output pixels at a time: sums packed to bytes (RGB0 x 4), compacted
 * to 12 bytes and stored exactly (the slot's row may end right after). */
SSSE3 INLINE void hpass_body(const uint8_t *m, const int32_t *off, const int16_t *wv, int pairs,
			     uint8_t *row, int C)
{
	const __m128i spread = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
	const __m128i compact = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
	size_t step = (size_t)pairs * 8;
	int x = 0;
	for (; x + 4 <= C; x += 4) {
		const int16_t *w = wv + (size_t)x * step;
		__m128i p0 = hpixel(m + off[x], w, pairs, spread);
		__m128i p1 = hpixel(m + off[x + 1], w + step, pairs, spread);
		__m128i p2 = hpixel(m + off[x + 2], w + 2 * step, pairs, spread);
		__m128i p3 = hpixel(m + off[x + 3], w + 3 * step, pairs, spread);
		__m128i rgb = _mm_packus_epi16(_mm_packs_epi32(p0, p1), _mm_packs_epi32(p2, p3));
		rgb = _mm_shuffle_epi8(rgb, compact);
		_mm_storel_epi64((__m128i *)(row + 3 * x), rgb);
		uint32_t last = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(rgb, 8));
		memcpy(row + 3 * x + 8, &last, 4);
	}
	if (x < C)
		rfi_hpass_c(m, off + x, wv + (size_t)x * step, pairs, row + 3 * x, C - x);
}

/* One and two pairs of taps get their own copies, as in vpass_sse2. */
SSSE3 static void hpass_ssse3(const uint8_t *m, const int32_t *off, const int16_t *wv, int pairs,
			      uint8_t *row, int C)
{
	if (pairs == 1)
		hpass_body(m, off, wv, 1, row, C);
	else if (pairs == 2)
		hpass_body(m, off, wv, 2, row, C);
	else
		hpass_body(m, off, wv, pairs, row, C);
}

/* 16 pixels a step: three 16-byte loads, and for each channel three pshufb
 * that move its bytes of each load to their lanes (zero elsewhere) and two
 * ors. The masks: channel c's byte of pixel i sits at 3i + c. */
SSSE3 static void split_ssse3(const uint8_t *rgb, uint8_t *r, uint8_t *g, uint8_t *b, int n)
{
#define Z -128 /* pshufb: a zero lane */
	const __m128i m[3][3] = {
		{ _mm_setr_epi8(0, 3, 6, 9, 12, 15, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
		  _mm_setr_epi8(Z, Z, Z, Z, Z, Z, 2, 5, 8, 11, 14, Z, Z, Z, Z, Z),
		  _mm_setr_epi8(Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, 1, 4, 7, 10, 13) },
		{ _mm_setr_epi8(1, 4, 7, 10, 13, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
		  _mm_setr_epi8(Z, Z, Z, Z, Z, 0, 3, 6, 9, 12, 15, Z, Z, Z, Z, Z),
		  _mm_setr_epi8(Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, 2, 5, 8, 11, 14) },
		{ _mm_setr_epi8(2, 5, 8, 11, 14, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
		  _mm_setr_epi8(Z, Z, Z, Z, Z, 1, 4, 7, 10, 13, Z, Z, Z, Z, Z, Z),
		  _mm_setr_epi8(Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, 0, 3, 6, 9, 12, 15) },
	};
#undef Z
	uint8_t *out[3] = { r, g, b };
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		const uint8_t *p = rgb + 3 * i;
		__m128i in[3] = { _mm_loadu_si128((const __m128i *)p),
				  _mm_loadu_si128((const __m128i *)(p + 16)),
				  _mm_loadu_si128((const __m128i *)(p + 32)) };
		for (int c = 0; c < 3; c++) {
			__m128i v = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(in[0], m[c][0]),
							      _mm_shuffle_epi8(in[1], m[c][1])),
						 _mm_shuffle_epi8(in[2], m[c][2]));
			_mm_storeu_si128((__m128i *)(out[c] + i), v);
		}
	}
	rfi_split_c(rgb + 3 * i, r + i, g + i, b + i, n - i);
}

/* Normalization 8 values a step: bytes widened to floats, then the tables'
 * own fmaf(v, scale, shift) (one rounding, as fmaf), and for half the
 * conversion with round to nearest even, to_half's rounding (F16C). */
#define FMA_F16C __attribute__((target("avx2,fma,f16c")))

FMA_F16C static inline __m256 norm8(const uint8_t *v, __m256 scale, __m256 shift)
{
	__m128i b = _mm_loadl_epi64((const __m128i *)v);
	return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), scale, shift);
}

FMA_F16C static void norm32_fma(const uint8_t *v, int n, const rf_output *o, int c, float *out)
{
	__m256 scale = _mm256_set1_ps(o->scale[c]), shift = _mm256_set1_ps(o->shift[c]);
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, norm8(v + i, scale, shift));
	rfi_norm32_c(v + i, n - i, o, c, out + i);
}

FMA_F16C static void norm16_f16c(const uint8_t *v, int n, const rf_output *o, int c,
				 uint16_t *out)
{
	__m256 scale = _mm256_set1_ps(o->scale[c]), shift = _mm256_set1_ps(o->shift[c]);
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(out + i),
				 _mm256_cvtps_ph(norm8(v + i, scale, shift), _MM_FROUND_TO_NEAREST_INT));
	rfi_norm16_c(v + i, n - i, o, c, out + i);
}

/* FMA and F16C, from CPUID leaf 1 (clang 14's __builtin_cpu_supports knows
 * no "f16c"); AVX's OS support is implied by the AVX2 check beside it. */
static int fma_f16c(void)
{
	unsigned a, b, c, d;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_FMA) && (c & bit_F16C);
}

void rfi_resample_kernels_x86(rf_resampler *r, rf_simd upto)
{
	__builtin_cpu_init();
	if (upto >= RF_SIMD_SSE2)
		r->vpass = vpass_sse2;
	if (upto >= RF_SIMD_SSSE3 && __builtin_cpu_supports("ssse3")) {
		r->hpass = hpass_ssse3;
		r->split = split_ssse3;
	}
	if (upto >= RF_SIMD_AVX2 && __builtin_cpu_supports("avx2"))
		r->vpass = vpass_avx2;
	if (upto >= RF_SIMD_AVX2 && __builtin_cpu_supports("avx2") && fma_f16c()) {
		r->norm32 = norm32_fma;
		r->norm16 = norm16_f16c;
	}
}

#else

void rfi_resample_kernels_x86(rf_resampler *r, rf_simd upto)
{
	(void)r; /* not x86-64: the plain C kernels stay */
	(void)upto;
}

#endif
