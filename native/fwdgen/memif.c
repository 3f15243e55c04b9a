/* SPDX-License-Identifier: MIT */
/*
 * memif backend: ports that are memif interfaces (FD.io's shared-memory
 * packet interface, through libmemif from VPP's source), not kernel
 * interfaces: user-space data planes (vfwd, VPP, DPDK's net_memif) connect
 * to them over a UNIX socket, and frames move through rings in shared
 * memory, no kernel on the path.
 *
 * fwdgen is the master by default: it listens on the port's socket and the
 * peer, the slave, brings the shared memory (rings and buffers); so a
 * zero-copy slave (vfwd, VPP) keeps its buffers. As master, TX writes each
 * frame into a buffer the slave put on the M2S ring (the frame is written
 * anyway, as in every fwdgen backend) and RX reads the slave's S2M buffers
 * in place. With role slave, fwdgen creates the memory and the same calls
 * do the same on the other rings.
 *
 * Threads: TX threads send under a per-port lock (streams of a port share
 * its ring); one RX thread per receiving port busy-polls its ring (the ring
 * is in polling mode: the peer's TX never writes an interrupt eventfd); a
 * control thread handles libmemif's control events holding every port's
 * locks, since a disconnect frees the rings. A peer that disconnects
 * mid-trial ends its port: TX fails (the trial exits 3), RX stops and the
 * trial fails when it is collected.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwdgen.h"
#include "urx.h"

void fg_memif_default_mac(int port, uint8_t mac[6])
{
	static const uint8_t base[6] = {0x02, 0xfb, 0x6d, 0x00, 0x00, 0x00};

	memcpy(mac, base, 6);
	mac[5] = (uint8_t)(port + 1);
}

#ifdef FG_HAVE_MEMIF

#include "fg_memif.h"

#define MIF_RX_BURST 256u
#define MIF_TX_SEGS (1u << FG_MIF_MAX_LOG2_RING) /* a burst fills a ring at most */
#define MIF_CTL_POLL_MS 50

int fg_memif_available(char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return 1;
}

struct mif_port {
	struct fg_run *r;
	int port;
	struct fg_mif_if mi;
	pthread_mutex_t tx_lock, rx_lock;
	memif_buffer_t *tb;          /* TX: the segments of one burst */
	uint8_t *scratch;            /* a chained frame is written here first */
	int gone;                    /* the peer went away during the trial */
	uint64_t full_drops;         /* measured frames the peer's full ring refused */
	int rx;                      /* frames are counted here */
	pthread_t th;
	int started, cpu;
	memif_buffer_t rb[MIF_RX_BURST];
	uint16_t have;               /* segments of a chain the last burst cut */
	uint64_t chained;            /* RX frames in more than one buffer */
};

struct mif {
	struct fg_mif_ctl ctl;
	int have_ctl;
	struct mif_port *ports[FG_MAX_PORTS];
	struct fg_urx u;
	int have_urx;
	int running;                 /* RX threads go on */
	int ctl_running;
	pthread_t ctl_th;
	int ctl_started;
	int trial;                   /* connected: a disconnect now ends the trial */
};

struct mif_tx {
	struct mif_port *p;
	uint32_t seq, flow, phase;
	int fixed;                   /* every frame has the template's length */
};

/* fg_mif_ctl's lock: every port's TX and RX lock, in port order */
static void lock_all(void *arg, int on)
{
	struct mif *m = arg;
	int i;

	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct mif_port *p = m->ports[i];

		if (!p)
			continue;
		if (on) {
			pthread_mutex_lock(&p->tx_lock);
			pthread_mutex_lock(&p->rx_lock);
		} else {
			pthread_mutex_unlock(&p->rx_lock);
			pthread_mutex_unlock(&p->tx_lock);
		}
	}
}

static void on_up(struct fg_mif_if *i)
{
	/* our RX ring in polling mode: the peer's TX writes no eventfd */
	memif_set_rx_mode(i->conn, MEMIF_RX_MODE_POLLING, 0);
}

static void on_down(struct fg_mif_if *i)
{
	struct mif_port *p = i->user;
	struct mif *m = p->r->memif;

	if (!m->trial)
		return; /* before the trial: the connect wait reports it */
	p->gone = 1;
	fprintf(stderr, "fwdgen: memif %s: %s mid-trial (socket %s, interface id %u, fwdgen "
		"%s); the trial fails\n", i->label, i->why, i->path, i->id, fg_mif_role(i));
}

/* ---- TX ------------------------------------------------------------- */

static int mif_tx_open(struct fg_run *r, struct fg_stream_rt *s, char *err, size_t errlen)
{
	struct mif *m = r->memif;
	struct mif_tx *t;

	if (!m || !m->ports[s->tx_port]) {
		fg_errf(err, errlen, "memif: port %s was not opened", r->ports[s->tx_port].sp->ifname);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->p = m->ports[s->tx_port];
	t->fixed = s->pc.frame_size != 0;
	s->txp = t;
	return 0;
}

static void mif_tx_set_phase(struct fg_stream_rt *s, uint32_t phase)
{
	struct mif_tx *t = s->txp;

	t->phase = phase;
	t->seq = 0;
	t->flow = 0;
}

/* Write the frame of segments b[0..n) (its length is the sum of theirs). */
static void write_frame(struct fg_stream_rt *s, struct mif_tx *t, memif_buffer_t *b,
			uint32_t n, uint32_t seq, uint32_t ts)
{
	uint32_t len, k, off;

	if (n == 1) { /* b->len: this frame's length (IMIX: below the template's) */
		memcpy(b->data, s->tmpl, b->len);
		b->len = fg_pkt_write(&s->pc, &s->k, b->data, t->phase, seq, t->flow, ts);
		return;
	}
	memcpy(t->p->scratch, s->tmpl, s->tmpl_len);
	len = fg_pkt_write(&s->pc, &s->k, t->p->scratch, t->phase, seq, t->flow, ts);
	for (k = 0, off = 0; k < n; k++) {
		uint32_t c = b[k].len < len - off ? b[k].len : len - off;

		memcpy(b[k].data, t->p->scratch + off, c);
		b[k].len = c;
		off += c;
	}
}

static int64_t mif_tx_burst(struct fg_stream_rt *s, uint32_t n)
{
	struct mif_tx *t = s->txp;
	struct mif_port *p = t->p;
	memif_conn_handle_t c = p->mi.conn;
	uint16_t segs = 0, got, sent = 0;
	uint32_t frames = 0, j, ts;
	int rc = MEMIF_ERR_SUCCESS;

	pthread_mutex_lock(&p->tx_lock);
	if (p->gone || !p->mi.up) {
		pthread_mutex_unlock(&p->tx_lock);
		return -ECONNRESET;
	}
	ts = (uint32_t)fg_now_ns();
	if (t->fixed) {
		/* one call for the burst: a frame larger than the peer's buffers
		 * comes as a chain of segments whose lengths add up to it */
		rc = memif_buffer_alloc(c, 0, p->tb, (uint16_t)n, &segs, (uint16_t)s->tmpl_len);
	} else {
		/* IMIX: each frame its own length */
		for (j = 0; j < n && rc == MEMIF_ERR_SUCCESS; j++) {
			uint32_t len = fg_pkt_frame_len(&s->pc, t->seq + j);

			got = 0;
			rc = memif_buffer_alloc(c, 0, p->tb + segs, 1, &got, (uint16_t)len);
			segs = (uint16_t)(segs + got);
		}
	}
	if (rc != MEMIF_ERR_SUCCESS && rc != MEMIF_ERR_NOBUF_RING) {
		pthread_mutex_unlock(&p->tx_lock);
		return -ECONNRESET;
	}
	for (j = 0; j < segs;) {
		uint32_t k = j;

		while (k + 1 < segs && (p->tb[k].flags & MEMIF_BUFFER_FLAG_NEXT))
			k++;
		write_frame(s, t, p->tb + j, k - j + 1, t->seq + frames, ts);
		if (++t->flow >= s->pc.flow.flows)
			t->flow = 0;
		frames++;
		j = k + 1;
	}
	rc = segs ? memif_tx_burst(c, 0, p->tb, segs, &sent) : MEMIF_ERR_SUCCESS;
	t->seq += frames;
	/* A paced stream sends as a wire does: the frames the peer's ring has
	 * no room for are lost there, as a NIC drops what its full RX ring
	 * cannot take, and the offered load stays the load (RFC 2544). Held
	 * back, they made a DUT that was slow for a moment look like a
	 * generator that fell behind. As fast as possible: what fits. */
	if (s->rate > 0 && frames < n) {
		uint32_t lost = n - frames;

		if (t->phase == FG_PHASE_MEASURE)
			p->full_drops += lost;
		t->seq += lost;
		t->flow = (uint32_t)((t->flow + (uint64_t)lost) % s->pc.flow.flows);
		frames = n;
	}
	pthread_mutex_unlock(&p->tx_lock);
	/* an interrupt that could not be written still sent the frames */
	if (rc != MEMIF_ERR_SUCCESS && rc != MEMIF_ERR_INT_WRITE)
		return -ECONNRESET;
	if (sent != segs)
		return -EIO; /* not seen: every segment allocated is sent in order */
	/* the ring is full: let the peer run if it shares our CPU (without it
	 * an unpinned loop made 0.12 Mpps: both spun through whole time slices,
	 * a ring per two slices) */
	if (!segs)
		sched_yield();
	return frames;
}

static void mif_tx_close(struct fg_stream_rt *s)
{
	free(s->txp);
	s->txp = NULL;
}

const struct fg_txops fg_mif_txops = {
	.name = "memif",
	.open = mif_tx_open,
	.set_phase = mif_tx_set_phase,
	.burst = mif_tx_burst,
	.close = mif_tx_close,
	/* Busy-waits between bursts: nothing of the kernel's shares the CPU
	 * (for afpacket/afxdp/xdp a NAPI thread may), and a sleeping TX thread
	 * on a busy host woke late: paced at 3 Mpps it offered 1.86 (as fast
	 * as possible, never sleeping: 6.9). */
	.spin = 1,
	.max_burst = 1024,
	.burst_cap = 256,
	.min_period_ns = 50000,
};

/* ---- RX ------------------------------------------------------------- */

/* Receive once: a burst counted and given back. Frames handled, or
 * -ECONNRESET when the peer is gone. */
static int rx_once(struct mif_port *p)
{
	struct fg_run *r = p->r;
	struct mif *m = r->memif;
	memif_buffer_t *b = p->rb;
	uint16_t got = 0, j, n, whole;
	uint32_t now;
	int rc;

	pthread_mutex_lock(&p->rx_lock);
	if (p->gone) {
		pthread_mutex_unlock(&p->rx_lock);
		return -ECONNRESET;
	}
	if (!fg_mif_rx_pending(p->mi.conn)) {
		pthread_mutex_unlock(&p->rx_lock);
		return 0;
	}
	rc = memif_rx_burst(p->mi.conn, 0, b + p->have, (uint16_t)(MIF_RX_BURST - p->have), &got);
	if (got) {
		n = (uint16_t)(p->have + got);
		whole = fg_mif_whole(b, n);
		if (!whole && n == MIF_RX_BURST)
			whole = n; /* a chain longer than a burst: counted broken */
		now = (uint32_t)fg_now_ns();
		for (j = 0; j < whole && j < 4; j++)
			__builtin_prefetch(b[j].data);
		for (j = 0; j < whole;) {
			uint32_t len = b[j].len, k = j;

			if (j + 4 < whole)
				__builtin_prefetch(b[j + 4].data);
			while (k + 1 < whole && (b[k].flags & MEMIF_BUFFER_FLAG_NEXT))
				len += b[++k].len;
			if (k > j)
				p->chained++;
			/* the signature is in the first segment (>= 128 B) */
			fg_urx_frame(&m->u, r, &fg_mif_rxops, p->port, b[j].data, len, now);
			j = (uint16_t)(k + 1);
		}
		/* the buffers go back in ring order: a cut chain's later */
		if (whole)
			memif_refill_queue(p->mi.conn, 0, whole, 0);
		p->have = (uint16_t)(n - whole);
		memmove(b, b + whole, p->have * sizeof(b[0]));
	}
	pthread_mutex_unlock(&p->rx_lock);
	if (!got && rc == MEMIF_ERR_DISCONNECTED)
		return -ECONNRESET;
	return got;
}

/* A receiver with a CPU of its own: spins, and yields after a long wait. */
static void *mif_rx_main(void *arg)
{
	struct mif_port *p = arg;
	struct mif *m = p->r->memif;
	unsigned idle = 0;

	if (p->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(p->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (__atomic_load_n(&m->running, __ATOMIC_ACQUIRE)) {
		int got = rx_once(p);

		if (got < 0)
			break;
		if (got)
			idle = 0;
		else if (++idle >= 64)
			sched_yield();
		else
			fg_cpu_relax();
	}
	return NULL;
}

/* A port received by the TX thread of its CPU (rx_inline). */
static int mif_rx_poll(struct fg_run *r, int port)
{
	struct mif *m = r->memif;

	return m && m->ports[port] ? rx_once(m->ports[port]) : 0;
}

static void *mif_ctl_main(void *arg)
{
	struct mif *m = arg;

	while (__atomic_load_n(&m->ctl_running, __ATOMIC_ACQUIRE))
		fg_mif_poll(&m->ctl, MIF_CTL_POLL_MS);
	return NULL;
}

static void mif_stop_threads(struct mif *m)
{
	int i;

	__atomic_store_n(&m->running, 0, __ATOMIC_RELEASE);
	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct mif_port *p = m->ports[i];

		if (p && p->started) {
			pthread_join(p->th, NULL);
			p->started = 0;
		}
	}
	__atomic_store_n(&m->ctl_running, 0, __ATOMIC_RELEASE);
	if (m->ctl_started) {
		pthread_join(m->ctl_th, NULL);
		m->ctl_started = 0;
	}
}

static void mif_close(struct fg_run *r)
{
	struct mif *m = r->memif;
	int i;

	if (!m)
		return;
	mif_stop_threads(m);
	if (m->have_ctl)
		fg_mif_ctl_fini(&m->ctl); /* removes the socket files we bound */
	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct mif_port *p = m->ports[i];

		if (!p)
			continue;
		pthread_mutex_destroy(&p->tx_lock);
		pthread_mutex_destroy(&p->rx_lock);
		free(p->tb);
		free(p->scratch);
		free(p);
	}
	if (m->have_urx)
		fg_urx_free(&m->u);
	free(m);
	r->memif = NULL;
}

static int port_open(struct fg_run *r, struct mif *m, int i, char *err, size_t errlen)
{
	const struct fg_spec_port *sp = r->ports[i].sp;
	struct mif_port *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	m->ports[i] = p;
	p->r = r;
	p->port = i;
	p->cpu = -1;
	pthread_mutex_init(&p->tx_lock, NULL);
	pthread_mutex_init(&p->rx_lock, NULL);
	p->tb = calloc(MIF_TX_SEGS, sizeof(*p->tb));
	p->scratch = malloc(FG_MAX_FRAME);
	if (!p->tb || !p->scratch)
		return -ENOMEM;
	snprintf(p->mi.label, sizeof(p->mi.label), "spec.ports[%d] (%s)", i, sp->ifname);
	snprintf(p->mi.path, sizeof(p->mi.path), "%s", sp->memif.socket);
	p->mi.id = sp->memif.id;
	p->mi.master = sp->memif.master;
	p->mi.log2_ring = (uint8_t)fg_mif_log2_ring(sp->memif.ring_size);
	p->mi.buffer_size = (uint16_t)sp->memif.buffer_size;
	p->mi.user = p;
	p->mi.on_up = on_up;
	p->mi.on_down = on_down;
	p->rx = r->ports[i].rx_used;
	return fg_mif_add(&m->ctl, &p->mi, err, errlen);
}

/* Every memif port, TX-only ones too: open, wait for the peers, start the
 * control thread and one RX thread per receiving port. */
static int mif_open(struct fg_run *r, char *err, size_t errlen)
{
	struct mif *m;
	double timeout = 0;
	int i, k, rc, ncpu = 0, any = 0, shared;

	for (i = 0; i < r->nports; i++)
		if (r->ports[i].backend == FG_BACKEND_MEMIF && (r->ports[i].tx_used ||
							       r->ports[i].rx_used))
			any = 1;
	if (!any)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	r->memif = m;
	rc = fg_mif_ctl_init(&m->ctl, "fwdgen", 20, err, errlen);
	if (rc)
		return rc;
	m->have_ctl = 1;
	m->ctl.lock = lock_all;
	m->ctl.lock_arg = m;
	rc = fg_urx_init(&m->u, r, &fg_mif_rxops, err, errlen);
	m->have_urx = 1;
	if (rc)
		return rc;
	for (i = 0; i < r->nports; i++) {
		struct fg_port_rt *pr = &r->ports[i];

		if (pr->backend != FG_BACKEND_MEMIF || !(pr->tx_used || pr->rx_used))
			continue;
		rc = port_open(r, m, i, err, errlen);
		if (rc)
			return rc;
		if (pr->sp->memif.connect_timeout_s > timeout)
			timeout = pr->sp->memif.connect_timeout_s;
	}
	rc = fg_mif_wait_up(&m->ctl, timeout, &fg_stop, err, errlen);
	if (rc)
		return rc;
	fg_mif_stop_retry(&m->ctl); /* a peer that goes now does not come back */
	__atomic_store_n(&m->trial, 1, __ATOMIC_RELEASE);
	m->running = 1;
	m->ctl_running = 1;
	rc = pthread_create(&m->ctl_th, NULL, mif_ctl_main, m);
	if (rc) {
		fg_errf(err, errlen, "memif: pthread_create (control): %s", strerror(rc));
		return -rc;
	}
	m->ctl_started = 1;
	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct mif_port *p = m->ports[i];

		if (!p || !p->rx)
			continue;
		if (!p->mi.master) {
			/* a slave gives the master its empty buffers */
			pthread_mutex_lock(&p->rx_lock);
			memif_refill_queue(p->mi.conn, 0, 1u << p->mi.log2_ring, 0);
			pthread_mutex_unlock(&p->rx_lock);
		}
		p->cpu = r->sp->nrx_cpus ? r->sp->rx_cpus[ncpu++ % r->sp->nrx_cpus] : -1;
		/* A TX thread on the receiver's CPU (or perhaps: unpinned) receives
		 * between its bursts, no thread of its own: a receiver spinning on
		 * a busy ring had the TX thread wait whole time slices (0.17 of
		 * 0.5 Mpps sent through vfwd, whose TX ring overflowed), and one
		 * yielding lost the CPU to other processes for as long. */
		shared = p->cpu < 0 || !r->sp->ntx_cpus;
		for (k = 0; k < r->sp->ntx_cpus; k++)
			shared |= r->sp->tx_cpus[k] == p->cpu;
		if (shared) {
			r->ports[i].rx_inline = 1;
			r->ports[i].rx_cpu = p->cpu;
			continue;
		}
		rc = pthread_create(&p->th, NULL, mif_rx_main, p);
		if (rc) {
			fg_errf(err, errlen, "memif: pthread_create for %s: %s",
				r->ports[i].sp->ifname, strerror(rc));
			return -rc;
		}
		p->started = 1;
	}
	return 0;
}

static void mif_rx_set_phase(struct fg_run *r, uint32_t phase)
{
	struct mif *m = r->memif;
	int i;

	if (m && m->have_urx)
		__atomic_store_n(&m->u.phase, phase, __ATOMIC_RELEASE);
	if (!m || phase != FG_PHASE_NONE)
		return;
	/* the trial's end: TX threads are done */
	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct mif_port *p = m->ports[i];

		if (p && p->full_drops)
			fg_warn(r, "memif: %llu measured frames on %s found the peer's RX ring full "
				"and were lost there, as on a wire (the peer did not take them in "
				"time); they count as lost", (unsigned long long)p->full_drops,
				r->ports[i].sp->ifname);
	}
}

static uint64_t mif_rx_packets(struct fg_run *r, int stream)
{
	struct mif *m = r->memif;

	return __atomic_load_n(&m->u.live[stream], __ATOMIC_RELAXED);
}

static int mif_rx_collect(struct fg_run *r, int stream, struct fg_rx_final *o)
{
	struct mif *m = r->memif;
	struct mif_port *p = m->ports[r->streams[stream]->rx_port];
	int i;

	mif_stop_threads(m);
	for (i = 0; i < FG_MAX_PORTS; i++) {
		struct mif_port *q = m->ports[i];

		if (q && q->chained) {
			fg_warn(r, "memif: %llu frames on %s came in more than one buffer (the "
				"peer's buffers are smaller than the frames)",
				(unsigned long long)q->chained, r->ports[i].sp->ifname);
			q->chained = 0;
		}
	}
	if (p && p->gone)
		return -ECONNRESET;
	return fg_urx_collect(&m->u, stream, o);
}

const struct fg_rxops fg_mif_rxops = {
	.name = "memif",
	.open = mif_open,
	.set_phase = mif_rx_set_phase,
	.packets = mif_rx_packets,
	.collect = mif_rx_collect,
	.close = mif_close,
	.poll = mif_rx_poll,
};

int fg_memif_rings(struct fg_run *r, int port, uint32_t *rx, uint32_t *tx)
{
	struct mif *m = r->memif;
	struct mif_port *p = m && port >= 0 && port < FG_MAX_PORTS ? m->ports[port] : NULL;

	if (!p || !p->mi.ups)
		return 0;
	*rx = p->mi.ring_rx;
	*tx = p->mi.ring_tx;
	return 1;
}

#else /* !FG_HAVE_MEMIF: the backend says why it is missing */

#ifndef FG_MEMIF_WHY
#define FG_MEMIF_WHY "built without libmemif"
#endif

int fg_memif_available(char *err, size_t errlen)
{
	fg_errf(err, errlen, "%s", FG_MEMIF_WHY);
	return 0;
}

int fg_memif_rings(struct fg_run *r, int port, uint32_t *rx, uint32_t *tx)
{
	(void)r, (void)port, (void)rx, (void)tx;
	return 0;
}

static int none_open(struct fg_run *r, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < r->nports; i++)
		if (r->ports[i].backend == FG_BACKEND_MEMIF) {
			fg_errf(err, errlen, "spec.ports[%d].backend: memif is not available in this "
				"fwdgen: %s", i, FG_MEMIF_WHY);
			return -ENOTSUP;
		}
	return 0;
}

static int none_tx_open(struct fg_run *r, struct fg_stream_rt *s, char *err, size_t errlen)
{
	(void)s;
	return none_open(r, err, errlen);
}

static void none_set_phase(struct fg_run *r, uint32_t phase)
{
	(void)r, (void)phase;
}

static void none_tx_set_phase(struct fg_stream_rt *s, uint32_t phase)
{
	(void)s, (void)phase;
}

static int64_t none_burst(struct fg_stream_rt *s, uint32_t n)
{
	(void)s, (void)n;
	return -ENOTSUP;
}

static void none_tx_close(struct fg_stream_rt *s)
{
	(void)s;
}

static uint64_t none_packets(struct fg_run *r, int stream)
{
	(void)r, (void)stream;
	return 0;
}

static int none_collect(struct fg_run *r, int stream, struct fg_rx_final *o)
{
	(void)r, (void)stream, (void)o;
	return -ENOTSUP;
}

static void none_close(struct fg_run *r)
{
	(void)r;
}

const struct fg_txops fg_mif_txops = {
	.name = "memif", .open = none_tx_open, .set_phase = none_tx_set_phase,
	.burst = none_burst, .close = none_tx_close, .max_burst = 1, .burst_cap = 1,
	.min_period_ns = 50000,
};

const struct fg_rxops fg_mif_rxops = {
	.name = "memif", .open = none_open, .set_phase = none_set_phase,
	.packets = none_packets, .collect = none_collect, .close = none_close,
};

#endif
