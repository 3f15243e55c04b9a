/* SPDX-License-Identifier: MIT */
/*
 * Ports: one vf_port per (port, worker) = one queue of one interface.
 * Backends: AF_XDP (port_xdp.c: the worker's buffer pool is the UMEM, RX
 * chunks are transmitted as they are: zero copy inside vfwd), AF_PACKET
 * (port_afpacket.c: recvmmsg/sendmmsg straight into pool buffers, fanout
 * for several workers), memif (port_memif.c: libmemif; as the slave the
 * worker's pool is the shared memory, zero copy both ways) and pg (no
 * device: TX frees, or captures for tests).
 */
#ifndef VF_PORT_H
#define VF_PORT_H

#include "vfwd.h"

typedef struct vf_port {
	uint32_t index;            /* port number in the config */
	uint32_t queue;            /* = worker id */
	enum vf_port_drv drv;
	const char *ifname;
	int fd;                    /* pollable fd, -1 for pg */
	/* rx: fill bi[0..n) (buffers from w->pool, meta set); returns count */
	uint32_t (*rx)(struct vf_port *p, vf_worker_t *w, uint32_t *bi, uint32_t n);
	/* tx: takes ownership of the n buffers */
	void (*tx)(struct vf_port *p, vf_worker_t *w, const uint32_t *bi, uint32_t n);
	/* housekeeping when idle (completions, wakeups) */
	void (*poll)(struct vf_port *p, vf_worker_t *w);
	void (*close)(struct vf_port *p, vf_worker_t *w);
	/* kernel-side drops: rx dropped, rx ring full, fill ring empty, tx invalid */
	void (*kstats)(struct vf_port *p, uint64_t out[4]);
	/* more JSON fields for the stats' "ports" entry (",\"x\": ..."), optional */
	void (*info_json)(struct vf_port *p, FILE *out);
	void *priv;
	/* counters (this queue) */
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_dropped;
	/* pg capture for tests: tx appends here instead of freeing */
	uint32_t *capture;
	uint32_t n_capture, cap_capture;
} VF_ALIGNED vf_port_t;

/* Open port idx of config c for worker w (queue w->id). Returns 0 or
 * negative errno with a message naming the call and port in err. */
int vf_port_open(vf_worker_t *w, const struct vf_config *c, uint32_t idx, char *err,
		 size_t errlen);
void vf_port_close_all(vf_worker_t *w);
int vf_port_xdp_open(vf_port_t *p, vf_worker_t *w, const struct vf_config *c, char *err,
		     size_t errlen);
int vf_port_afpacket_open(vf_port_t *p, vf_worker_t *w, const struct vf_config *c, char *err,
			  size_t errlen);
int vf_port_memif_open(vf_port_t *p, vf_worker_t *w, const struct vf_config *c, char *err,
		       size_t errlen);
/* The MAC of a memif port without 'mac': 02:fb:76:66:00:<index + 1> */
void vf_memif_default_mac(uint32_t port, uint8_t mac[6]);
/* Read an interface's MAC (SIOCGIFHWADDR). */
int vf_if_mac(const char *ifname, uint8_t mac[6]);
const char *vf_port_drv_name(enum vf_port_drv d);

#endif
