/* SPDX-License-Identifier: MIT */
#include "fg_hdr.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

void fg_hdr_reset(struct fg_hdr *h)
{
	memset(h, 0, sizeof(*h));
}

void fg_hdr_record(struct fg_hdr *h, uint32_t v, uint64_t n)
{
	if (!n)
		return;
	h->counts[fg_hdr_index(v)] += n;
	if (!h->total || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->total += n;
	h->sum += (double)v * (double)n;
}

void fg_hdr_add_counts(struct fg_hdr *h, const uint64_t *counts)
{
	uint32_t i;

	for (i = 0; i < FG_HDR_LEN; i++) {
		h->counts[i] += counts[i];
		h->total += counts[i];
	}
}

uint64_t fg_hdr_value_from_index(uint32_t i)
{
	int bucket = (int)(i >> FG_HDR_SUB_HALF_MAG) - 1;
	uint64_t sub = (i & (FG_HDR_SUB_HALF - 1)) + FG_HDR_SUB_HALF;

	if (bucket < 0) {
		sub -= FG_HDR_SUB_HALF;
		bucket = 0;
	}
	return sub << bucket;
}

static uint32_t bucket_of(uint64_t v)
{
	uint32_t msb = 0;
	uint64_t x = v | (FG_HDR_SUB_COUNT - 1);

	while (x >>= 1)
		msb++;
	return msb - FG_HDR_SUB_HALF_MAG;
}

uint64_t fg_hdr_highest_equivalent(uint64_t v)
{
	uint32_t b = bucket_of(v);
	uint64_t sub = v >> b;
	uint64_t lowest = sub << b;

	if (sub >= FG_HDR_SUB_COUNT)
		b++;
	return lowest + (1ULL << b) - 1;
}

uint64_t fg_hdr_value_at_percentile(const struct fg_hdr *h, double p)
{
	uint64_t target, run = 0;
	uint32_t i;

	if (!h->total)
		return 0;
	if (p > 100.0)
		p = 100.0;
	target = (uint64_t)(p * (double)h->total / 100.0 + 0.5);
	if (target < 1)
		target = 1;
	for (i = 0; i < FG_HDR_LEN; i++) {
		run += h->counts[i];
		if (run >= target) {
			uint64_t v = fg_hdr_value_from_index(i);
			return p > 0 ? fg_hdr_highest_equivalent(v) : v;
		}
	}
	return 0;
}

/* ZigZag then LEB128, at most 9 bytes (the 9th carries 8 bits). */
size_t fg_zigzag_put(uint8_t *out, int64_t v)
{
	uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 0;

	while (n < 8 && z >= 0x80) {
		out[n++] = (uint8_t)(z | 0x80);
		z >>= 7;
	}
	out[n++] = (uint8_t)z;
	return n;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static char *base64(const uint8_t *in, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*o++ = tab[w >> 18];
		*o++ = tab[(w >> 12) & 63];
		*o++ = tab[(w >> 6) & 63];
		*o++ = tab[w & 63];
	}
	if (i < n) {
		uint32_t w = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
		*o++ = tab[w >> 18];
		*o++ = tab[(w >> 12) & 63];
		*o++ = i + 1 < n ? tab[(w >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = 0;
	return out;
}

#define V2_ENCODING_COOKIE (0x1c849303u | 0x10u)
#define V2_COMPRESSION_COOKIE (0x1c849304u | 0x10u)
#define V2_HEADER_LEN 40

char *fg_hdr_encode(const struct fg_hdr *h)
{
	uint32_t used = 0, i;
	size_t plen = V2_HEADER_LEN;
	uint8_t *raw, *out;
	uLongf clen;
	char *b64 = NULL;
	double ratio = 1.0;
	uint64_t ratio_bits;

	for (i = 0; i < FG_HDR_LEN; i++)
		if (h->counts[i])
			used = i + 1;
	raw = malloc(V2_HEADER_LEN + (size_t)used * 9);
	if (!raw)
		return NULL;
	for (i = 0; i < used;) {
		if (!h->counts[i]) {
			uint32_t z = 0;

			while (i < used && !h->counts[i]) {
				z++;
				i++;
			}
			plen += fg_zigzag_put(raw + plen, -(int64_t)z);
		} else {
			plen += fg_zigzag_put(raw + plen, (int64_t)h->counts[i++]);
		}
	}
	put_be32(raw, V2_ENCODING_COOKIE);
	put_be32(raw + 4, (uint32_t)(plen - V2_HEADER_LEN));
	put_be32(raw + 8, 0); /* normalizing index offset */
	put_be32(raw + 12, FG_HDR_SIGFIGS);
	put_be64(raw + 16, FG_HDR_LOWEST);
	put_be64(raw + 24, FG_HDR_HIGHEST);
	memcpy(&ratio_bits, &ratio, sizeof(ratio_bits));
	put_be64(raw + 32, ratio_bits);

	clen = compressBound(plen);
	out = malloc(8 + clen);
	if (out && compress(out + 8, &clen, raw, plen) == Z_OK) {
		put_be32(out, V2_COMPRESSION_COOKIE);
		put_be32(out + 4, (uint32_t)clen);
		b64 = base64(out, 8 + clen);
	}
	free(out);
	free(raw);
	return b64;
}
