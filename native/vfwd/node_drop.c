/* SPDX-License-Identifier: MIT */
/*
 * drop: frees the packets of a frame and counts each by the reason the
 * node that sent it set in b->error ("ip4-input: bad checksum", ...).
 */
#include "vfwd.h"

#define foreach_drop_error _(NONE, "none")
typedef enum {
#define _(sym, str) DROP_ERROR_##sym,
	foreach_drop_error
#undef _
	DROP_N_ERROR,
} drop_error_t;
static const char *const drop_error_strings[] = {
#define _(sym, str) str,
	foreach_drop_error
#undef _
};

typedef enum { DROP_N_NEXT } drop_next_t;

typedef struct { uint16_t error; } drop_trace_t;

static int format_drop_trace(char *s, size_t n, const void *rec)
{
	const drop_trace_t *t = rec;
	extern uint32_t vf_n_errors;
	return snprintf(s, n, "reason %s", t->error < vf_n_errors ? vf_error_names[t->error] : "?");
}

static uint32_t drop_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_buf_t *meta = w->pool.meta;
	uint64_t *drops = w->drops;
	for (uint32_t i = 0; i < f->n; i++) {
		uint16_t e = meta[f->bi[i]].error;
		drops[e < vf_n_errors ? e : 0]++;
		if (VF_UNLIKELY(w->tracing)) {
			drop_trace_t t = { e };
			vf_trace_add(w, rt, f->bi[i], &t, sizeof(t));
		}
	}
	vf_free(&w->pool, f->bi, f->n);
	return f->n;
}

static vf_node_t drop_node = {
	.name = "drop",
	.fn = drop_node_fn,
	.n_next = DROP_N_NEXT,
	.n_errors = DROP_N_ERROR,
	.error_names = drop_error_strings,
	.format_trace = format_drop_trace,
};
VF_REGISTER_NODE(drop_node)
