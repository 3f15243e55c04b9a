/* SPDX-License-Identifier: MIT */
/*
 * work: the synthetic per-packet work of seed 004 (DPDK pipeline
 * scalability), between ip4-input and ip4-lookup in mode "work":
 *   lookups N  dependent reads of a table of `table` 32-bit entries
 *   hashes N   CRC32-C (SSE4.2 when the CPU has it) or jhash of the 5-tuple
 *   arith N    multiply-add steps on a register
 *   regs N     read-modify-writes of a per-worker register array
 *              (P4/DPDK-pipeline "registers")
 *   recirc N   the packet goes back to ethernet-input N times before
 *              leaving (recirculation), paying the whole path again.
 * The result lands in b->hash so the compiler keeps every step.
 */
#include <stdlib.h>

#include "vfwd.h"

#define foreach_work_error _(NONE, "none")
typedef enum {
#define _(sym, str) WORK_ERROR_##sym,
	foreach_work_error
#undef _
	WORK_N_ERROR,
} work_error_t;
static const char *const work_error_strings[] = {
#define _(sym, str) str,
	foreach_work_error
#undef _
};

typedef enum { WORK_NEXT_LOOKUP, WORK_NEXT_RECIRC, WORK_N_NEXT } work_next_t;

typedef struct { uint32_t hash; uint16_t recirc; } work_trace_t;

static int format_work_trace(char *s, size_t n, const void *rec)
{
	const work_trace_t *t = rec;
	return snprintf(s, n, "hash 0x%08x recirculations %u", t->hash, t->recirc);
}

#define WORK_REGS 1024
typedef struct {
	uint32_t *table, mask;
	uint64_t regs[WORK_REGS];
	struct vf_work_cfg cfg;
	int hw_crc;
} work_state_t;

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		crc_table[i] = c;
	}
}

static inline uint32_t crc32c_sw(uint32_t c, uint32_t v)
{
	for (int k = 0; k < 4; k++, v >>= 8)
		c = crc_table[(c ^ v) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw4(uint32_t c, const uint32_t *v)
{
	c = __builtin_ia32_crc32si(c, v[0]);
	c = __builtin_ia32_crc32si(c, v[1]);
	c = __builtin_ia32_crc32si(c, v[2]);
	return __builtin_ia32_crc32si(c, v[3]);
}
#endif

static inline uint32_t crc32c4(int hw, uint32_t c, const uint32_t *v)
{
#if defined(__x86_64__)
	if (hw)
		return crc32c_hw4(c, v);
#else
	(void)hw;
#endif
	for (int k = 0; k < 4; k++)
		c = crc32c_sw(c, v[k]);
	return c;
}

/* Bob Jenkins' lookup3 final mix over three words (the "jhash_3words"
 * DPDK offers), written from the published algorithm. */
static inline uint32_t rol32(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }
static inline uint32_t jhash3(uint32_t a, uint32_t b, uint32_t c, uint32_t seed)
{
	a += 0xdeadbeef + 12 + seed;
	b += 0xdeadbeef + 12 + seed;
	c += 0xdeadbeef + 12 + seed;
	c ^= b; c -= rol32(b, 14);
	a ^= c; a -= rol32(c, 11);
	b ^= a; b -= rol32(a, 25);
	c ^= b; c -= rol32(b, 16);
	a ^= c; a -= rol32(c, 4);
	b ^= a; b -= rol32(a, 14);
	c ^= b; c -= rol32(b, 24);
	return c;
}

static int work_init(vf_worker_t *w, vf_node_rt_t *rt)
{
	const struct vf_config *c = w->cfg;
	if (c->mode != VF_MODE_WORK)
		return 0;
	work_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -12;
	uint32_t size = 1;
	while (size < c->work.table_size)
		size <<= 1;
	s->table = malloc((size_t)size * sizeof(uint32_t));
	if (!s->table) {
		free(s);
		return -12;
	}
	uint64_t x = 0x12345678u + w->id;
	for (uint32_t i = 0; i < size; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		s->table[i] = (uint32_t)x;
	}
	s->mask = size - 1;
	s->cfg = c->work;
	crc_init();
#if defined(__x86_64__)
	s->hw_crc = __builtin_cpu_supports("sse4.2");
#endif
	rt->state = s;
	return 0;
}

static void work_fini(void *state)
{
	free(((work_state_t *)state)->table);
}

VF_INLINE uint16_t work_one(work_state_t *s, vf_buf_t *b, const uint8_t *ip)
{
	const struct vf_work_cfg *c = &s->cfg;
	uint32_t t[4];
	memcpy(t, ip + 12, 8);                  /* src, dst */
	uint32_t l4 = (ip[0] & 15u) * 4;
	t[2] = 0;                               /* ports (l4 header start), if there */
	if (vf_rd16(ip + 2) >= l4 + 4)          /* ip4-input checked the total length */
		memcpy(&t[2], ip + l4, 4);
	t[3] = ip[9];
	uint32_t h = t[0] ^ t[1] ^ t[2] ^ t[3];
	for (uint32_t i = 0; i < c->lookups; i++)
		h += s->table[(h ^ i) & s->mask];
	for (uint32_t i = 0; i < c->hashes; i++)
		h = c->jhash ? jhash3(t[0] ^ h, t[1], t[2], t[3]) : crc32c4(s->hw_crc, h, t);
	for (uint32_t i = 0; i < c->arith; i++)
		h = h * 2654435761u + i;
	for (uint32_t i = 0; i < c->regs; i++)
		s->regs[(h + i) & (WORK_REGS - 1)] += h;
	b->hash = h;
	if (b->recirc < c->recirc) {
		b->recirc++;
		return WORK_NEXT_RECIRC;
	}
	return WORK_NEXT_LOOKUP;
}

static uint32_t work_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	work_state_t *s = rt->state;
	vf_pool_t *pool = &w->pool;
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n;

	for (uint32_t i = 0; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		next[i] = work_one(s, b, vf_buf_data(pool, bi[i]) + b->l3);
	}
	if (VF_UNLIKELY(w->tracing))
		for (uint32_t i = 0; i < n && w->tracing; i++) {
			work_trace_t t = { pool->meta[bi[i]].hash, pool->meta[bi[i]].recirc };
			vf_trace_add(w, rt, bi[i], &t, sizeof(t));
		}
	vf_enqueue(w, rt, bi, next, n);
	return n;
}

static const char *const work_next_nodes[] = {
	[WORK_NEXT_LOOKUP] = "ip4-lookup",
	[WORK_NEXT_RECIRC] = "ethernet-input",
};

static vf_node_t work_node = {
	.name = "work",
	.fn = work_node_fn,
	.n_next = WORK_N_NEXT,
	.next_names = work_next_nodes,
	.n_errors = WORK_N_ERROR,
	.error_names = work_error_strings,
	.format_trace = format_work_trace,
	.init = work_init,
	.fini = work_fini,
};
VF_REGISTER_NODE(work_node)
