/* SPDX-License-Identifier: MIT */
/*
 * The trial spec (docs/contracts.md section 1), parsed and validated.
 * Every error names the JSON path of the bad field.
 */
#ifndef FWDGEN_SPEC_H
#define FWDGEN_SPEC_H

#include <stdint.h>
#include <net/if.h>
#include "fg_proto.h"

#define FG_MAX_PORTS 8
#define FG_MAX_LOAD_STREAMS 16
#define FG_MAX_CPUS 64

enum fg_backend { FG_BACKEND_AUTO, FG_BACKEND_XDP, FG_BACKEND_AFPACKET, FG_BACKEND_AFXDP,
		  FG_BACKEND_MEMIF };

/* A memif port (docs/contracts.md): a memif interface, not a kernel one. */
struct fg_spec_memif {
	char socket[108];         /* UNIX socket path, or "@name" (abstract) */
	uint32_t id;              /* interface id on the socket */
	int master;               /* 1: fwdgen listens (default); 0: connects */
	uint32_t ring_size;       /* slots per ring (as slave; a master takes the peer's) */
	uint32_t buffer_size;     /* bytes per buffer (as slave) */
	double connect_timeout_s; /* the peer must connect within it */
};

struct fg_spec_port {
	char ifname[IF_NAMESIZE];
	uint8_t mac[6], peer_mac[6];
	int has_mac, has_peer_mac;
	enum fg_backend backend;
	uint64_t burst_period_ns; /* pacing: one TX burst per period at most (0: backend's) */
	int has_memif;
	struct fg_spec_memif memif;
};

struct fg_spec_stream {
	int id;
	int tx_port, rx_port;
	char src[64], dst[64];
	uint8_t src_ip[16], dst_ip[16];
	uint32_t src_hosts, dst_hosts;
	uint32_t src_port, dst_port;
};

struct fg_spec {
	int nports, nstreams;
	struct fg_spec_port ports[FG_MAX_PORTS];
	struct fg_spec_stream streams[FG_MAX_LOAD_STREAMS];
	int ipv6;
	uint32_t frame_size;      /* with FCS; 0 = IMIX */
	uint32_t flows;
	uint32_t vary;            /* enum fg_vary */
	uint32_t port_pattern;    /* enum fg_port_pattern */
	double load_pps;          /* per stream; 0 = "max" */
	double duration_s, warmup_s, drain_s;
	int latency_enabled;
	double latency_pps;
	int ntx_cpus, nrx_cpus;
	int tx_cpus[FG_MAX_CPUS], rx_cpus[FG_MAX_CPUS];
	int samples;
	enum fg_pacer { FG_PACER_AUTO, FG_PACER_KERNEL, FG_PACER_USER } pacer;
};

/* Parse JSON text; on error returns -1 and writes "spec.path: message"
 * into err. */
int fg_spec_parse(const char *text, size_t len, struct fg_spec *sp, char *err, size_t errlen);
const char *fg_backend_name(enum fg_backend b);

#endif
