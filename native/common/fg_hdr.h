/* SPDX-License-Identifier: MIT */
/*
 * Latency histogram in HdrHistogram layout (fg_proto.h: 1 ns .. 2^32-1 ns,
 * 3 significant figures), its summary statistics, and the HdrHistogram V2
 * compressed + base64 encoding ("HISTF..."), readable by HdrHistogram
 * libraries (e.g. Python `hdrhistogram`: HdrHistogram.decode()).
 */
#ifndef FWDBENCH_FG_HDR_H
#define FWDBENCH_FG_HDR_H

#include <stddef.h>
#include <stdint.h>
#include "fg_proto.h"

struct fg_hdr {
	uint64_t counts[FG_HDR_LEN];
	uint64_t total;
	uint64_t min, max; /* exact [ns]; min valid when total > 0 */
	double sum;        /* exact sum [ns] */
};

void fg_hdr_reset(struct fg_hdr *h);
void fg_hdr_record(struct fg_hdr *h, uint32_t v, uint64_t n);
/* Add counts recorded elsewhere (a BPF map slot); updates total only:
 * min/max/sum come from the exact counters. */
void fg_hdr_add_counts(struct fg_hdr *h, const uint64_t *counts);
/* Lowest value of the range counted at index i. */
uint64_t fg_hdr_value_from_index(uint32_t i);
/* Highest value equivalent to v (the top of its bucket). */
uint64_t fg_hdr_highest_equivalent(uint64_t v);
/* As HdrHistogram's getValueAtPercentile (p in 0..100): the highest
 * equivalent value of the first bucket reaching the target count. */
uint64_t fg_hdr_value_at_percentile(const struct fg_hdr *h, double p);
/* V2 compressed, base64; malloc'd string, or NULL on allocation failure. */
char *fg_hdr_encode(const struct fg_hdr *h);

/* Pieces exposed for unit tests. */
size_t fg_zigzag_put(uint8_t *out, int64_t v);

#endif
