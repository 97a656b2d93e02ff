/* resample_x86.c - the two-tap resampling kernels in SSE2 / SSSE3 (see
 * resample.h for what each computes). They give the same bytes as the plain
 * C kernels in resample.c, which tests check: the same integer arithmetic,
 * (a * w0 + b * w1 + 2^13) >> 14 on 16-bit lanes, done by pmaddwd.
 *
 * Why these two: the resampler was 20% of the compute threads' time, and
 * perf put 60% of it in the horizontal two-tap gather (six byte loads, six
 * multiplies per pixel, scalar) and 30% in the vertical blend (which GCC
 * vectorizes with SSE2, but through 32-bit multiplies it has to emulate).
 *
 * SSE2 is part of x86-64, so the vertical kernel needs no check; the
 * horizontal one needs SSSE3 (pshufb) and is chosen at run time. */
#include "transform/resample.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <emmintrin.h>
#include <string.h>
#include <tmmintrin.h>

#define ROUND (1 << 13)

/* mid[i] = (a[i] * w0 + b[i] * w1 + 2^13) >> 14 for i < n. */
static void vpass2_sse2(const uint8_t *a, const uint8_t *b, int32_t w0, int32_t w1, uint8_t *mid,
			int n)
{
	const __m128i w = _mm_set1_epi32((int32_t)((uint32_t)w0 | ((uint32_t)w1 << 16)));
	const __m128i round = _mm_set1_epi32(ROUND), zero = _mm_setzero_si128();
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i va = _mm_loadu_si128((const __m128i *)(a + i));
		__m128i vb = _mm_loadu_si128((const __m128i *)(b + i));
		__m128i lo = _mm_unpacklo_epi8(va, vb), hi = _mm_unpackhi_epi8(va, vb); /* a0 b0 a1 b1 .. */
		__m128i s0 = _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), w);
		__m128i s1 = _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), w);
		__m128i s2 = _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), w);
		__m128i s3 = _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), w);
		s0 = _mm_srai_epi32(_mm_add_epi32(s0, round), 14);
		s1 = _mm_srai_epi32(_mm_add_epi32(s1, round), 14);
		s2 = _mm_srai_epi32(_mm_add_epi32(s2, round), 14);
		s3 = _mm_srai_epi32(_mm_add_epi32(s3, round), 14);
		__m128i out = _mm_packus_epi16(_mm_packs_epi32(s0, s1), _mm_packs_epi32(s2, s3));
		_mm_storeu_si128((__m128i *)(mid + i), out);
	}
	for (; i < n; i++)
		mid[i] = (uint8_t)((a[i] * w0 + b[i] * w1 + ROUND) >> 14);
}

/* One output pixel: the 8 bytes at p (RGB of the two taps and 2 more),
 * arranged as 16-bit pairs (R0 R1, G0 G1, B0 B1, 0 0) and multiplied-added
 * with w01 = (w0 w1) x 4: the three channel sums and a zero. */
__attribute__((target("ssse3"))) static inline __m128i hpixel(const uint8_t *p, const int16_t *w01,
							     __m128i pairs)
{
	__m128i v = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)p), pairs);
	__m128i s = _mm_madd_epi16(v, _mm_loadu_si128((const __m128i *)w01));
	return _mm_srai_epi32(_mm_add_epi32(s, _mm_set1_epi32(ROUND)), 14);
}

/* row[3x + c] = (m[off[x] + c] * w0 + m[off[x] + 3 + c] * w1 + 2^13) >> 14,
 * with (w0, w1) = wv[8x], wv[8x + 1]. Reads up to 2 bytes past the last tap
 * (resample.h: RF_MID_SLACK); writes exactly 3 * C bytes. */
__attribute__((target("ssse3"))) static void hpass2_ssse3(const uint8_t *m, const int32_t *off,
							   const int16_t *wv, uint8_t *row, int C)
{
	const __m128i pairs = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
	/* RGB0 RGB0 RGB0 RGB0 -> RGBRGBRGBRGB */
	const __m128i compact = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
	int x = 0;
	for (; x + 4 <= C; x += 4) {
		__m128i p0 = hpixel(m + off[x], wv + 8 * x, pairs);
		__m128i p1 = hpixel(m + off[x + 1], wv + 8 * (x + 1), pairs);
		__m128i p2 = hpixel(m + off[x + 2], wv + 8 * (x + 2), pairs);
		__m128i p3 = hpixel(m + off[x + 3], wv + 8 * (x + 3), pairs);
		__m128i rgb = _mm_packus_epi16(_mm_packs_epi32(p0, p1), _mm_packs_epi32(p2, p3));
		rgb = _mm_shuffle_epi8(rgb, compact);
		_mm_storel_epi64((__m128i *)(row + 3 * x), rgb);
		uint32_t last = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(rgb, 8));
		memcpy(row + 3 * x + 8, &last, 4);
	}
	for (; x < C; x++) {
		const uint8_t *p = m + off[x];
		int32_t w0 = wv[8 * x], w1 = wv[8 * x + 1];
		for (int c = 0; c < 3; c++)
			row[3 * x + c] = (uint8_t)((p[c] * w0 + p[3 + c] * w1 + ROUND) >> 14);
	}
}

void rf_resample_kernels_x86(rf_resampler *r)
{
	r->vpass2 = vpass2_sse2;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("ssse3"))
		r->hpass2 = hpass2_ssse3;
}

#else

void rf_resample_kernels_x86(rf_resampler *r)
{
	(void)r; /* not x86-64: the plain C kernels stay */
}

#endif
