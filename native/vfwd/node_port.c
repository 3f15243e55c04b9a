/* SPDX-License-Identifier: MIT */
/*
 * port-input (polls this worker's queue of every device port: AF_XDP or
 * AF_PACKET) and port-output (sorts a vector by transmit port and hands
 * each port its packets in one burst), plus port bookkeeping.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vf_port.h"

/* ====================================================================== */
/* port-input                                                             */

#define foreach_port_input_error _(NONE, "none")
typedef enum {
#define _(sym, str) PORT_INPUT_ERROR_##sym,
	foreach_port_input_error
#undef _
	PORT_INPUT_N_ERROR,
} port_input_error_t;
static const char *const port_input_error_strings[] = {
#define _(sym, str) str,
	foreach_port_input_error
#undef _
};

typedef enum { PORT_INPUT_NEXT_ETHERNET, PORT_INPUT_N_NEXT } port_input_next_t;

typedef struct { uint16_t port, len; } port_trace_t;

static int format_port_trace(char *s, size_t n, const void *rec)
{
	const port_trace_t *t = rec;
	return snprintf(s, n, "port %u length %u", t->port, t->len);
}

static uint32_t port_input_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	(void)f;
	uint32_t bi[VF_FRAME_SIZE], total = 0;
	for (uint32_t k = 0; k < w->n_ports; k++) {
		vf_port_t *p = w->ports[k];
		if (!p || !p->rx)
			continue;
		uint32_t n = p->rx(p, w, bi, w->max_vector);
		if (!n)
			continue;
		if (VF_UNLIKELY(w->trace_left))
			vf_trace_mark(w, bi, n);
		if (VF_UNLIKELY(w->tracing))
			for (uint32_t i = 0; i < n && w->tracing; i++) {
				port_trace_t t = { (uint16_t)p->index, w->pool.meta[bi[i]].len };
				vf_trace_add(w, rt, bi[i], &t, sizeof(t));
			}
		vf_enqueue_one(w, rt, bi, n, PORT_INPUT_NEXT_ETHERNET);
		total += n;
	}
	return total;
}

static const char *const port_input_next_nodes[] = {
	[PORT_INPUT_NEXT_ETHERNET] = "ethernet-input",
};

static vf_node_t port_input_node = {
	.name = "port-input",
	.type = VF_NODE_INPUT,
	.fn = port_input_node_fn,
	.n_next = PORT_INPUT_N_NEXT,
	.next_names = port_input_next_nodes,
	.n_errors = PORT_INPUT_N_ERROR,
	.error_names = port_input_error_strings,
	.format_trace = format_port_trace,
};
VF_REGISTER_NODE(port_input_node)

/* ====================================================================== */
/* port-output                                                            */

#define foreach_port_output_error _(NO_PORT, "no such port")
typedef enum {
#define _(sym, str) PORT_OUTPUT_ERROR_##sym,
	foreach_port_output_error
#undef _
	PORT_OUTPUT_N_ERROR,
} port_output_error_t;
static const char *const port_output_error_strings[] = {
#define _(sym, str) str,
	foreach_port_output_error
#undef _
};

typedef enum { PORT_OUTPUT_NEXT_DROP, PORT_OUTPUT_N_NEXT } port_output_next_t;

static uint32_t port_output_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_buf_t *meta = w->pool.meta;
	const uint32_t *bi = f->bi;
	uint32_t n = f->n;
	uint16_t first = meta[bi[0]].tx_port;
	uint32_t i;

	if (VF_UNLIKELY(w->tracing))
		for (i = 0; i < n && w->tracing; i++) {
			port_trace_t t = { meta[bi[i]].tx_port, meta[bi[i]].len };
			vf_trace_add(w, rt, bi[i], &t, sizeof(t));
		}
	/* common case: the whole vector leaves through one port */
	for (i = 1; i < n; i++)
		if (meta[bi[i]].tx_port != first)
			break;
	if (VF_LIKELY(i == n && first < w->n_ports && w->ports[first])) {
		vf_port_t *p = w->ports[first];
		p->tx(p, w, bi, n);
		return n;
	}
	/* sort by port (counting sort keeps the order within a port) */
	uint32_t cnt[VF_MAX_PORTS + 1] = { 0 }, pos[VF_MAX_PORTS + 1];
	uint32_t sorted[VF_FRAME_SIZE], bad[VF_FRAME_SIZE], n_bad = 0;
	for (i = 0; i < n; i++) {
		uint16_t t = meta[bi[i]].tx_port;
		cnt[t < w->n_ports && w->ports[t] ? t : VF_MAX_PORTS]++;
	}
	pos[0] = 0;
	for (uint32_t k = 1; k <= VF_MAX_PORTS; k++)
		pos[k] = pos[k - 1] + cnt[k - 1];
	for (i = 0; i < n; i++) {
		uint16_t t = meta[bi[i]].tx_port;
		if (t < w->n_ports && w->ports[t]) {
			sorted[pos[t]++] = bi[i];
		} else {
			meta[bi[i]].error = vf_error(rt, PORT_OUTPUT_ERROR_NO_PORT);
			bad[n_bad++] = bi[i];
		}
	}
	uint32_t off = 0;
	for (uint32_t k = 0; k < VF_MAX_PORTS; k++) {
		if (cnt[k])
			w->ports[k]->tx(w->ports[k], w, sorted + off, cnt[k]);
		off += cnt[k];
	}
	vf_enqueue_one(w, rt, bad, n_bad, PORT_OUTPUT_NEXT_DROP);
	return n;
}

static const char *const port_output_next_nodes[] = {
	[PORT_OUTPUT_NEXT_DROP] = "drop",
};

static vf_node_t port_output_node = {
	.name = "port-output",
	.fn = port_output_node_fn,
	.n_next = PORT_OUTPUT_N_NEXT,
	.next_names = port_output_next_nodes,
	.n_errors = PORT_OUTPUT_N_ERROR,
	.error_names = port_output_error_strings,
	.format_trace = format_port_trace,
};
VF_REGISTER_NODE(port_output_node)

/* ====================================================================== */
/* ports                                                                  */

const char *vf_port_drv_name(enum vf_port_drv d)
{
	switch (d) {
	case VF_PORT_XDP: return "xdp";
	case VF_PORT_AFPACKET: return "afpacket";
	case VF_PORT_PG: return "pg";
	case VF_PORT_MEMIF: return "memif";
	default: return "auto";
	}
}

/* pg port: transmit frees the buffers (counted), or keeps them for a test. */
static void pg_tx(vf_port_t *p, vf_worker_t *w, const uint32_t *bi, uint32_t n)
{
	p->tx_packets += n;
	for (uint32_t i = 0; i < n; i++)
		p->tx_bytes += w->pool.meta[bi[i]].len;
	if (VF_UNLIKELY(p->cap_capture)) {
		uint32_t k = n;
		if (p->n_capture + k > p->cap_capture)
			k = p->cap_capture - p->n_capture;
		memcpy(p->capture + p->n_capture, bi, k * sizeof(uint32_t));
		p->n_capture += k;
		vf_free(&w->pool, bi + k, n - k);
		return;
	}
	vf_free(&w->pool, bi, n);
}

int vf_if_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	int rc = ioctl(fd, SIOCGIFHWADDR, &ifr);
	int err = errno;
	close(fd);
	if (rc < 0)
		return -err;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return 0;
}

int vf_port_open(vf_worker_t *w, const struct vf_config *c, uint32_t idx, char *err,
		 size_t errlen)
{
	vf_port_t *p = aligned_alloc(VF_CACHE_LINE, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->index = idx;
	p->queue = w->id;
	p->fd = -1;
	p->ifname = c->port[idx].ifname;
	p->drv = c->port[idx].drv;
	int rc = 0;
	if (p->drv == VF_PORT_PG) {
		p->tx = pg_tx;
	} else if (p->drv == VF_PORT_XDP) {
		rc = vf_port_xdp_open(p, w, c, err, errlen);
	} else if (p->drv == VF_PORT_AFPACKET) {
		rc = vf_port_afpacket_open(p, w, c, err, errlen);
	} else if (p->drv == VF_PORT_MEMIF) {
		rc = vf_port_memif_open(p, w, c, err, errlen);
	} else {
		char e1[256];
		rc = vf_port_xdp_open(p, w, c, e1, sizeof(e1));
		if (rc) {
			rc = vf_port_afpacket_open(p, w, c, err, errlen);
			if (!rc)
				fprintf(stderr, "vfwd: port %u (%s): AF_XDP unavailable (%s); "
					"using AF_PACKET\n", idx, p->ifname, e1);
			else
				snprintf(err + strlen(err), errlen - strlen(err),
					 " (AF_XDP: %s)", e1);
		}
	}
	if (rc) {
		free(p);
		return rc;
	}
	w->ports[idx] = p;
	if (w->n_ports <= idx)
		w->n_ports = idx + 1;
	if (p->rx) {  /* a device port: port-input has work on this worker */
		vf_node_t *n = vf_node_by_name("port-input");
		if (!w->rt[n->index].state)
			w->rt[n->index].state = calloc(1, 16);
	}
	return 0;
}

void vf_port_close_all(vf_worker_t *w)
{
	for (uint32_t k = 0; k < w->n_ports; k++) {
		vf_port_t *p = w->ports[k];
		if (!p)
			continue;
		if (p->close)
			p->close(p, w);
		free(p->capture);
		free(p);
		w->ports[k] = NULL;
	}
	w->n_ports = 0;
}

void vf_ports_json(FILE *out, vf_worker_t *const *ws, uint32_t n)
{
	if (!n)
		return;
	fprintf(out, ",\n  \"ports\": [");
	for (uint32_t k = 0; k < ws[0]->n_ports; k++) {
		uint64_t rx = 0, rxb = 0, tx = 0, txb = 0, txd = 0, ks[4] = { 0 };
		const char *ifname = "", *drv = "";
		vf_port_t *info = NULL;
		for (uint32_t q = 0; q < n; q++) {
			const vf_port_t *p = ws[q]->ports[k];
			if (!p)
				continue;
			rx += p->rx_packets;
			rxb += p->rx_bytes;
			tx += p->tx_packets;
			txb += p->tx_bytes;
			txd += p->tx_dropped;
			if (p->kstats)
				p->kstats((vf_port_t *)p, ks);
			ifname = p->ifname;
			drv = vf_port_drv_name(p->drv);
			if (p->info_json)
				info = (vf_port_t *)p;
		}
		fprintf(out, "%s\n    {\"port\": %u, \"ifname\": \"%s\", \"driver\": \"%s\", "
			"\"rx_packets\": %llu, \"rx_bytes\": %llu, \"tx_packets\": %llu, "
			"\"tx_bytes\": %llu, \"tx_dropped\": %llu, \"kernel_rx_dropped\": %llu, "
			"\"kernel_rx_ring_full\": %llu, \"kernel_fill_ring_empty\": %llu, "
			"\"kernel_tx_invalid\": %llu", k ? "," : "", k, ifname, drv,
			(unsigned long long)rx, (unsigned long long)rxb, (unsigned long long)tx,
			(unsigned long long)txb, (unsigned long long)txd, (unsigned long long)ks[0],
			(unsigned long long)ks[1], (unsigned long long)ks[2], (unsigned long long)ks[3]);
		if (info)
			info->info_json(info, out);
		fprintf(out, "}");
	}
	fprintf(out, "\n  ]");
}
