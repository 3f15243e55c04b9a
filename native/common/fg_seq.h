/* SPDX-License-Identifier: MIT */
/*
 * Per-stream receive accounting in user space, with the semantics of
 * native/bpf/fwdgen_rx.bpf.c: a bitmap of sequence numbers gives exact
 * unique/duplicate counts (loss = intended - unique), RFC 4737 reordering
 * (a packet is reordered if its sequence number is below the highest
 * seen), RFC 3550 interarrival jitter, and one-way latency.
 */
#ifndef FWDBENCH_FG_SEQ_H
#define FWDBENCH_FG_SEQ_H

#include <stdint.h>
#include "fg_hdr.h"

struct fg_seq {
	uint64_t *bitmap;
	uint32_t capacity;   /* sequence numbers tracked */
	uint64_t packets;    /* unique */
	uint64_t bytes;
	uint64_t duplicated;
	uint64_t reordered;
	uint64_t out_of_range;
	uint64_t next_seq;   /* highest seen + 1 */
	uint64_t jitter16;   /* RFC 3550 jitter [ns] x 16 */
	uint32_t prev_transit;
	int have_prev;
	struct fg_hdr *lat;  /* may be NULL: no latency */
};

int fg_seq_init(struct fg_seq *s, uint32_t capacity, int with_latency);
void fg_seq_free(struct fg_seq *s);
/* Account one signed frame; transit = rx_ts - tx_ts [ns] (mod 2^32). */
void fg_seq_rx(struct fg_seq *s, uint32_t seq, uint32_t len, uint32_t transit);
/* RFC 3550 update, shared with tests: returns the new jitter x 16. */
uint64_t fg_jitter16_update(uint64_t j16, uint32_t prev_transit, uint32_t transit);

#endif
