/* SPDX-License-Identifier: MIT */
/*
 * vfwd core: buffer pool, node registry and graph, frame dispatch with
 * next-node enqueue, runtime statistics and tracing.
 *
 * Dispatch: every node has at most one "open" frame per worker that
 * enqueues fill; a frame is put on the worker's FIFO of pending frames
 * when it gets its first packet, and is closed (a new one opened) when it
 * holds max_vector packets. vf_worker_run_once() runs the input nodes,
 * then pending frames in FIFO order until none is left, so with
 * max_vector 256 a node sees whole vectors, and with max_vector 1 every
 * packet walks the graph alone (a scalar processor, same code).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vfwd.h"

vf_node_t *vf_nodes[VF_MAX_NODES];
uint32_t vf_n_nodes;
uint32_t vf_n_errors;
const char *vf_error_names[VF_MAX_NODES * 16];
vf_fib_t *vf_fib;
const struct vf_config *vf_cfg;

/* ---- buffer pool ------------------------------------------------------- */

/* Metadata and the free stack of a pool whose memory is mapped. */
static int pool_meta(vf_pool_t *p, uint32_t n)
{
	p->meta = aligned_alloc(VF_CACHE_LINE, ((size_t)n * sizeof(vf_buf_t) + 63) & ~(size_t)63);
	p->free = malloc((size_t)n * sizeof(uint32_t));
	if (!p->meta || !p->free) {
		vf_pool_fini(p);
		return -ENOMEM;
	}
	memset(p->meta, 0, (size_t)n * sizeof(vf_buf_t));
	p->n = n;
	/* lowest indices on top of the stack: they are used first */
	for (uint32_t i = 0; i < n; i++)
		p->free[i] = n - 1 - i;
	p->n_free = n;
	return 0;
}

/* The memif region of a zero-copy slave is the pool itself: a memfd the
 * peer maps (libmemif passes the fd). Its pages are shmem: 2 MB pages only
 * where /sys/kernel/mm/transparent_hugepage/shmem_enabled allows them
 * (Debian's default "never" leaves 4 KB pages). */
int vf_pool_init_shared(vf_pool_t *p, uint32_t n)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->stride = VF_BUF_SIZE;
	size_t bytes = (size_t)n * VF_BUF_SIZE;
	int fd = memfd_create("vfwd pool", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes)) {
		int e = -errno;
		close(fd);
		return e;
	}
	uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	madvise(m, bytes, MADV_HUGEPAGE);
	madvise(m, bytes, MADV_POPULATE_WRITE);  /* faulted in now, as below */
	p->fd = fd;
	p->mem = m;
	p->map_len = bytes;
	p->mmapped = 1;
	return pool_meta(p, n);
}

int vf_pool_init(vf_pool_t *p, uint32_t n, uint32_t stride)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	size_t bytes = (size_t)n * stride;
	p->stride = stride;
	/* page aligned and zeroed, as an AF_XDP UMEM must be; 2 MB aligned
	 * and transparent huge pages asked for: a vector of 256 buffers spans
	 * ~130 4 KB pages, more than the L1 DTLB holds, so every node pass
	 * missed it (measured: ip4 path in pg mode, see docs/vfwd.md) */
	size_t huge = 2u << 20;
	size_t len = (bytes + huge - 1) / huge * huge + huge;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	uint8_t *a = (uint8_t *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
	if (a > m)
		munmap(m, (size_t)(a - m));
	size_t keep = (bytes + huge - 1) / huge * huge;
	if (a + keep < m + len)
		munmap(a + keep, (size_t)(m + len - (a + keep)));
	madvise(a, keep, MADV_HUGEPAGE);
	/* fault it all in now, as a data plane's memory must be: else the
	 * first packets pay the page faults (pg-input at 1409 clocks/packet
	 * over a first 20000 packets, against ~35 once faulted in). Kernels
	 * before 5.14 refuse it: there the pages fault in as used. */
	madvise(a, keep, MADV_POPULATE_WRITE);
	p->mem = a;
	p->map_len = keep;
	p->mmapped = 1;
	return pool_meta(p, n);
}

void vf_pool_fini(vf_pool_t *p)
{
	if (p->mem)
		munmap(p->mem, p->map_len);
	if (p->fd > 0)   /* (a zeroed pool has fd 0: never a memfd's) */
		close(p->fd);
	free(p->meta);
	free(p->free);
	memset(p, 0, sizeof(*p));
	p->fd = -1;
}

/* ---- registry and graph ------------------------------------------------ */

void vf_node_register(vf_node_t *n)
{
	if (vf_n_nodes >= VF_MAX_NODES) {
		fprintf(stderr, "vfwd: too many nodes (max %d)\n", VF_MAX_NODES);
		abort();
	}
	vf_nodes[vf_n_nodes++] = n;
}

vf_node_t *vf_node_by_name(const char *name)
{
	for (uint32_t i = 0; i < vf_n_nodes; i++)
		if (!strcmp(vf_nodes[i]->name, name))
			return vf_nodes[i];
	return NULL;
}

static int node_cmp(const void *a, const void *b)
{
	const vf_node_t *x = *(vf_node_t *const *)a, *y = *(vf_node_t *const *)b;
	return strcmp(x->name, y->name);
}

int vf_graph_init(void)
{
	static int done;
	if (done)
		return 0;
	/* constructors run in link order: sort so indices are stable */
	qsort(vf_nodes, vf_n_nodes, sizeof(vf_nodes[0]), node_cmp);
	vf_n_errors = 0;
	vf_error_names[vf_n_errors++] = "none";
	for (uint32_t i = 0; i < vf_n_nodes; i++) {
		vf_node_t *n = vf_nodes[i];
		n->index = i;
		n->error_base = vf_n_errors;
		for (uint32_t e = 0; e < n->n_errors; e++) {
			char *s = NULL;
			if (asprintf(&s, "%s: %s", n->name, n->error_names[e]) < 0)
				return -1;
			vf_error_names[vf_n_errors++] = s;
		}
	}
	for (uint32_t i = 0; i < vf_n_nodes; i++) {
		vf_node_t *n = vf_nodes[i];
		if (n->n_next > 16) {
			fprintf(stderr, "vfwd: node %s has too many next nodes\n", n->name);
			return -1;
		}
		for (uint32_t k = 0; k < n->n_next; k++) {
			vf_node_t *t = vf_node_by_name(n->next_names[k]);
			if (!t) {
				fprintf(stderr, "vfwd: node %s: next node '%s' is not registered\n",
					n->name, n->next_names[k]);
				return -1;
			}
			n->next_node[k] = t->index;
		}
	}
	done = 1;
	return 0;
}

/* ---- workers ----------------------------------------------------------- */

int vf_worker_init(vf_worker_t *w, uint32_t id, const struct vf_config *c, uint32_t n_bufs,
		   uint32_t stride)
{
	int err;
	memset(w, 0, sizeof(*w));
	w->id = id;
	w->cfg = c;
	w->max_vector = c->max_vector ? c->max_vector : VF_FRAME_SIZE;
	if (w->max_vector > VF_FRAME_SIZE)
		w->max_vector = VF_FRAME_SIZE;
	w->prefetch = c->prefetch;
	err = c->pool_shared ? vf_pool_init_shared(&w->pool, n_bufs)
			     : vf_pool_init(&w->pool, n_bufs, stride);
	if (err)
		return err;
	/* enough frames for every buffer to sit alone in one */
	w->n_frames = 1;
	while (w->n_frames < n_bufs + 2 * VF_MAX_NODES)
		w->n_frames <<= 1;
	if (w->n_frames > 1u << 16)
		w->n_frames = 1u << 16;
	w->frames = aligned_alloc(VF_CACHE_LINE, (size_t)w->n_frames * sizeof(vf_frame_t));
	w->frame_free = malloc(w->n_frames * sizeof(uint32_t));
	w->pending = calloc(w->n_frames, sizeof(vf_frame_t *));
	w->drops = calloc(vf_n_errors + 1, sizeof(uint64_t));
	if (!w->frames || !w->frame_free || !w->pending || !w->drops) {
		vf_worker_fini(w);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < w->n_frames; i++)
		w->frame_free[i] = w->n_frames - 1 - i;
	w->n_frame_free = w->n_frames;
	w->pend_mask = w->n_frames - 1;
	for (uint32_t i = 0; i < vf_n_nodes; i++) {
		w->rt[i].node = vf_nodes[i];
		if (vf_nodes[i]->init) {
			err = vf_nodes[i]->init(w, &w->rt[i]);
			if (err) {
				fprintf(stderr, "vfwd: worker %u: node %s init failed: %s\n", id,
					vf_nodes[i]->name, strerror(-err));
				vf_worker_fini(w);
				return err;
			}
		}
	}
	return 0;
}

void vf_worker_fini(vf_worker_t *w)
{
	for (uint32_t i = 0; i < vf_n_nodes; i++) {
		if (w->rt[i].state && vf_nodes[i]->fini)
			vf_nodes[i]->fini(w->rt[i].state);
		free(w->rt[i].state);
		w->rt[i].state = NULL;
	}
	free(w->frames);
	free(w->frame_free);
	free(w->pending);
	free(w->drops);
	w->frames = NULL;
	w->frame_free = NULL;
	w->pending = NULL;
	w->drops = NULL;
	vf_pool_fini(&w->pool);
}

static inline vf_frame_t *frame_open(vf_worker_t *w, uint32_t node)
{
	if (VF_UNLIKELY(!w->n_frame_free)) {
		fprintf(stderr, "vfwd: worker %u ran out of frames\n", w->id);
		abort();
	}
	vf_frame_t *f = &w->frames[w->frame_free[--w->n_frame_free]];
	f->n = 0;
	f->node = node;
	w->open[node] = f;
	w->pending[w->pend_tail++ & w->pend_mask] = f;
	return f;
}

static inline void frame_release(vf_worker_t *w, vf_frame_t *f)
{
	w->frame_free[w->n_frame_free++] = (uint32_t)(f - w->frames);
}

/* Append n buffers to the open frame of node, splitting at max_vector. */
static inline void enqueue_run(vf_worker_t *w, uint32_t node, const uint32_t *bi, uint32_t n)
{
	while (n) {
		vf_frame_t *f = w->open[node];
		if (!f)
			f = frame_open(w, node);
		uint32_t room = w->max_vector - f->n;
		uint32_t k = n < room ? n : room;
		memcpy(f->bi + f->n, bi, k * sizeof(uint32_t));
		f->n += k;
		bi += k;
		n -= k;
		if (f->n == w->max_vector)
			w->open[node] = NULL;  /* full: stays queued, next enqueue opens another */
	}
}

void vf_enqueue(vf_worker_t *w, vf_node_rt_t *rt, const uint32_t *bi, const uint16_t *next,
		uint32_t n)
{
	const uint32_t *map = rt->node->next_node;
	uint32_t i = 0;
	while (i < n) {
		uint32_t j = i + 1;
		uint16_t nx = next[i];
		/* runs are long (often the whole vector): compare four nexts at a
		 * time (callgrind: 7 -> 2 instructions a packet per node) */
		uint64_t four = nx * 0x0001000100010001ull, v;
		while (j + 4 <= n && (memcpy(&v, next + j, 8), v == four))
			j += 4;
		while (j < n && next[j] == nx)
			j++;
		enqueue_run(w, map[nx], bi + i, j - i);
		i = j;
	}
}

void vf_enqueue_to_node(vf_worker_t *w, uint32_t node, const uint32_t *bi, uint32_t n)
{
	enqueue_run(w, node, bi, n);
}

void vf_enqueue_one(vf_worker_t *w, vf_node_rt_t *rt, const uint32_t *bi, uint32_t n,
		    uint16_t next)
{
	if (n)
		enqueue_run(w, rt->node->next_node[next], bi, n);
}

static inline uint32_t run_node(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	uint64_t t0 = vf_clock();
	uint32_t n = rt->node->fn(w, rt, f);
	uint64_t t1 = vf_clock();
	rt->calls++;
	if (n) {
		rt->vectors += n;
		rt->clocks += t1 - t0;
	} else {
		rt->polls_idle++;
	}
	return n;
}

uint32_t vf_worker_run_once(vf_worker_t *w)
{
	uint32_t produced = 0;
	uint64_t t0 = vf_clock();
	w->pass_start = t0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	w->now_s = (uint32_t)ts.tv_sec + w->now_offset;
	for (uint32_t i = 0; i < vf_n_nodes; i++)
		if (vf_nodes[i]->type == VF_NODE_INPUT && w->rt[i].state)
			produced += run_node(w, &w->rt[i], NULL);
	while (w->pend_head != w->pend_tail) {
		vf_frame_t *f = w->pending[w->pend_head++ & w->pend_mask];
		if (w->open[f->node] == f)
			w->open[f->node] = NULL;
		if (f->n)
			run_node(w, &w->rt[f->node], f);
		frame_release(w, f);
	}
	w->loops++;
	if (produced)
		w->busy_clocks += vf_clock() - t0;
	return produced;
}

/* ---- tracing ----------------------------------------------------------- */

void vf_trace_mark(vf_worker_t *w, const uint32_t *bi, uint32_t n)
{
	for (uint32_t i = 0; i < n && w->trace_left; i++) {
		w->pool.meta[bi[i]].flags |= VF_BUF_TRACED;
		w->trace_left--;
		w->tracing = 1;
	}
}

void vf_trace_add(vf_worker_t *w, vf_node_rt_t *rt, uint32_t bi, const void *rec, size_t len)
{
	if (!(w->pool.meta[bi].flags & VF_BUF_TRACED))
		return;
	if (w->n_trace >= VF_TRACE_MAX) {
		w->tracing = 0;
		return;
	}
	struct vf_trace_rec *t = &w->trace[w->n_trace++];
	t->node = rt->node->index;
	t->bi = bi;
	memset(t->data, 0, sizeof(t->data));
	memcpy(t->data, rec, len < sizeof(t->data) ? len : sizeof(t->data));
}

void vf_trace_dump(FILE *out, vf_worker_t *const *ws, uint32_t n)
{
	char line[256];
	fprintf(out, "{\"trace\": [");
	int first = 1;
	for (uint32_t k = 0; k < n; k++) {
		const vf_worker_t *w = ws[k];
		for (uint32_t i = 0; i < w->n_trace; i++) {
			const struct vf_trace_rec *t = &w->trace[i];
			const vf_node_t *nd = vf_nodes[t->node];
			line[0] = 0;
			if (nd->format_trace)
				nd->format_trace(line, sizeof(line), t->data);
			for (char *c = line; *c; c++)
				if (*c == '"' || *c == '\\')
					*c = '\'';
			fprintf(out, "%s\n {\"worker\": %u, \"node\": \"%s\", \"buffer\": %u, \"text\": \"%s\"}",
				first ? "" : ",", w->id, nd->name, t->bi, line);
			first = 0;
		}
	}
	fprintf(out, "\n]}\n");
}

/* ---- statistics -------------------------------------------------------- */

double vf_tsc_hz(void)
{
	static double hz;
	if (hz > 0)
		return hz;
	struct timespec a, b, req = { 0, 20 * 1000 * 1000 };
	clock_gettime(CLOCK_MONOTONIC_RAW, &a);
	uint64_t c0 = vf_clock();
	nanosleep(&req, NULL);
	uint64_t c1 = vf_clock();
	clock_gettime(CLOCK_MONOTONIC_RAW, &b);
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	hz = (double)(c1 - c0) * 1e9 / ns;
	return hz;
}

static void node_json(FILE *out, const char *name, uint64_t calls, uint64_t vectors,
		      uint64_t clocks, uint64_t idle, int first)
{
	double cpp = vectors ? (double)clocks / (double)vectors : 0.0;
	uint64_t busy = calls - idle;
	double vpc = busy ? (double)vectors / (double)busy : 0.0;
	fprintf(out, "%s\n    \"%s\": {\"calls\": %llu, \"vectors\": %llu, \"packets\": %llu, "
		"\"clocks\": %llu, \"clocks_per_packet\": %.2f, \"vectors_per_call\": %.2f, "
		"\"idle_calls\": %llu}",
		first ? "" : ",", name, (unsigned long long)calls, (unsigned long long)vectors,
		(unsigned long long)vectors, (unsigned long long)clocks, cpp, vpc,
		(unsigned long long)idle);
}

void vf_stats_json(FILE *out, vf_worker_t *const *ws, uint32_t n, double tsc_hz,
		   const struct vf_config *c)
{
	fprintf(out, "{\"vfwd_version\": \"%s\", \"mode\": \"%s\", \"max_vector\": %u, "
		"\"workers\": %u, \"prefetch\": %s, \"rx_mode\": \"%s\", "
		"\"sched_priority\": %d, \"ring_size\": %u, \"fill_depth\": %u, "
		"\"tsc_hz\": %.0f,\n  \"nodes\": {",
		VFWD_VERSION, vf_mode_names[c->mode], c->max_vector, n, c->prefetch ? "true" : "false",
		vf_rx_mode_names[c->rx_mode], c->sched_priority, c->ring_size, c->fill_depth, tsc_hz);
	int first = 1;
	for (uint32_t i = 0; i < vf_n_nodes; i++) {
		uint64_t calls = 0, vec = 0, clk = 0, idle = 0;
		for (uint32_t k = 0; k < n; k++) {
			calls += ws[k]->rt[i].calls;
			vec += ws[k]->rt[i].vectors;
			clk += ws[k]->rt[i].clocks;
			idle += ws[k]->rt[i].polls_idle;
		}
		/* every node of the graph, even unused: counter sets stay stable */
		node_json(out, vf_nodes[i]->name, calls, vec, clk, idle, first);
		first = 0;
	}
	fprintf(out, "\n  },\n  \"drops\": {");
	first = 1;
	uint64_t total = 0;
	for (uint32_t e = 0; e < vf_n_errors; e++) {
		uint64_t v = 0;
		for (uint32_t k = 0; k < n; k++)
			v += ws[k]->drops[e];
		if (!v)
			continue;
		total += v;
		fprintf(out, "%s\n    \"%s\": %llu", first ? "" : ",", vf_error_names[e],
			(unsigned long long)v);
		first = 0;
	}
	fprintf(out, "\n  },\n  \"drops_total\": %llu,", (unsigned long long)total);
	if (c->mode == VF_MODE_BRIDGE) {
		static const char *const names[VF_L2_N_STATS] = VF_L2_STATS;
		uint64_t sum[VF_L2_N_STATS] = { 0 }, v[VF_L2_N_STATS];
		for (uint32_t k = 0; k < n; k++) {
			vf_l2_bridge_stats(ws[k], v);
			for (int j = 0; j < VF_L2_N_STATS; j++)
				sum[j] += v[j];
		}
		fprintf(out, "\n  \"bridge\": {");
		for (int j = 0; j < VF_L2_N_STATS; j++)
			fprintf(out, "%s\"%s\": %llu", j ? ", " : "", names[j],
				(unsigned long long)sum[j]);
		fprintf(out, "},");
	}
	fprintf(out, "\n  \"workers_detail\": [");
	for (uint32_t k = 0; k < n; k++) {
		fprintf(out, "%s\n   {\"worker\": %u, \"loops\": %llu, \"busy_clocks\": %llu, "
			"\"stalls_over_1ms\": %llu, \"stalls_over_4ms\": %llu, "
			"\"buffers_free\": %u, \"buffers\": %u, \"nodes\": {", k ? "," : "",
			ws[k]->id, (unsigned long long)ws[k]->loops,
			(unsigned long long)ws[k]->busy_clocks,
			(unsigned long long)ws[k]->stalls_1ms, (unsigned long long)ws[k]->stalls_4ms,
			ws[k]->pool.n_free, ws[k]->pool.n);
		first = 1;
		for (uint32_t i = 0; i < vf_n_nodes; i++) {
			const vf_node_rt_t *r = &ws[k]->rt[i];
			if (!r->calls)
				continue;
			node_json(out, vf_nodes[i]->name, r->calls, r->vectors, r->clocks,
				  r->polls_idle, first);
			first = 0;
		}
		fprintf(out, "}}");
	}
	fprintf(out, "\n  ]");
	extern void vf_ports_json(FILE *out, vf_worker_t *const *ws, uint32_t n);
	vf_ports_json(out, ws, n);
	fprintf(out, "\n}\n");
}
