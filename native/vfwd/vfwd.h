/* SPDX-License-Identifier: MIT */
/*
 * vfwd: fwdbench's reference vector packet processor.
 *
 * The design is VPP's, in small: a graph of nodes; each node function is
 * called with a frame (vector) of buffer indices and hands every packet to
 * one of its next nodes with a single vf_enqueue() per frame. Buffers live
 * in one pre-allocated pool per worker (the AF_XDP UMEM when ports use
 * AF_XDP), so a packet received on one port is transmitted from another
 * without a copy. Every node keeps per-worker runtime statistics (calls,
 * vectors, clocks) as VPP's `show runtime` does.
 *
 * Fixed node descriptions (vf_node_t, registered at load time by
 * VF_REGISTER_NODE) are kept apart from per-worker runtime state
 * (vf_node_rt_t, cache aligned, never shared between workers).
 */
#ifndef VFWD_H
#define VFWD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define VFWD_VERSION "0.1.0"

#define VF_FRAME_SIZE 256        /* largest vector [packets] */
/* Chunks an AF_XDP socket keeps in the kernel (fill + rx rings) by default.
 * The fill ring is a FIFO: every chunk in it cycles through the cache (its
 * data and the kernel's per-chunk head) before it is used again, so a deep
 * ring widens the working set without buffering more: the frames come from
 * veth's 256-frame receive ring through a NAPI thread on vfwd's own CPU.
 * Measured in docs/vfwd.md: 256 against 4096 cut the DUT CPU per frame by
 * ~15 % and forwarded more at overload. */
#define VF_FILL_DEPTH 256
#define VF_BUF_SIZE 2048         /* bytes per buffer (= AF_XDP chunk) */
#define VF_BUF_HEADROOM 256      /* bytes before packet data (= XDP_PACKET_HEADROOM) */
#define VF_MAX_NODES 48
#define VF_MAX_PORTS 8
#define VF_MAX_WORKERS 16
#define VF_CACHE_LINE 64

#define VF_LIKELY(x) __builtin_expect(!!(x), 1)
#define VF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define VF_INLINE static inline __attribute__((always_inline))
#define VF_ALIGNED __attribute__((aligned(VF_CACHE_LINE)))
#define VF_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#define VF_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)

static inline uint64_t vf_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* ---- buffers ----------------------------------------------------------- */

/* Per-buffer metadata, kept apart from packet data. */
typedef struct vf_buf {
	uint16_t data;      /* packet start, offset from the chunk start */
	uint16_t len;       /* packet length [bytes] (L2, no FCS) */
	uint16_t rx_port;
	uint16_t tx_port;
	uint16_t l3;        /* L3 header offset from packet start */
	uint16_t error;     /* global error index when sent to drop */
	uint16_t recirc;    /* recirculations so far (work node) */
	uint16_t flags;
	uint32_t adj;       /* adjacency chosen by a lookup */
	uint32_t hash;      /* flow hash (RSS, nat, work) */
} vf_buf_t;   /* 24 bytes */

typedef struct vf_pool {
	uint8_t *mem;       /* n * VF_BUF_SIZE bytes (AF_XDP UMEM area) */
	vf_buf_t *meta;     /* n entries */
	uint32_t *free;     /* stack of free buffer indices */
	uint32_t n, n_free;
	uint32_t stride;    /* bytes from one buffer to the next */
	size_t map_len;
	int mmapped;
	int fd;             /* memfd of a shared pool, else -1 */
} vf_pool_t;

/* Buffer strides: an AF_XDP UMEM (aligned mode) needs a power of two; a
 * pool without one uses an odd number of cache lines, so the headers of a
 * vector spread over every L1 set instead of aliasing into two (measured:
 * pg ip4 path 2048 -> 2112 B stride, ip4-rewrite 299 -> see docs/vfwd.md). */
#define VF_STRIDE_UMEM VF_BUF_SIZE
#define VF_STRIDE_PG (VF_BUF_SIZE + 64)

int vf_pool_init(vf_pool_t *p, uint32_t n, uint32_t stride);
/* A pool in shared memory (a memfd, p->fd): the memif region of a
 * zero-copy slave (port_memif.c); stride VF_BUF_SIZE. */
int vf_pool_init_shared(vf_pool_t *p, uint32_t n);
void vf_pool_fini(vf_pool_t *p);

static inline uint8_t *vf_buf_data(const vf_pool_t *p, uint32_t bi)
{
	return p->mem + (size_t)bi * p->stride + p->meta[bi].data;
}

/* Allocate up to n buffers (data at the headroom); returns how many. */
static inline uint32_t vf_alloc(vf_pool_t *p, uint32_t *bi, uint32_t n)
{
	if (n > p->n_free)
		n = p->n_free;
	p->n_free -= n;
	memcpy(bi, p->free + p->n_free, n * sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++) {
		vf_buf_t *b = &p->meta[bi[i]];
		b->data = VF_BUF_HEADROOM;
		b->recirc = 0;
		b->flags = 0;
		b->error = 0;
	}
	return n;
}

static inline void vf_free(vf_pool_t *p, const uint32_t *bi, uint32_t n)
{
	memcpy(p->free + p->n_free, bi, n * sizeof(uint32_t));
	p->n_free += n;
}

/* ---- frames, nodes, graph ---------------------------------------------- */

typedef struct vf_frame {
	uint32_t n;
	uint32_t node;      /* the node it is queued for */
	uint32_t bi[VF_FRAME_SIZE];
} vf_frame_t;

struct vf_worker;
struct vf_node_rt;
typedef uint32_t (*vf_node_fn_t)(struct vf_worker *w, struct vf_node_rt *rt,
				 vf_frame_t *f);
typedef int (*vf_format_trace_fn_t)(char *s, size_t n, const void *rec);
typedef int (*vf_node_init_fn_t)(struct vf_worker *w, struct vf_node_rt *rt);

enum vf_node_type { VF_NODE_INTERNAL, VF_NODE_INPUT };

/* Fixed description of a node (one per node, shared by all workers). */
typedef struct vf_node {
	const char *name;
	vf_node_fn_t fn;
	enum vf_node_type type;
	uint16_t n_next;
	const char *const *next_names;
	uint16_t n_errors;
	const char *const *error_names;  /* reasons, for drop counters */
	vf_format_trace_fn_t format_trace;
	vf_node_init_fn_t init;          /* per-worker runtime init (optional) */
	void (*fini)(void *state);       /* frees what init hung off rt->state */
	/* resolved by vf_graph_init() */
	uint32_t index;
	uint32_t error_base;             /* first global error index */
	uint32_t next_node[16];          /* local next -> node index */
} vf_node_t;

/* Per-worker runtime state of a node (never shared). */
typedef struct vf_node_rt {
	const vf_node_t *node;
	uint64_t calls, vectors, clocks;  /* vectors: packets, as VPP counts */
	uint64_t polls_idle;              /* input nodes: calls that found nothing */
	void *state;                      /* node's per-worker data */
} VF_ALIGNED vf_node_rt_t;

extern vf_node_t *vf_nodes[VF_MAX_NODES];
extern uint32_t vf_n_nodes;
extern uint32_t vf_n_errors;                 /* global error indices */
extern const char *vf_error_names[];          /* "node: reason" */

void vf_node_register(vf_node_t *n);
#define VF_REGISTER_NODE(x) \
	__attribute__((constructor)) static void vf_register_##x(void) \
	{ vf_node_register(&x); }

/* Resolve next names; returns 0 or -1 (message on stderr). */
int vf_graph_init(void);
vf_node_t *vf_node_by_name(const char *name);

/* ---- configuration (vf_config.c) --------------------------------------- */

enum vf_mode { VF_MODE_ROUTER, VF_MODE_XCONNECT, VF_MODE_BRIDGE, VF_MODE_NAT44,
	       VF_MODE_WORK };
/* How an idle worker waits (VPP's rx-mode names): poll spins; interrupt sleeps
 * in poll() as soon as a pass over its ports finds nothing; adaptive spins
 * VF_ADAPTIVE_SPINS empty passes first. */
enum vf_rx_mode { VF_RX_POLL, VF_RX_ADAPTIVE, VF_RX_INTERRUPT };
#define VF_ADAPTIVE_SPINS 2000
/* config spellings of enum vf_mode / enum vf_rx_mode, in enum order */
extern const char *const vf_mode_names[5];
extern const char *const vf_rx_mode_names[3];
enum vf_port_drv { VF_PORT_AUTO, VF_PORT_XDP, VF_PORT_AFPACKET, VF_PORT_PG, VF_PORT_MEMIF };
enum vf_port_role { VF_ROLE_L3, VF_ROLE_XCONNECT, VF_ROLE_BRIDGE };

struct vf_port_cfg {
	char ifname[32];
	uint8_t mac[6];
	enum vf_port_drv drv;
	uint32_t ip4;          /* host order, 0 if none (local address) */
	uint8_t ip6[16];
	int has_ip6;
	int xc_peer;           /* xconnect mode: tx port */
	int line;
	/* driver memif: a memif interface (port_memif.c), not a kernel one */
	char socket[108];      /* UNIX socket path, or @name (abstract) */
	uint32_t memif_id;     /* interface id on the socket */
	int memif_master;      /* 1: vfwd listens; 0 (default): slave, zero copy */
};

struct vf_pg_cfg {
	int enabled, ipv6, dst_random;
	uint32_t flows, size;  /* frame size incl. FCS [bytes] */
	uint8_t src[16], dst[16];
	uint32_t src_n, dst_n; /* addresses in the prefixes */
	uint16_t port;         /* rx port it pretends to be */
	uint8_t ttl;
	uint8_t dst_mac[6], src_mac[6];
	int has_dst_mac;
	uint64_t seed;
	uint64_t packets;      /* stop after this many (0: run until stopped) */
};

struct vf_work_cfg {
	uint32_t lookups, hashes, arith, regs, recirc;
	int jhash;             /* 0: crc32, 1: jhash */
	uint32_t table_size;   /* entries of the lookup table */
};

struct vf_nat_cfg {
	int inside, outside;   /* ports */
	uint32_t pool;         /* outside address, host order */
	uint32_t sessions;     /* table capacity per worker */
	uint16_t port_lo, port_hi;
};

struct vf_config {
	enum vf_mode mode;
	uint32_t max_vector, workers, ring_size, n_ports;
	uint32_t fill_depth;    /* chunks kept in each AF_XDP socket's fill + rx rings */
	int fill_depth_set;     /* given in the file (memif's default is ring-size / 2) */
	int prefetch, trace;
	enum vf_rx_mode rx_mode;
	int sched_priority;    /* SCHED_FIFO priority of the workers, 0 = normal */
	int cpus[VF_MAX_WORKERS], n_cpus;
	struct vf_port_cfg port[VF_MAX_PORTS];
	struct vf_pg_cfg pg;
	struct vf_work_cfg work;
	struct vf_nat_cfg nat;
	uint32_t bridge_aging_s, bridge_size;
	struct { uint8_t mac[6]; uint16_t port; } bridge_static[16];
	uint32_t n_bridge_static;
	uint32_t lpm_tbl8;     /* tbl8 groups of DIR-24-8 */
	const char *lpm;       /* "dir24" | "ref" */
	struct vf_fib *fib;
	int pool_shared;       /* memif slave ports: the pool is their shared memory */
};

/* Parse a config file (path "-" is stdin); on error prints
 * "vfwd: FILE:LINE: message" into err and returns -1. */
int vf_config_load(struct vf_config *c, const char *path, char *err, size_t errlen);
int vf_config_parse_string(struct vf_config *c, const char *name, const char *text,
			   char *err, size_t errlen);
void vf_config_defaults(struct vf_config *c);
void vf_config_free(struct vf_config *c);
int vf_parse_mac(const char *s, uint8_t mac[6]);

/* ---- FIB (vf_fib.c) ---------------------------------------------------- */

/* Adjacency: where a route's packets go and the MAC rewrite. */
typedef struct vf_adj {
	uint8_t rewrite[12];   /* dst MAC, src MAC */
	uint16_t port;
	uint16_t kind;         /* VF_ADJ_* */
} vf_adj_t;
enum { VF_ADJ_DROP = 0, VF_ADJ_FWD = 1, VF_ADJ_LOCAL = 2 };

struct vf_lpm4_ops;
typedef struct vf_fib {
	vf_adj_t *adj;
	uint32_t n_adj, cap_adj;
	const struct vf_lpm4_ops *ops4;
	void *lpm4;
	struct vf_lpm6 *lpm6;
	uint32_t n_routes4, n_routes6;
	/* neighbours: ip -> mac per port */
	struct vf_neigh { int ipv6; uint8_t ip[16]; uint8_t mac[6]; uint16_t port; } *neigh;
	uint32_t n_neigh, cap_neigh;
} vf_fib_t;

vf_fib_t *vf_fib_create(const char *lpm_name, uint32_t tbl8_groups);
void vf_fib_free(vf_fib_t *f);
/* Add a route; via is a neighbour address resolved through the neighbour
 * table (must exist), or local. Returns 0 or -1 with msg. */
int vf_fib_add_neigh(vf_fib_t *f, int ipv6, const uint8_t ip[16], const uint8_t mac[6],
		     uint16_t port);
int vf_fib_add_route(vf_fib_t *f, const struct vf_config *c, int ipv6, const uint8_t pfx[16],
		     uint8_t len, const uint8_t via[16], int port, char *msg, size_t n);
int vf_fib_add_local(vf_fib_t *f, int ipv6, const uint8_t addr[16], char *msg, size_t n);

/* ---- workers ----------------------------------------------------------- */

struct vf_port;
struct vf_trace_rec {
	uint32_t node, bi;
	uint8_t data[48];
};
#define VF_TRACE_MAX 256

typedef struct vf_worker {
	uint32_t id;
	const struct vf_config *cfg;
	vf_pool_t pool;
	vf_node_rt_t rt[VF_MAX_NODES];
	/* frames */
	vf_frame_t *frames;                 /* frame pool */
	uint32_t *frame_free, n_frame_free, n_frames;
	vf_frame_t *open[VF_MAX_NODES];     /* frame being filled per node */
	vf_frame_t **pending;               /* FIFO ring of frames to run */
	uint32_t pend_head, pend_tail, pend_mask;
	uint32_t max_vector;
	int prefetch;
	/* ports (this worker's queue on each port) */
	struct vf_port *ports[VF_MAX_PORTS];
	uint32_t n_ports;
	/* drop counters by global error index */
	uint64_t *drops;
	/* tracing */
	volatile uint32_t trace_left;       /* packets still to mark at input */
	uint32_t tracing;                   /* marked packets may be in flight */
	uint32_t n_trace;
	struct vf_trace_rec trace[VF_TRACE_MAX];
	/* control */
	volatile int stop;
	uint32_t now_s;                     /* coarse monotonic seconds (bridge aging) */
	uint32_t now_offset;                /* added to now_s (tests move time forward) */
	uint64_t loops;
	uint64_t busy_clocks;               /* TSC in passes that brought packets in:
					     * the whole loop, nodes and dispatch */
	uint64_t pg_sent;                   /* pg-input packets generated */
	/* passes that began more than 1 ms (4 ms) after the previous one
	 * began, the worker not having slept in poll() between them: its CPU
	 * was taken from it (preempted, or the vCPU stolen), a time its RX
	 * rings must ride out */
	uint64_t stalls_1ms, stalls_4ms;
	uint64_t pass_start;                /* TSC at the start of the last pass */
} VF_ALIGNED vf_worker_t;

int vf_worker_init(vf_worker_t *w, uint32_t id, const struct vf_config *c, uint32_t n_bufs,
		   uint32_t stride);
void vf_worker_fini(vf_worker_t *w);
/* l2-bridge's MAC table (VPP's show l2fib in small): entries now, then
 * counters since start. */
#define VF_L2_N_STATS 6
#define VF_L2_STATS { "entries", "learnt", "moved", "flooded", "table_full", "aged" }
void vf_l2_bridge_stats(vf_worker_t *w, uint64_t out[VF_L2_N_STATS]);
/* One pass: every input node, then every pending frame. Returns packets
 * the input nodes produced. */
uint32_t vf_worker_run_once(vf_worker_t *w);

/* Hand each packet to next[i] (a local next index of rt's node). One call
 * per frame. */
void vf_enqueue(vf_worker_t *w, vf_node_rt_t *rt, const uint32_t *bi,
		const uint16_t *next, uint32_t n);
/* Queue n buffers for the node with global index node (inputs, tests). */
void vf_enqueue_to_node(vf_worker_t *w, uint32_t node, const uint32_t *bi, uint32_t n);
/* All n packets to the same next node. */
void vf_enqueue_one(vf_worker_t *w, vf_node_rt_t *rt, const uint32_t *bi, uint32_t n,
		    uint16_t next);

static inline uint16_t vf_error(const vf_node_rt_t *rt, uint32_t code)
{
	return (uint16_t)(rt->node->error_base + code);
}

/* Tracing: nodes check w->tracing (unlikely) once per frame; records are
 * kept for marked buffers only (VPP's trace flag). */
void vf_trace_add(vf_worker_t *w, vf_node_rt_t *rt, uint32_t bi, const void *rec,
		  size_t len);
#define VF_BUF_TRACED 1
/* Input nodes mark up to trace_left of the packets they bring in. */
void vf_trace_mark(vf_worker_t *w, const uint32_t *bi, uint32_t n);

/* Statistics as JSON (all workers summed, and per worker). */
void vf_stats_json(FILE *out, vf_worker_t *const *w, uint32_t n, double tsc_hz,
		   const struct vf_config *c);
void vf_trace_dump(FILE *out, vf_worker_t *const *w, uint32_t n);
double vf_tsc_hz(void);

/* ---- shared globals set by main ---------------------------------------- */
extern vf_fib_t *vf_fib;                 /* read-only after start */
extern const struct vf_config *vf_cfg;

/* ---- small helpers ----------------------------------------------------- */

/* Internet checksum (not complemented fold) of len bytes. */
static inline uint32_t vf_csum_add(const void *buf, size_t len, uint32_t sum)
{
	const uint8_t *p = buf;
	while (len > 1) {
		sum += (uint32_t)p[0] << 8 | p[1];
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}
static inline uint16_t vf_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}
/* RFC 1624 eqn. 3 update of a checksum (host order values). */
static inline uint16_t vf_csum_update16(uint16_t check, uint16_t old, uint16_t new_)
{
	uint32_t s = (uint16_t)~check;
	s += (uint16_t)~old;
	s += new_;
	return (uint16_t)~vf_csum_fold(s);
}

/* One's complement sum of a 20-byte IPv4 header, folded to 16 bits (in
 * the byte order of the header: 0xffff when its checksum is valid). */
static inline uint16_t vf_ip4_sum20(const uint8_t *ip)
{
	/* five 32-bit loads straight from the packet (a 20-byte memcpy to
	 * the stack costs a store-forwarding stall per word) */
	uint32_t w0, w1, w2, w3, w4;
	memcpy(&w0, ip, 4);
	memcpy(&w1, ip + 4, 4);
	memcpy(&w2, ip + 8, 4);
	memcpy(&w3, ip + 12, 4);
	memcpy(&w4, ip + 16, 4);
	uint64_t s = (uint64_t)w0 + w1 + w2 + w3 + w4;
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	uint32_t t = (uint32_t)((s & 0xffff) + (s >> 16));
	t = (t & 0xffff) + (t >> 16);
	return (uint16_t)t;
}

/* Network-order loads and stores: one (unaligned) access and a byte swap.
 * Byte-wise access through uint8_t * costs ~4 instructions a field, and a
 * byte store may alias anything, so the compiler reloads the pool's fields
 * after each one (measured with callgrind in bench/vfwd_nodes.py). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VF_BE16(v) __builtin_bswap16(v)
#define VF_BE32(v) __builtin_bswap32(v)
#else
#define VF_BE16(v) (v)
#define VF_BE32(v) (v)
#endif
static inline uint16_t vf_rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return VF_BE16(v);
}
static inline uint32_t vf_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return VF_BE32(v);
}
static inline void vf_wr16(uint8_t *p, uint16_t v)
{
	v = VF_BE16(v);
	memcpy(p, &v, 2);
}
static inline void vf_wr32(uint8_t *p, uint32_t v)
{
	v = VF_BE32(v);
	memcpy(p, &v, 4);
}

#endif
