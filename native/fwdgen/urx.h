/* SPDX-License-Identifier: MIT */
/*
 * Receive accounting in user space, shared by the afpacket and afxdp
 * backends: signature checks and per-stream fg_seq counting, with the
 * semantics of native/bpf/fwdgen_rx.bpf.c.
 */
#ifndef FWDGEN_URX_H
#define FWDGEN_URX_H

#include "fg_seq.h"
#include "fwdgen.h"

struct fg_urx {
	struct fg_seq seq[FG_MAX_STREAMS];
	int have_seq[FG_MAX_STREAMS];
	uint64_t live[FG_MAX_STREAMS]; /* unique frames, read by the sampler */
	uint32_t phase;                /* counted phase, set by the trial */
};

/* Allocate bitmaps for the streams whose receiver is `mine`. */
int fg_urx_init(struct fg_urx *u, struct fg_run *r, const struct fg_rxops *mine,
		char *err, size_t errlen);
/* Account one frame received on port `port` at rx_ns (CLOCK_MONOTONIC). */
void fg_urx_frame(struct fg_urx *u, struct fg_run *r, const struct fg_rxops *mine, int port,
		  const uint8_t *buf, uint32_t len, uint32_t rx_ns);
/* Final counts of a stream; call once its receiver thread has stopped. */
int fg_urx_collect(struct fg_urx *u, int stream, struct fg_rx_final *o);
void fg_urx_free(struct fg_urx *u);

#endif
