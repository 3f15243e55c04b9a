/* SPDX-License-Identifier: MIT */
/*
 * memif ports (FD.io's shared-memory packet interface, through libmemif
 * from VPP's source): user-space to user-space, no kernel on the path.
 *
 * As the slave (the default) vfwd brings the shared memory, and that memory
 * is the worker's buffer pool itself (a memfd, vf_pool_init_shared, handed
 * to libmemif as an external region): the master writes received frames
 * straight into vfwd buffers, and vfwd transmits a buffer by putting its
 * offset on the S2M ring. Zero copy both ways, as with AF_XDP's UMEM:
 *   RX: the M2S ring is refilled with free pool buffers (libmemif asks for
 *       each slot's offset: ext_offset); a received descriptor's data
 *       pointer gives the buffer index; fill-depth buffers at most wait in
 *       the ring.
 *   TX: each S2M slot gets the transmitted buffer's offset (ext_offset
 *       again), the ring slot -> buffer map is kept, and buffers come back
 *       to the pool once the master's tail passed them.
 * libmemif sizes the region for one ring pair, 2 x ring-size buffers of
 * 2048 B, so that is the pool; the master maps all of it, so buffers move
 * between memif ports (a pool per worker, one worker) without a copy.
 * As the master vfwd maps the peer's memory and copies frames in and out
 * of its pool (a master cannot put its own buffers on a slave's rings).
 *
 * Threads: the worker alone touches its memif ports, control events too
 * (between bursts, or when idle): no locks. A connection that ends gives
 * every buffer on its rings back to the pool at once; a slave asks again
 * every RETRY_MS, so a generator that comes and goes per trial (fwdgen, the
 * master) finds vfwd back within that.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "vf_port.h"

void vf_memif_default_mac(uint32_t port, uint8_t mac[6])
{
	static const uint8_t base[6] = { 0x02, 0xfb, 0x76, 0x66, 0x00, 0x00 };
	memcpy(mac, base, 6);
	mac[5] = (uint8_t)(port + 1);
}

#ifdef FG_HAVE_MEMIF

#include "fg_memif.h"

#define RETRY_MS 20            /* a slave asks a missing master this often */
#define CTL_EVERY 256          /* rx calls between looks at control events */
#define REFILL_RESERVE 64      /* buffers kept for the other ports and the graph */

enum { CB_NONE, CB_RX, CB_TX };

struct mif_q {
	struct fg_mif_if mi;
	vf_port_t *p;
	vf_worker_t *w;
	int zc;                    /* slave: the pool is the region */
	int owner;                 /* services the worker's control events */
	int epfd;                  /* p->fd: control events + the RX eventfd */
	int rx_efd;
	uint32_t ring, mask, depth;
	uint32_t tx_cap;           /* S2M slots holding pool buffers at most */
	uint32_t tick;
	int in_chain;              /* dropping the rest of a chained frame */
	/* zero copy: ring slot -> pool buffer */
	uint32_t *rx_slot, *tx_slot;
	uint32_t rx_head, rx_tail; /* M2S slots given to the master / received */
	uint32_t tx_next, tx_done; /* S2M slots filled / seen consumed */
	volatile memif_ring_t *txr;
	/* ext_offset's buffers for the call in progress */
	int cb_mode;
	const uint32_t *cb_bi;
	uint32_t cb_n, cb_k;
	/* counters */
	uint64_t chained, refill_short, rx_trunc;
	memif_buffer_t mb[VF_FRAME_SIZE];
};

/* one control plane per worker (memif ports run one worker) */
static struct {
	struct fg_mif_ctl ctl;
	int users;
} ctls[VF_MAX_WORKERS];

/* ---- the external region: the pool ------------------------------------ */

static int ext_add(void **addr, uint32_t size, int *fd, void *ctx)
{
	struct fg_mif_if *i = ctx;
	struct mif_q *q = i->user;
	vf_pool_t *pool = &q->w->pool;
	/* libmemif asks for its ring pair's buffers: 2 x ring x 2048 B, the
	 * pool's size by construction (vf_port_memif_open checked it) */
	if ((size_t)size > pool->map_len) {
		*addr = NULL;
		*fd = -1;
		return -1;
	}
	*addr = pool->mem;
	*fd = pool->fd;
	return 0;
}

static int ext_del(void *addr, uint32_t size, int fd, void *ctx)
{
	(void)addr, (void)size, (void)fd, (void)ctx;
	return 0;   /* the pool outlives every connection */
}

/* libmemif fills a slot: RX refill (the master will write there) or TX
 * (the frame to send). Slots come in ring order, so our counters mirror
 * libmemif's. */
static uint32_t ext_offset(void *ctx)
{
	struct fg_mif_if *i = ctx;
	struct mif_q *q = i->user;
	uint32_t b = q->cb_k < q->cb_n ? q->cb_bi[q->cb_k] : 0;
	q->cb_k++;
	if (q->cb_mode == CB_RX) {
		q->rx_slot[q->rx_head++ & q->mask] = b;
		return b * VF_BUF_SIZE + VF_BUF_HEADROOM;
	}
	q->tx_slot[q->tx_next++ & q->mask] = b;
	return b * VF_BUF_SIZE;
}

static const struct fg_mif_ext ext = {
	.add = ext_add, .get_addr = NULL, .del = ext_del, .buffer_offset = ext_offset,
};

/* ---- connection ------------------------------------------------------- */

/* Every buffer on the rings back to the pool (the connection ended). */
static void reclaim(struct mif_q *q)
{
	vf_pool_t *pool = &q->w->pool;
	for (; q->rx_tail != q->rx_head; q->rx_tail++)
		vf_free(pool, &q->rx_slot[q->rx_tail & q->mask], 1);
	for (; q->tx_done != q->tx_next; q->tx_done++)
		vf_free(pool, &q->tx_slot[q->tx_done & q->mask], 1);
	q->rx_head = q->rx_tail = q->tx_next = q->tx_done = 0;
	q->txr = NULL;
	q->in_chain = 0;
}

static void on_up(struct fg_mif_if *i)
{
	struct mif_q *q = i->user;
	const struct vf_config *c = q->w->cfg;
	int poll_mode = c->rx_mode == VF_RX_POLL;
	memif_set_rx_mode(i->conn, poll_mode ? MEMIF_RX_MODE_POLLING : MEMIF_RX_MODE_INTERRUPT, 0);
	reclaim(q);
	if (q->zc) {
		q->txr = fg_mif_slave_ring(i, 1);
		if (!q->txr)
			fprintf(stderr, "vfwd: port %u (%s): memif: no S2M ring in the region: "
				"transmit disabled\n", q->p->index, q->p->ifname);
	}
	q->rx_efd = -1;
	if (!poll_mode && memif_get_queue_efd(i->conn, 0, &q->rx_efd) == MEMIF_ERR_SUCCESS) {
		struct epoll_event ev = { .events = EPOLLIN };
		epoll_ctl(q->epfd, EPOLL_CTL_ADD, q->rx_efd, &ev);
	}
}

static void on_down(struct fg_mif_if *i)
{
	/* libmemif closes the eventfd (which leaves our epoll) and the rings */
	reclaim(i->user);
}

static void service(struct mif_q *q)
{
	if (!q->owner)
		return;
	for (int k = 0; k < 8 && fg_mif_poll(&ctls[q->w->id].ctl, 0) > 0; k++)
		;
}

/* ---- RX --------------------------------------------------------------- */

static void refill(struct mif_q *q, vf_worker_t *w)
{
	uint32_t bi[VF_FRAME_SIZE];
	while (q->rx_head - q->rx_tail < q->depth) {
		uint32_t want = q->depth - (q->rx_head - q->rx_tail);
		if (want > VF_FRAME_SIZE)
			want = VF_FRAME_SIZE;
		if (w->pool.n_free < REFILL_RESERVE + want)
			want = w->pool.n_free > REFILL_RESERVE ? w->pool.n_free - REFILL_RESERVE : 0;
		if (!want) {
			q->refill_short++;
			return;
		}
		want = vf_alloc(&w->pool, bi, want);
		q->cb_mode = CB_RX;
		q->cb_bi = bi;
		q->cb_n = want;
		q->cb_k = 0;
		memif_refill_queue(q->mi.conn, 0, (uint16_t)want, VF_BUF_HEADROOM);
		q->cb_mode = CB_NONE;
		if (q->cb_k < want) {   /* libmemif took fewer slots (not seen) */
			vf_free(&w->pool, bi + q->cb_k, want - q->cb_k);
			return;
		}
	}
}

static inline int take_segment(struct mif_q *q, const memif_buffer_t *m)
{
	int skip = q->in_chain || (m->flags & MEMIF_BUFFER_FLAG_NEXT);
	q->in_chain = (m->flags & MEMIF_BUFFER_FLAG_NEXT) != 0;
	if (skip)
		q->chained++;
	return !skip;
}

/* Every CTL_EVERY polls (and on every poll while down) the control channel
 * is served; 1: the link is up and the rings may be used. */
static inline int rx_ready(struct mif_q *q)
{
	if (VF_UNLIKELY(++q->tick >= CTL_EVERY || !q->mi.up)) {
		q->tick = 0;
		service(q);
	}
	return q->mi.up;
}

static uint32_t mif_rx_zc(vf_port_t *p, vf_worker_t *w, uint32_t *bi, uint32_t n)
{
	struct mif_q *q = p->priv;
	uint16_t got = 0;
	if (VF_UNLIKELY(!rx_ready(q)))
		return 0;
	/* polling: no eventfd read per empty poll (interrupt mode reads it, or
	 * the worker's poll() on it would never sleep) */
	if (q->rx_efd < 0 && !fg_mif_rx_pending(q->mi.conn)) {
		refill(q, w);
		return 0;
	}
	memif_rx_burst(q->mi.conn, 0, q->mb, (uint16_t)n, &got);
	uint32_t k = 0;
	uint64_t bytes = 0;
	vf_buf_t *meta = w->pool.meta;
	for (uint32_t i = 0; i < got; i++) {
		const memif_buffer_t *m = &q->mb[i];
		size_t off = (size_t)((uint8_t *)m->data - w->pool.mem);
		uint32_t b = (uint32_t)(off / VF_BUF_SIZE);
		if (VF_UNLIKELY(b >= w->pool.n))
			continue;   /* not a pool buffer: cannot happen, never freed */
		if (!take_segment(q, m)) {
			vf_free(&w->pool, &b, 1);
			continue;
		}
		vf_buf_t *x = &meta[b];
		x->data = (uint16_t)(off - (size_t)b * VF_BUF_SIZE);
		x->len = (uint16_t)m->len;
		x->rx_port = (uint16_t)p->index;
		x->recirc = 0;
		x->flags = 0;
		x->error = 0;
		bi[k++] = b;
		bytes += m->len;
	}
	q->rx_tail += got;
	p->rx_packets += k;
	p->rx_bytes += bytes;
	refill(q, w);
	return k;
}

/* master: the frames are in the peer's buffers; copied into the pool */
static uint32_t mif_rx_copy(vf_port_t *p, vf_worker_t *w, uint32_t *bi, uint32_t n)
{
	struct mif_q *q = p->priv;
	uint16_t got = 0;
	if (VF_UNLIKELY(!rx_ready(q)))
		return 0;
	if (n > w->pool.n_free)
		n = w->pool.n_free;
	if (q->rx_efd < 0 && !fg_mif_rx_pending(q->mi.conn))
		return 0;
	memif_rx_burst(q->mi.conn, 0, q->mb, (uint16_t)n, &got);
	uint32_t k = 0;
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < got; i++) {
		const memif_buffer_t *m = &q->mb[i];
		if (!take_segment(q, m))
			continue;
		if (VF_UNLIKELY(m->len > VF_BUF_SIZE - VF_BUF_HEADROOM)) {
			q->rx_trunc++;
			continue;
		}
		uint32_t b;
		if (!vf_alloc(&w->pool, &b, 1))
			break;
		vf_buf_t *x = &w->pool.meta[b];
		memcpy(vf_buf_data(&w->pool, b), m->data, m->len);
		x->len = (uint16_t)m->len;
		x->rx_port = (uint16_t)p->index;
		bi[k++] = b;
		bytes += m->len;
	}
	if (got)
		memif_refill_queue(q->mi.conn, 0, got, 0);
	p->rx_packets += k;
	p->rx_bytes += bytes;
	return k;
}

/* ---- TX --------------------------------------------------------------- */

/* Buffers the master consumed come back to the pool. */
static void complete(struct mif_q *q, vf_worker_t *w)
{
	if (!q->txr)
		return;
	uint16_t tail = __atomic_load_n(&q->txr->tail, __ATOMIC_ACQUIRE);
	uint32_t done = (uint16_t)(tail - (uint16_t)q->tx_done);
	for (uint32_t k = 0; k < done; k++, q->tx_done++)
		vf_free(&w->pool, &q->tx_slot[q->tx_done & q->mask], 1);
}

static void mif_tx_zc(vf_port_t *p, vf_worker_t *w, const uint32_t *bi, uint32_t n)
{
	struct mif_q *q = p->priv;
	uint16_t got = 0, sent = 0;
	uint32_t k = 0;
	if (VF_LIKELY(q->mi.up && q->txr)) {
		complete(q, w);
		uint32_t used = q->tx_next - q->tx_done;
		uint32_t room = used < q->tx_cap ? q->tx_cap - used : 0;
		k = n < room ? n : room;
	}
	if (k) {
		q->cb_mode = CB_TX;
		q->cb_bi = bi;
		q->cb_n = k;
		q->cb_k = 0;
		/* one byte each: a slot per frame (its length is set below) */
		memif_buffer_alloc(q->mi.conn, 0, q->mb, (uint16_t)k, &got, 1);
		q->cb_mode = CB_NONE;
		const vf_buf_t *meta = w->pool.meta;
		uint64_t bytes = 0;
		for (uint32_t i = 0; i < got; i++) {
			q->mb[i].data = vf_buf_data(&w->pool, bi[i]);
			q->mb[i].len = meta[bi[i]].len;
			bytes += meta[bi[i]].len;
		}
		if (got)
			memif_tx_burst(q->mi.conn, 0, q->mb, got, &sent);
		/* the slots took the buffers: from here the ring owns them */
		p->tx_packets += got;
		p->tx_bytes += bytes;
		k = got;
	}
	if (k < n) {
		vf_free(&w->pool, bi + k, n - k);
		p->tx_dropped += n - k;
	}
}

/* master: into the peer's buffers (a chain if its buffers are smaller) */
static void mif_tx_copy(vf_port_t *p, vf_worker_t *w, const uint32_t *bi, uint32_t n)
{
	struct mif_q *q = p->priv;
	uint32_t k = 0, segs = 0;
	uint64_t bytes = 0;
	for (; q->mi.up && k < n; k++) {
		uint16_t got = 0;
		uint32_t len = w->pool.meta[bi[k]].len, off = 0;
		const uint8_t *d = vf_buf_data(&w->pool, bi[k]);
		if (segs >= VF_FRAME_SIZE ||
		    memif_buffer_alloc(q->mi.conn, 0, q->mb + segs,
				       1, &got, (uint16_t)len) != MEMIF_ERR_SUCCESS ||
		    !got || segs + got > VF_FRAME_SIZE)
			break;
		for (uint32_t s = segs; s < segs + got; s++) {
			memcpy(q->mb[s].data, d + off, q->mb[s].len);
			off += q->mb[s].len;
		}
		segs += got;
		bytes += len;
	}
	uint16_t sent = 0;
	if (segs)
		memif_tx_burst(q->mi.conn, 0, q->mb, (uint16_t)segs, &sent);
	p->tx_packets += k;
	p->tx_bytes += bytes;
	p->tx_dropped += n - k;
	vf_free(&w->pool, bi, n);
}

/* ---- housekeeping ------------------------------------------------------ */

static void mif_poll(vf_port_t *p, vf_worker_t *w)
{
	struct mif_q *q = p->priv;
	service(q);
	if (q->mi.up && q->zc) {
		complete(q, w);
		refill(q, w);
	}
}

static void mif_kstats(vf_port_t *p, uint64_t out[4])
{
	struct mif_q *q = p->priv;
	out[0] += q->chained + q->rx_trunc;   /* received, not forwarded */
	out[2] += q->refill_short;           /* no free buffer for the RX ring */
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void mif_info(vf_port_t *p, FILE *out)
{
	struct mif_q *q = p->priv;
	fprintf(out, ", \"memif\": {\"socket\": ");
	json_str(out, q->mi.path);
	fprintf(out, ", \"id\": %u, \"role\": \"%s\", \"zero_copy\": %s, \"connected\": %s, "
		"\"connects\": %u, \"disconnects\": %u, \"ring_size\": %u, \"fill_depth\": %u, "
		"\"tx_cap\": %u, \"chained_dropped\": %llu, \"refill_short\": %llu}", q->mi.id,
		fg_mif_role(&q->mi), q->zc ? "true" : "false", q->mi.up ? "true" : "false", q->mi.ups,
		q->mi.downs, q->ring, q->depth, q->tx_cap, (unsigned long long)q->chained,
		(unsigned long long)q->refill_short);
}

static void mif_close(vf_port_t *p, vf_worker_t *w)
{
	struct mif_q *q = p->priv;
	if (!q)
		return;
	struct fg_mif_ctl *c = &ctls[w->id].ctl;
	fg_mif_del(c, &q->mi);
	reclaim(q);
	if (--ctls[w->id].users == 0)
		fg_mif_ctl_fini(c);   /* sockets, the listener's file, the fds */
	if (q->epfd >= 0)
		close(q->epfd);
	free(q->rx_slot);
	free(q->tx_slot);
	free(q);
	p->priv = NULL;
	p->fd = -1;
}

int vf_port_memif_open(vf_port_t *p, vf_worker_t *w, const struct vf_config *c, char *err,
		       size_t errlen)
{
	const struct vf_port_cfg *pc = &c->port[p->index];
	int log2 = fg_mif_log2_ring(c->ring_size);
	if (log2 < 0) {
		snprintf(err, errlen, "memif: ring-size %u is not a power of two in 2..16384",
			 c->ring_size);
		return -EINVAL;
	}
	struct mif_q *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->p = p;
	q->w = w;
	q->epfd = -1;
	q->rx_efd = -1;
	q->zc = !pc->memif_master;
	q->ring = c->ring_size;
	q->mask = q->ring - 1;
	/* RX buffers waiting for the master: half the ring unless fill-depth
	 * says (a pool of 2 x ring-size keeps the other half for TX and the
	 * graph). It is what absorbs the worker's absences: 256 lost frames
	 * at 0.2 Mpps through the router while this host's other work took
	 * the DUT CPU for a millisecond or two. */
	q->depth = c->fill_depth_set ? c->fill_depth : q->ring / 2;
	if (q->depth > q->ring)
		q->depth = q->ring;
	/* Frames waiting for the master to take them: the rest of this port's
	 * share of the pool. Two full S2M rings held the whole pool (2 x
	 * ring-size) while the generator was away, and the RX rings starved
	 * (1.9 M refills found no buffer in a 2 s trial). */
	q->tx_cap = q->ring;
	if (q->zc) {
		uint32_t nzc = 0;
		for (uint32_t i = 0; i < c->n_ports; i++)
			nzc += c->port[i].drv == VF_PORT_MEMIF && !c->port[i].memif_master;
		uint32_t share = w->pool.n / (nzc ? nzc : 1);
		q->tx_cap = share > q->depth + 2 * REFILL_RESERVE ? share - q->depth - REFILL_RESERVE
								  : REFILL_RESERVE;
		if (q->tx_cap > q->ring)
			q->tx_cap = q->ring;
	}
	if (q->zc && (w->pool.fd <= 0 || w->pool.stride != VF_BUF_SIZE ||
		      (uint64_t)w->pool.n * VF_BUF_SIZE < 2ull * q->ring * VF_BUF_SIZE)) {
		snprintf(err, errlen, "memif: the worker's pool is not the shared memory of a "
			 "ring pair (%u buffers)", 2 * q->ring);
		free(q);
		return -EINVAL;
	}
	q->rx_slot = calloc(q->ring, sizeof(uint32_t));
	q->tx_slot = calloc(q->ring, sizeof(uint32_t));
	q->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!q->rx_slot || !q->tx_slot || q->epfd < 0) {
		snprintf(err, errlen, "memif: out of memory or fds");
		if (q->epfd >= 0)
			close(q->epfd);
		free(q->rx_slot);
		free(q->tx_slot);
		free(q);
		return -ENOMEM;
	}
	struct fg_mif_ctl *ctl = &ctls[w->id].ctl;
	int rc;
	if (!ctls[w->id].users) {
		if ((rc = fg_mif_ctl_init(ctl, "vfwd", RETRY_MS, err, errlen))) {
			close(q->epfd);
			free(q->rx_slot);
			free(q->tx_slot);
			free(q);
			return rc;
		}
		q->owner = 1;
		/* the worker sleeps on this port's fd: control events wake it too */
		struct epoll_event ev = { .events = EPOLLIN };
		epoll_ctl(q->epfd, EPOLL_CTL_ADD, ctl->epfd, &ev);
	}
	ctls[w->id].users++;
	snprintf(q->mi.label, sizeof(q->mi.label), "port %u (%s)", p->index, p->ifname);
	snprintf(q->mi.path, sizeof(q->mi.path), "%s", pc->socket);
	q->mi.id = pc->memif_id;
	q->mi.master = pc->memif_master;
	q->mi.log2_ring = (uint8_t)log2;
	q->mi.buffer_size = VF_BUF_SIZE;
	q->mi.ext = q->zc ? &ext : NULL;
	q->mi.user = q;
	q->mi.on_up = on_up;
	q->mi.on_down = on_down;
	p->priv = q;
	p->fd = q->epfd;
	p->rx = q->zc ? mif_rx_zc : mif_rx_copy;
	p->tx = q->zc ? mif_tx_zc : mif_tx_copy;
	p->poll = mif_poll;
	p->close = mif_close;
	p->kstats = mif_kstats;
	p->info_json = mif_info;
	p->drv = VF_PORT_MEMIF;
	rc = fg_mif_add(ctl, &q->mi, err, errlen);
	if (rc) {
		mif_close(p, w);
		return rc;
	}
	return 0;
}

#else /* !FG_HAVE_MEMIF */

#ifndef FG_MEMIF_WHY
#define FG_MEMIF_WHY "built without libmemif"
#endif

int vf_port_memif_open(vf_port_t *p, vf_worker_t *w, const struct vf_config *c, char *err,
		       size_t errlen)
{
	(void)p, (void)w, (void)c;
	snprintf(err, errlen, "memif is not available in this vfwd: %s", FG_MEMIF_WHY);
	return -ENOTSUP;
}

#endif
