/* SPDX-License-Identifier: MIT */
/*
 * afxdp backend: AF_XDP sockets (libxdp xsk), copy mode (what veth offers;
 * a NIC driver with zero-copy support would take XDP_ZEROCOPY instead).
 * One socket per port (queue 0) serves every stream of that port: its
 * umem is split in RX frames (fill/rx rings, owned by the port's receiver
 * thread) and TX frames (tx/completion rings, used under a lock by the TX
 * threads). TX frames are written by fg_pkt_write() in place and sent by
 * kicking the socket; RX frames are counted with fg_urx, timestamped when
 * the busy-polling receiver takes them off the ring.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "fwdgen.h"
#include "urx.h"

#define AFX_FRAME 4096u
#define AFX_RX_FRAMES 2048u
#define AFX_TX_FRAMES 2048u
#define AFX_RING 2048u
#define AFX_RX_BURST 64u

struct afx_port {
	struct fg_run *r;
	int port;
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	int has_rx;
	pthread_mutex_t tx_lock;
	uint64_t tx_free[AFX_TX_FRAMES]; /* stack of free TX frame addresses */
	uint32_t n_free;
	/* receiver */
	pthread_t th;
	int started, cpu;
	uint64_t drops0;                 /* XDP_STATISTICS drops at start */
};

struct afx {
	struct afx_port *ports[FG_MAX_PORTS];
	struct fg_urx u;
	int running;
	int have_urx;
};

struct afx_tx {
	struct afx_port *p;
	uint32_t seq, flow, phase;
};

static struct afx *afx_get(struct fg_run *r)
{
	if (!r->afxdp)
		r->afxdp = calloc(1, sizeof(struct afx));
	return r->afxdp;
}

/* Create the port's socket once; with_rx: also an RX ring and libxdp's
 * redirect program on the port. */
static int afx_port_open(struct fg_run *r, int port, int with_rx, char *err, size_t errlen)
{
	struct afx *x = afx_get(r);
	struct fg_port_rt *pr = &r->ports[port];
	struct xsk_umem_config uc = {
		.fill_size = AFX_RING, .comp_size = AFX_RING,
		.frame_size = AFX_FRAME, .frame_headroom = 0,
	};
	struct xsk_socket_config sc = {
		.rx_size = AFX_RING, .tx_size = AFX_RING,
		.libxdp_flags = with_rx ? 0 : XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = XDP_FLAGS_DRV_MODE,
		.bind_flags = XDP_COPY,
	};
	struct afx_port *p;
	size_t size = (size_t)(AFX_RX_FRAMES + AFX_TX_FRAMES) * AFX_FRAME;
	uint32_t i, idx;
	int rc;

	if (!x)
		return -ENOMEM;
	if (x->ports[port])
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	x->ports[port] = p;
	p->r = r;
	p->port = port;
	p->has_rx = with_rx;
	pthread_mutex_init(&p->tx_lock, NULL);
	if (posix_memalign(&p->area, (size_t)getpagesize(), size)) {
		p->area = NULL;
		return -ENOMEM;
	}
	memset(p->area, 0, size);
	rc = xsk_umem__create(&p->umem, p->area, size, &p->fill, &p->comp, &uc);
	if (rc) {
		fg_errf(err, errlen, "afxdp: xsk_umem__create(%s): %s", pr->sp->ifname, strerror(-rc));
		return rc;
	}
	rc = xsk_socket__create(&p->xsk, pr->sp->ifname, 0, p->umem, with_rx ? &p->rx : NULL,
				&p->tx, &sc);
	if (rc) {
		fg_errf(err, errlen, "afxdp: xsk_socket__create(%s, queue 0): %s", pr->sp->ifname,
			strerror(-rc));
		return rc;
	}
	for (i = 0; i < AFX_TX_FRAMES; i++)
		p->tx_free[i] = (uint64_t)(AFX_RX_FRAMES + i) * AFX_FRAME;
	p->n_free = AFX_TX_FRAMES;
	if (with_rx) {
		if (xsk_ring_prod__reserve(&p->fill, AFX_RX_FRAMES, &idx) != AFX_RX_FRAMES) {
			fg_errf(err, errlen, "afxdp: fill ring of %s too small", pr->sp->ifname);
			return -ENOSPC;
		}
		for (i = 0; i < AFX_RX_FRAMES; i++)
			*xsk_ring_prod__fill_addr(&p->fill, idx + i) = (uint64_t)i * AFX_FRAME;
		xsk_ring_prod__submit(&p->fill, AFX_RX_FRAMES);
	}
	return 0;
}

/* ---- TX ------------------------------------------------------------- */

static int afx_tx_open(struct fg_run *r, struct fg_stream_rt *s, char *err, size_t errlen)
{
	struct fg_port_rt *pr = &r->ports[s->tx_port];
	struct afx_tx *t;
	int rc;

	if (s->tmpl_len > AFX_FRAME) {
		fg_errf(err, errlen, "afxdp: frames of %u B do not fit a %u B umem frame (%s)",
			s->tmpl_len, AFX_FRAME, pr->sp->ifname);
		return -EINVAL;
	}
	/* the port's receiver, if any, is opened first (open_all order) */
	rc = afx_port_open(r, s->tx_port, 0, err, errlen);
	if (rc)
		return rc;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->p = ((struct afx *)r->afxdp)->ports[s->tx_port];
	s->txp = t;
	return 0;
}

static void afx_tx_set_phase(struct fg_stream_rt *s, uint32_t phase)
{
	struct afx_tx *t = s->txp;

	t->phase = phase;
	t->seq = 0;
	t->flow = 0;
}

static void afx_reclaim(struct afx_port *p)
{
	uint32_t idx, n = xsk_ring_cons__peek(&p->comp, AFX_RING, &idx), i;

	for (i = 0; i < n; i++)
		p->tx_free[p->n_free++] = *xsk_ring_cons__comp_addr(&p->comp, idx + i);
	xsk_ring_cons__release(&p->comp, n);
}

static int64_t afx_tx_burst(struct fg_stream_rt *s, uint32_t n)
{
	struct afx_tx *t = s->txp;
	struct afx_port *p = t->p;
	uint32_t idx, k, i, ts, tries;
	int64_t done = 0;

	pthread_mutex_lock(&p->tx_lock);
	afx_reclaim(p);
	k = n < p->n_free ? n : p->n_free;
	k = xsk_ring_prod__reserve(&p->tx, k, &idx);
	ts = (uint32_t)fg_now_ns();
	for (i = 0; i < k; i++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&p->tx, idx + i);
		uint64_t addr = p->tx_free[--p->n_free];
		uint8_t *f = xsk_umem__get_data(p->area, addr);

		/* frames are rewritten whole: a TX frame may hold anything */
		memcpy(f, s->tmpl, s->tmpl_len);
		d->addr = addr;
		d->len = fg_pkt_write(&s->pc, &s->k, f, t->phase, t->seq + i, t->flow, ts);
		if (++t->flow >= s->pc.flow.flows)
			t->flow = 0;
	}
	xsk_ring_prod__submit(&p->tx, k);
	t->seq += k;
	done = k;
	/* copy mode sends a bounded number of frames per kick: kick until the
	 * kernel has taken them all */
	for (tries = 0; tries < 1000 && p->n_free < AFX_TX_FRAMES; tries++) {
		if (sendto(xsk_socket__fd(p->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
		    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR) {
			done = done ? done : -errno;
			break;
		}
		afx_reclaim(p);
	}
	pthread_mutex_unlock(&p->tx_lock);
	return done;
}

static void afx_tx_close(struct fg_stream_rt *s)
{
	free(s->txp);
	s->txp = NULL;
}

const struct fg_txops fg_afx_txops = {
	.name = "afxdp",
	.open = afx_tx_open,
	.set_phase = afx_tx_set_phase,
	.burst = afx_tx_burst,
	.close = afx_tx_close,
	.max_burst = AFX_TX_FRAMES,
	.burst_cap = 256,
	.min_period_ns = 100000,
};

/* ---- RX ------------------------------------------------------------- */

static void *afx_rx_main(void *arg)
{
	struct afx_port *p = arg;
	struct fg_run *r = p->r;
	struct afx *x = r->afxdp;

	if (p->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(p->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (__atomic_load_n(&x->running, __ATOMIC_ACQUIRE)) {
		uint32_t idx, fidx, n, i, now;

		n = xsk_ring_cons__peek(&p->rx, AFX_RX_BURST, &idx);
		if (!n) {
			if (xsk_ring_prod__needs_wakeup(&p->fill))
				recvfrom(xsk_socket__fd(p->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
			fg_cpu_relax();
			continue;
		}
		now = (uint32_t)fg_now_ns();
		for (i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&p->rx, idx + i);

			fg_urx_frame(&x->u, r, &fg_afx_rxops, p->port,
				     xsk_umem__get_data(p->area, d->addr), d->len, now);
		}
		/* give the frames back to the kernel */
		while (xsk_ring_prod__reserve(&p->fill, n, &fidx) != n)
			fg_cpu_relax();
		for (i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&p->fill, fidx + i) =
				xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&p->rx, idx + i)->addr);
		xsk_ring_prod__submit(&p->fill, n);
		xsk_ring_cons__release(&p->rx, n);
	}
	return NULL;
}

/* Frames the socket could not take (ring full, no fill buffer). */
static uint64_t afx_drops(struct afx_port *p)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);

	memset(&st, 0, sizeof(st));
	if (getsockopt(xsk_socket__fd(p->xsk), SOL_XDP, XDP_STATISTICS, &st, &len))
		return 0;
	return st.rx_dropped + st.rx_ring_full + st.rx_fill_ring_empty_descs;
}

static void afx_stop_receivers(struct fg_run *r, struct afx *x)
{
	int i;

	__atomic_store_n(&x->running, 0, __ATOMIC_RELEASE);
	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct afx_port *p = x->ports[i];
		uint64_t d;

		if (!p || !p->started)
			continue;
		pthread_join(p->th, NULL);
		p->started = 0;
		d = afx_drops(p) - p->drops0;
		if (d && r)
			fg_warn(r, "afxdp: the receiver socket on %s dropped %llu frames (ring full): "
				"loss on streams received there includes them; pin the receiver "
				"(spec.cpus.rx) or use the xdp backend", r->ports[i].sp->ifname,
				(unsigned long long)d);
	}
}

static void afx_close(struct fg_run *r)
{
	struct afx *x = r->afxdp;
	int i;

	if (!x)
		return;
	afx_stop_receivers(NULL, x);
	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct afx_port *p = x->ports[i];

		if (!p)
			continue;
		if (p->xsk)
			xsk_socket__delete(p->xsk); /* also removes libxdp's program */
		if (p->umem)
			xsk_umem__delete(p->umem);
		free(p->area);
		pthread_mutex_destroy(&p->tx_lock);
		free(p);
	}
	if (x->have_urx)
		fg_urx_free(&x->u);
	free(x);
	r->afxdp = NULL;
}

static int afx_rx_open(struct fg_run *r, char *err, size_t errlen)
{
	struct afx *x;
	int i, rc, ncpu = 0, any = 0;

	for (i = 0; i < r->nstreams; i++)
		if (r->streams[i]->rxo == &fg_afx_rxops)
			any = 1;
	if (!any)
		return 0;
	x = afx_get(r);
	if (!x)
		return -ENOMEM;
	x->running = 1;
	rc = fg_urx_init(&x->u, r, &fg_afx_rxops, err, errlen);
	x->have_urx = 1;
	if (rc)
		return rc;
	for (i = 0; i < r->nports; i++) {
		struct fg_port_rt *pr = &r->ports[i];
		struct afx_port *p;

		if (!pr->rx_used || pr->backend != FG_BACKEND_AFXDP)
			continue;
		rc = afx_port_open(r, i, 1, err, errlen);
		if (rc)
			return rc;
		p = x->ports[i];
		p->cpu = r->sp->nrx_cpus ? r->sp->rx_cpus[ncpu++ % r->sp->nrx_cpus] : -1;
		p->drops0 = afx_drops(p);
		rc = pthread_create(&p->th, NULL, afx_rx_main, p);
		if (rc) {
			fg_errf(err, errlen, "afxdp: pthread_create for %s: %s", pr->sp->ifname,
				strerror(rc));
			return -rc;
		}
		p->started = 1;
	}
	return 0;
}

static void afx_rx_set_phase(struct fg_run *r, uint32_t phase)
{
	struct afx *x = r->afxdp;

	if (x && x->have_urx)
		__atomic_store_n(&x->u.phase, phase, __ATOMIC_RELEASE);
}

static uint64_t afx_rx_packets(struct fg_run *r, int stream)
{
	struct afx *x = r->afxdp;

	return __atomic_load_n(&x->u.live[stream], __ATOMIC_RELAXED);
}

static int afx_rx_collect(struct fg_run *r, int stream, struct fg_rx_final *o)
{
	struct afx *x = r->afxdp;

	afx_stop_receivers(r, x);
	return fg_urx_collect(&x->u, stream, o);
}

const struct fg_rxops fg_afx_rxops = {
	.name = "afxdp",
	.open = afx_rx_open,
	.set_phase = afx_rx_set_phase,
	.packets = afx_rx_packets,
	.collect = afx_rx_collect,
	.close = afx_close,
};
