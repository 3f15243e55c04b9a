/* SPDX-License-Identifier: MIT */
/*
 * afpacket backend: the portable fallback (any interface, any frame size).
 * TX: sendmmsg() on an AF_PACKET socket with PACKET_QDISC_BYPASS, frames
 *     written by fg_pkt_write() (the user-space twin of fwdgen_tx.bpf.c).
 * RX: one busy-polling thread per port (non-blocking recvmmsg), counting
 *     with fg_seq (same semantics as fwdgen_rx.bpf.c). The RX time is the
 *     kernel's software receive timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME,
 *     mapped to CLOCK_MONOTONIC with an offset measured at start), so queueing
 *     before the user-space thread runs does not count as network latency;
 *     without it, the time right after recvmmsg returns.
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include "fwdgen.h"
#include "urx.h"

#define AFP_BURST 64

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

/* ---- TX ------------------------------------------------------------- */

struct afp_tx {
	int fd;
	uint32_t seq, flow, phase;
	uint8_t *frames; /* AFP_BURST x tmpl_len */
	struct mmsghdr msg[AFP_BURST];
	struct iovec iov[AFP_BURST];
};

static int afp_socket(int ifindex, int proto, char *err, size_t errlen, const char *ifname)
{
	struct sockaddr_ll sll;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, proto), rc;

	if (fd < 0) {
		rc = -errno;
		fg_errf(err, errlen, "afpacket: socket(AF_PACKET) for %s: %s", ifname, strerror(-rc));
		return rc;
	}
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = ifindex;
	sll.sll_protocol = (unsigned short)proto;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		rc = -errno;
		fg_errf(err, errlen, "afpacket: bind(%s): %s", ifname, strerror(-rc));
		close(fd);
		return rc;
	}
	return fd;
}

static int afp_tx_open(struct fg_run *r, struct fg_stream_rt *s, char *err, size_t errlen)
{
	struct fg_port_rt *p = &r->ports[s->tx_port];
	struct afp_tx *a = calloc(1, sizeof(*a));
	int one = 1, i;

	if (!a)
		return -ENOMEM;
	a->frames = malloc((size_t)AFP_BURST * s->tmpl_len);
	if (!a->frames) {
		free(a);
		return -ENOMEM;
	}
	a->fd = afp_socket(p->ifindex, 0, err, errlen, p->sp->ifname);
	if (a->fd < 0) {
		int rc = a->fd;

		free(a->frames);
		free(a);
		return rc;
	}
	/* best effort: without it frames go through the qdisc */
	setsockopt(a->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	for (i = 0; i < AFP_BURST; i++) {
		memcpy(a->frames + (size_t)i * s->tmpl_len, s->tmpl, s->tmpl_len);
		a->iov[i].iov_base = a->frames + (size_t)i * s->tmpl_len;
		a->msg[i].msg_hdr.msg_iov = &a->iov[i];
		a->msg[i].msg_hdr.msg_iovlen = 1;
	}
	s->txp = a;
	return 0;
}

static void afp_tx_set_phase(struct fg_stream_rt *s, uint32_t phase)
{
	struct afp_tx *a = s->txp;

	a->phase = phase;
	a->seq = 0;
	a->flow = 0;
}

static int64_t afp_tx_burst(struct fg_stream_rt *s, uint32_t n)
{
	struct afp_tx *a = s->txp;
	uint64_t done = 0;

	while (done < n) {
		uint32_t k = n - done > AFP_BURST ? AFP_BURST : (uint32_t)(n - done), i;
		uint32_t ts = (uint32_t)fg_now_ns(), flow = a->flow;
		int sent;

		for (i = 0; i < k; i++) {
			a->iov[i].iov_len = fg_pkt_write(&s->pc, &s->k, a->iov[i].iov_base, a->phase,
							 a->seq + i, flow, ts);
			if (++flow >= s->pc.flow.flows)
				flow = 0;
		}
		sent = sendmmsg(a->fd, a->msg, k, 0);
		if (sent < 0) {
			if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
				break; /* try again on the next burst */
			return done ? (int64_t)done : -errno;
		}
		a->seq += (uint32_t)sent;
		a->flow = (a->flow + (uint32_t)sent) % s->pc.flow.flows;
		done += (uint64_t)sent;
		if ((uint32_t)sent < k)
			break;
	}
	return (int64_t)done;
}

static void afp_tx_close(struct fg_stream_rt *s)
{
	struct afp_tx *a = s->txp;

	if (!a)
		return;
	close(a->fd);
	free(a->frames);
	free(a);
	s->txp = NULL;
}

const struct fg_txops fg_afp_txops = {
	.name = "afpacket",
	.open = afp_tx_open,
	.set_phase = afp_tx_set_phase,
	.burst = afp_tx_burst,
	.close = afp_tx_close,
	.max_burst = 1024,
	.burst_cap = 256,
	.min_period_ns = 100000,
};

/* ---- RX ------------------------------------------------------------- */

#define AFP_RX_FRAME 9216

struct afp_rxport {
	struct fg_run *r;
	struct afp_rx *rx;
	int port, fd, cpu;
	pthread_t th;
	int started;
	uint8_t *buf;
};

struct afp_rx {
	int64_t real_minus_mono;   /* [ns] */
	struct afp_rxport ports[FG_MAX_PORTS];
	int nports;
	struct fg_urx u;
	int running;
};

/* Frames the socket dropped since the last call (PACKET_STATISTICS resets). */
static unsigned int afp_drops(int fd)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		return 0;
	return st.tp_drops;
}

static void *afp_rx_main(void *arg)
{
	struct afp_rxport *pt = arg;
	struct afp_rx *a = pt->rx;
	struct fg_run *r = pt->r;
	struct mmsghdr msg[AFP_BURST];
	struct iovec iov[AFP_BURST];
	/* room for one struct timespec control message per frame */
	union {
		char buf[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl[AFP_BURST];
	int i;

	if (pt->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(pt->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	memset(msg, 0, sizeof(msg));
	for (i = 0; i < AFP_BURST; i++) {
		iov[i].iov_base = pt->buf + (size_t)i * AFP_RX_FRAME;
		iov[i].iov_len = AFP_RX_FRAME;
		msg[i].msg_hdr.msg_iov = &iov[i];
		msg[i].msg_hdr.msg_iovlen = 1;
	}
	while (__atomic_load_n(&a->running, __ATOMIC_ACQUIRE)) {
		int n;
		uint32_t now;

		for (i = 0; i < AFP_BURST; i++) {
			msg[i].msg_hdr.msg_control = ctl[i].buf;
			msg[i].msg_hdr.msg_controllen = sizeof(ctl[i].buf);
		}
		n = recvmmsg(pt->fd, msg, AFP_BURST, MSG_DONTWAIT, NULL);
		if (n <= 0) {
			fg_cpu_relax();
			continue;
		}
		now = (uint32_t)fg_now_ns();
		for (i = 0; i < n; i++) {
			uint32_t t = now;
			struct cmsghdr *cm;

			for (cm = CMSG_FIRSTHDR(&msg[i].msg_hdr); cm;
			     cm = CMSG_NXTHDR(&msg[i].msg_hdr, cm)) {
				if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
					struct timespec ts;

					memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
					t = (uint32_t)((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec -
						       a->real_minus_mono);
				}
			}
			fg_urx_frame(&a->u, r, &fg_afp_rxops, pt->port, iov[i].iov_base,
				     msg[i].msg_len, t);
		}
	}
	return NULL;
}

static void afp_rx_close(struct fg_run *r)
{
	struct afp_rx *a = r->afp_rx;
	int i;

	if (!a)
		return;
	__atomic_store_n(&a->running, 0, __ATOMIC_RELEASE);
	for (i = 0; i < a->nports; i++) {
		if (a->ports[i].started)
			pthread_join(a->ports[i].th, NULL);
		if (a->ports[i].fd >= 0)
			close(a->ports[i].fd);
		free(a->ports[i].buf);
	}
	fg_urx_free(&a->u);
	free(a);
	r->afp_rx = NULL;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC [ns], from the tightest of a few reads. */
static int64_t real_minus_mono(void)
{
	int64_t best = 0, best_gap = INT64_MAX;
	int i;

	for (i = 0; i < 16; i++) {
		struct timespec m1, r, m2;
		int64_t a, b, rr;

		clock_gettime(CLOCK_MONOTONIC, &m1);
		clock_gettime(CLOCK_REALTIME, &r);
		clock_gettime(CLOCK_MONOTONIC, &m2);
		a = (int64_t)m1.tv_sec * 1000000000 + m1.tv_nsec;
		b = (int64_t)m2.tv_sec * 1000000000 + m2.tv_nsec;
		rr = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec;
		if (b - a < best_gap) {
			best_gap = b - a;
			best = rr - (a + (b - a) / 2);
		}
	}
	return best;
}

static int afp_rx_open(struct fg_run *r, char *err, size_t errlen)
{
	struct afp_rx *a = calloc(1, sizeof(*a));
	int i, rc, one = 1, rcvbuf = 64 << 20, ncpu = 0;

	if (!a)
		return -ENOMEM;
	r->afp_rx = a;
	a->running = 1;
	a->real_minus_mono = real_minus_mono();
	rc = fg_urx_init(&a->u, r, &fg_afp_rxops, err, errlen);
	if (rc)
		return rc;
	for (i = 0; i < r->nports; i++) {
		struct fg_port_rt *p = &r->ports[i];
		struct afp_rxport *pt;

		if (!p->rx_used || p->backend != FG_BACKEND_AFPACKET)
			continue;
		pt = &a->ports[a->nports++];
		pt->r = r;
		pt->rx = a;
		pt->port = i;
		pt->cpu = r->sp->nrx_cpus ? r->sp->rx_cpus[ncpu++ % r->sp->nrx_cpus] : -1;
		pt->fd = afp_socket(p->ifindex, htons(ETH_P_ALL), err, errlen, p->sp->ifname);
		if (pt->fd < 0)
			return pt->fd;
		setsockopt(pt->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
		setsockopt(pt->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
		if (setsockopt(pt->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
			setsockopt(pt->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
		afp_drops(pt->fd); /* start counting from here */
		pt->buf = malloc((size_t)AFP_BURST * AFP_RX_FRAME);
		if (!pt->buf)
			return -ENOMEM;
		rc = pthread_create(&pt->th, NULL, afp_rx_main, pt);
		if (rc) {
			fg_errf(err, errlen, "afpacket: pthread_create for %s: %s", p->sp->ifname,
				strerror(rc));
			return -rc;
		}
		pt->started = 1;
	}
	return 0;
}

static void afp_rx_set_phase(struct fg_run *r, uint32_t phase)
{
	struct afp_rx *a = r->afp_rx;

	if (a)
		__atomic_store_n(&a->u.phase, phase, __ATOMIC_RELEASE);
}

static uint64_t afp_rx_packets(struct fg_run *r, int stream)
{
	struct afp_rx *a = r->afp_rx;

	return __atomic_load_n(&a->u.live[stream], __ATOMIC_RELAXED);
}

static int afp_rx_collect(struct fg_run *r, int stream, struct fg_rx_final *o)
{
	struct afp_rx *a = r->afp_rx;
	int i;

	/* stop the receivers so the counts are final */
	__atomic_store_n(&a->running, 0, __ATOMIC_RELEASE);
	for (i = 0; i < a->nports; i++) {
		struct afp_rxport *pt = &a->ports[i];
		unsigned int d;

		if (!pt->started)
			continue;
		pthread_join(pt->th, NULL);
		pt->started = 0;
		d = afp_drops(pt->fd);
		if (d)
			fg_warn(r, "afpacket: the receiver socket on %s dropped %u frames (its queue "
				"was full): loss on streams received there includes them; pin the "
				"receiver (spec.cpus.rx) or use the xdp backend",
				r->ports[pt->port].sp->ifname, d);
	}
	return fg_urx_collect(&a->u, stream, o);
}

const struct fg_rxops fg_afp_rxops = {
	.name = "afpacket",
	.open = afp_rx_open,
	.set_phase = afp_rx_set_phase,
	.packets = afp_rx_packets,
	.collect = afp_rx_collect,
	.close = afp_rx_close,
};
