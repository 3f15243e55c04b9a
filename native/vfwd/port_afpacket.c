/* SPDX-License-Identifier: MIT */
/*
 * AF_PACKET ports, the fallback when AF_XDP is not available: recvmmsg()
 * and sendmmsg() straight into and out of pool buffers, qdisc bypassed,
 * and a hash fanout group spreading flows over the workers' sockets.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vf_port.h"

static uint32_t afp_rx(vf_port_t *p, vf_worker_t *w, uint32_t *bi, uint32_t n)
{
	struct mmsghdr m[VF_FRAME_SIZE];
	struct iovec iov[VF_FRAME_SIZE];
	n = vf_alloc(&w->pool, bi, n);
	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		iov[i].iov_base = vf_buf_data(&w->pool, bi[i]);
		iov[i].iov_len = VF_BUF_SIZE - VF_BUF_HEADROOM;
		memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	int got = recvmmsg(p->fd, m, n, MSG_DONTWAIT, NULL);
	if (got < 0)
		got = 0;
	uint32_t k = 0;
	for (int i = 0; i < got; i++) {
		if (m[i].msg_hdr.msg_flags & MSG_TRUNC)
			continue;   /* larger than a buffer: not forwarded */
		vf_buf_t *b = &w->pool.meta[bi[i]];
		b->len = (uint16_t)m[i].msg_len;
		b->rx_port = (uint16_t)p->index;
		p->rx_bytes += b->len;
		uint32_t t = bi[i];
		bi[i] = bi[k];
		bi[k++] = t;
	}
	vf_free(&w->pool, bi + k, n - k);
	p->rx_packets += k;
	return k;
}

static void afp_tx(vf_port_t *p, vf_worker_t *w, const uint32_t *bi, uint32_t n)
{
	struct mmsghdr m[VF_FRAME_SIZE];
	struct iovec iov[VF_FRAME_SIZE];
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		iov[i].iov_base = vf_buf_data(&w->pool, bi[i]);
		iov[i].iov_len = w->pool.meta[bi[i]].len;
		memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	uint32_t sent = 0;
	while (sent < n) {
		int k = sendmmsg(p->fd, m + sent, n - sent, MSG_DONTWAIT);
		if (k <= 0)
			break;
		for (int i = 0; i < k; i++)
			bytes += iov[sent + i].iov_len;
		sent += (uint32_t)k;
	}
	p->tx_packets += sent;
	p->tx_bytes += bytes;
	p->tx_dropped += n - sent;
	vf_free(&w->pool, bi, n);
}

static void afp_close(vf_port_t *p, vf_worker_t *w)
{
	(void)w;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

int vf_port_afpacket_open(vf_port_t *p, vf_worker_t *w, const struct vf_config *c, char *err,
			  size_t errlen)
{
	int one = 1, rc;
	unsigned ifindex = if_nametoindex(p->ifname);
	if (!ifindex) {
		rc = -errno;
		snprintf(err, errlen, "port %u: no interface '%s': %s", p->index, p->ifname,
			 strerror(errno));
		return rc;
	}
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket(AF_PACKET) for %s: %s", p->ifname, strerror(errno));
		return rc;
	}
#ifdef PACKET_IGNORE_OUTGOING
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
#endif
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	int buf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)ifindex };
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "bind(AF_PACKET, %s): %s", p->ifname, strerror(errno));
		close(fd);
		return rc;
	}
	if (c->workers > 1) {
		int fan = (int)(((getpid() ^ (p->index << 8)) & 0xffff) |
				(PACKET_FANOUT_HASH << 16));
		if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &fan, sizeof(fan)) < 0) {
			rc = -errno;
			snprintf(err, errlen, "PACKET_FANOUT on %s (worker %u): %s", p->ifname,
				 w->id, strerror(errno));
			close(fd);
			return rc;
		}
	}
	p->fd = fd;
	p->rx = afp_rx;
	p->tx = afp_tx;
	p->close = afp_close;
	p->drv = VF_PORT_AFPACKET;
	return 0;
}
