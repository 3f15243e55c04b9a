/* SPDX-License-Identifier: MIT */
/*
 * AF_XDP ports (libxdp's xsk API). The worker's buffer pool is the UMEM,
 * shared by the worker's sockets on every port (xsk_socket__create_shared,
 * one fill/completion ring pair per socket): a chunk received on one port
 * is put as is on another port's TX ring, and comes back to the pool from
 * that port's completion ring. On veth this runs in copy mode (XDP_COPY):
 * the kernel copies into and out of the UMEM, vfwd never copies.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include "vf_port.h"

struct xdp_q {
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx, comp;
	struct xsk_ring_prod tx, fill;
	uint32_t ring;              /* rx/tx size; fill/comp are twice it */
	uint32_t depth;             /* chunks to keep in fill + rx (fill-depth, <= 2 x ring) */
	uint32_t in_kernel;         /* chunks in fill + rx */
	uint32_t tx_pending;        /* chunks in tx + completion */
	uint32_t kick_fail;
};

/* one UMEM per worker, over its pool */
static struct {
	struct xsk_umem *umem;
	int users;
} umems[VF_MAX_WORKERS];

static inline uint32_t chunk_of(uint64_t addr) { return (uint32_t)(addr / VF_BUF_SIZE); }

static void xdp_refill(struct xdp_q *q, vf_worker_t *w)
{
	if (q->in_kernel >= q->depth)
		return;
	uint32_t want = q->depth - q->in_kernel, idx;
	if (want > w->pool.n_free)
		want = w->pool.n_free;
	/* keep some buffers for the other ports and the graph */
	if (w->pool.n_free - want < 64)
		want = w->pool.n_free > 64 ? w->pool.n_free - 64 : 0;
	if (!want)
		return;
	uint32_t got = xsk_ring_prod__reserve(&q->fill, want, &idx);
	if (!got)
		return;
	uint32_t bi[512];
	for (uint32_t done = 0; done < got;) {
		uint32_t k = got - done > 512 ? 512 : got - done;
		k = vf_alloc(&w->pool, bi, k);
		for (uint32_t i = 0; i < k; i++)
			*xsk_ring_prod__fill_addr(&q->fill, idx++) = (uint64_t)bi[i] * VF_BUF_SIZE;
		done += k;
	}
	xsk_ring_prod__submit(&q->fill, got);
	q->in_kernel += got;
}

static void xdp_complete(struct xdp_q *q, vf_worker_t *w)
{
	uint32_t idx, bi[512];
	uint32_t n = xsk_ring_cons__peek(&q->comp, 512, &idx);
	if (!n)
		return;
	for (uint32_t i = 0; i < n; i++)
		bi[i] = chunk_of(*xsk_ring_cons__comp_addr(&q->comp, idx + i));
	xsk_ring_cons__release(&q->comp, n);
	vf_free(&w->pool, bi, n);
	q->tx_pending -= n;
}

/* Measured (strace, lab at 0.6 Mpps, vectors of ~200): ~6.5 sendto() per
 * TX burst, all but the last answering EAGAIN after one batch of 32 (the
 * kernel's copy-mode TX batch): no spinning, the time is the kernel's
 * per-frame transmit work. */
static void xdp_kick(vf_port_t *p, struct xdp_q *q)
{
	if (!xsk_ring_prod__needs_wakeup(&q->tx))
		return;
	/* copy mode sends a batch per call and answers EAGAIN while more wait */
	for (int k = 0; k < 64; k++) {
		if (sendto(p->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			break;
		if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) {
			q->kick_fail++;
			break;
		}
		if (errno != EAGAIN)
			break;
	}
}

static uint32_t xdp_rx(vf_port_t *p, vf_worker_t *w, uint32_t *bi, uint32_t n)
{
	struct xdp_q *q = p->priv;
	uint32_t idx;
	uint32_t got = xsk_ring_cons__peek(&q->rx, n, &idx);
	if (got) {
		vf_buf_t *meta = w->pool.meta;
		uint64_t bytes = 0;
		for (uint32_t i = 0; i < got; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + i);
			uint32_t c = chunk_of(d->addr);
			vf_buf_t *b = &meta[c];
			b->data = (uint16_t)(d->addr - (uint64_t)c * VF_BUF_SIZE);
			b->len = (uint16_t)d->len;
			b->rx_port = (uint16_t)p->index;
			b->recirc = 0;
			b->flags = 0;
			b->error = 0;
			bi[i] = c;
			bytes += d->len;
		}
		xsk_ring_cons__release(&q->rx, got);
		q->in_kernel -= got;
		p->rx_packets += got;
		p->rx_bytes += bytes;
	}
	xdp_refill(q, w);
	if (xsk_ring_prod__needs_wakeup(&q->fill))
		recvfrom(p->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	return got;
}

static void xdp_tx(vf_port_t *p, vf_worker_t *w, const uint32_t *bi, uint32_t n)
{
	struct xdp_q *q = p->priv;
	uint32_t idx;
	xdp_complete(q, w);
	uint32_t room = xsk_prod_nb_free(&q->tx, n);
	uint32_t k = n < room ? n : room;
	if (k && xsk_ring_prod__reserve(&q->tx, k, &idx) == k) {
		const vf_buf_t *meta = w->pool.meta;
		uint64_t bytes = 0;
		for (uint32_t i = 0; i < k; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&q->tx, idx + i);
			d->addr = (uint64_t)bi[i] * VF_BUF_SIZE + meta[bi[i]].data;
			d->len = meta[bi[i]].len;
			d->options = 0;
			bytes += d->len;
		}
		xsk_ring_prod__submit(&q->tx, k);
		q->tx_pending += k;
		p->tx_packets += k;
		p->tx_bytes += bytes;
	} else {
		k = 0;
	}
	if (k < n) {
		vf_free(&w->pool, bi + k, n - k);
		p->tx_dropped += n - k;
	}
	xdp_kick(p, q);
}

static void xdp_poll(vf_port_t *p, vf_worker_t *w)
{
	struct xdp_q *q = p->priv;
	xdp_complete(q, w);
	if (q->tx_pending)
		xdp_kick(p, q);
	xdp_refill(q, w);
}

static void xdp_kstats(vf_port_t *p, uint64_t out[4])
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);
	memset(&st, 0, sizeof(st));
	if (getsockopt(p->fd, SOL_XDP, XDP_STATISTICS, &st, &len) == 0) {
		out[0] += st.rx_dropped;
		out[1] += st.rx_ring_full;
		out[2] += st.rx_fill_ring_empty_descs;
		out[3] += st.tx_invalid_descs;
	}
}

static void xdp_close(vf_port_t *p, vf_worker_t *w)
{
	struct xdp_q *q = p->priv;
	if (!q)
		return;
	if (q->xsk)
		xsk_socket__delete(q->xsk);
	free(q);
	p->priv = NULL;
	if (umems[w->id].umem && --umems[w->id].users == 0) {
		xsk_umem__delete(umems[w->id].umem);
		umems[w->id].umem = NULL;
	}
}

int vf_port_xdp_open(vf_port_t *p, vf_worker_t *w, const struct vf_config *c, char *err,
		     size_t errlen)
{
	struct xdp_q *q = calloc(1, sizeof(*q));
	int rc;
	if (!q) {
		snprintf(err, errlen, "port %u (%s): out of memory", p->index, p->ifname);
		return -ENOMEM;
	}
	q->ring = c->ring_size;
	q->depth = c->fill_depth;   /* the config checked that the fill ring holds it */
	if (w->pool.stride != VF_BUF_SIZE) {
		snprintf(err, errlen, "port %u (%s): the worker's pool is not a UMEM", p->index,
			 p->ifname);
		free(q);
		return -EINVAL;
	}
	if (!umems[w->id].umem) {
		struct xsk_umem_config uc = {
			.fill_size = 2 * q->ring,
			.comp_size = 2 * q->ring,
			.frame_size = VF_BUF_SIZE,
			.frame_headroom = 0,
			.flags = 0,
		};
		rc = xsk_umem__create(&umems[w->id].umem, w->pool.mem,
				      (uint64_t)w->pool.n * VF_BUF_SIZE, &q->fill, &q->comp, &uc);
		if (rc) {
			umems[w->id].umem = NULL;
			snprintf(err, errlen, "xsk_umem__create (worker %u, %u buffers) failed: %s",
				 w->id, w->pool.n, strerror(-rc));
			free(q);
			return rc;
		}
	}
	struct xsk_socket_config sc = {
		.rx_size = q->ring,
		.tx_size = q->ring,
		.xdp_flags = XDP_FLAGS_DRV_MODE,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	rc = xsk_socket__create_shared(&q->xsk, p->ifname, w->id, umems[w->id].umem, &q->rx,
				       &q->tx, &q->fill, &q->comp, &sc);
	if (rc) {
		/* no native XDP on this device: generic (skb) mode */
		sc.xdp_flags = XDP_FLAGS_SKB_MODE;
		int rc2 = xsk_socket__create_shared(&q->xsk, p->ifname, w->id, umems[w->id].umem,
						    &q->rx, &q->tx, &q->fill, &q->comp, &sc);
		if (rc2) {
			snprintf(err, errlen, "xsk_socket__create_shared(%s, queue %u) failed: "
				 "%s (native), %s (generic)", p->ifname, w->id, strerror(-rc),
				 strerror(-rc2));
			q->xsk = NULL;
			umems[w->id].users++;
			p->priv = q;
			xdp_close(p, w);
			return rc2;
		}
	}
	umems[w->id].users++;
	p->priv = q;
	p->fd = xsk_socket__fd(q->xsk);
	p->rx = xdp_rx;
	p->tx = xdp_tx;
	p->poll = xdp_poll;
	p->close = xdp_close;
	p->kstats = xdp_kstats;
	p->drv = VF_PORT_XDP;
	xdp_refill(q, w);
	return 0;
}
