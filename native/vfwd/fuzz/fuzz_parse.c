/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the parsing nodes: every input is one frame given
 * to ethernet-input of a graph in one of four modes (router with IPv4 and
 * IPv6, nat44, bridge, work with recirculation). Byte 0 picks the mode,
 * byte 1 the receiving port, the rest is the frame. Whatever the frame, vfwd
 * must neither crash nor leak a buffer (checked after every input).
 *
 *   make -C native/vfwd fuzz-run FUZZ_SECONDS=20
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "vf_port.h"

static const char *const CONFS[] = {
	"mode router\n"
	"port 0 dut0 driver pg mac 02:fb:00:00:01:01 ip4 198.18.0.2 ip6 2001:2::2\n"
	"port 1 dut1 driver pg mac 02:fb:00:00:01:02 ip4 198.19.0.2\n"
	"neighbor 198.19.0.1 02:fb:00:00:00:02 port 1\n"
	"neighbor 2001:2:0:1::1 02:fb:00:00:00:02 port 1\n"
	"route 0.0.0.0/1 via 198.19.0.1\nroute 198.19.128.0/25 via 198.19.0.1\n"
	"route 2001:2::/32 via 2001:2:0:1::1\nroute ::/0 via 2001:2:0:1::1\n",

	"mode nat44\n"
	"port 0 dut0 driver pg mac 02:fb:00:00:01:01\nport 1 dut1 driver pg mac 02:fb:00:00:01:02\n"
	"neighbor 198.19.0.1 02:fb:00:00:00:02 port 1\nneighbor 198.18.0.1 02:fb:00:00:00:01 port 0\n"
	"route 0.0.0.0/0 via 198.19.0.1\nroute 198.18.0.0/16 via 198.18.0.1\n"
	"nat44 inside 0 outside 1 pool 198.19.0.100 sessions 64 ports 1000-1031\n",

	"mode bridge\nbridge size 16 aging 5\nport 0 a driver pg\nport 1 b driver pg\nport 2 c driver pg\n",

	"mode work\nwork lookups 2 hashes 1 hash jhash arith 2 regs 2 recirc 2\n"
	"port 0 dut0 driver pg mac 02:fb:00:00:01:01\nport 1 dut1 driver pg mac 02:fb:00:00:01:02\n"
	"neighbor 198.19.0.1 02:fb:00:00:00:02 port 1\nroute 0.0.0.0/0 via 198.19.0.1\n",
};
#define N_MODES (sizeof(CONFS) / sizeof(CONFS[0]))

static struct vf_config cfg[N_MODES];
static vf_worker_t *W[N_MODES];

static void init(void)
{
	char err[256];
	if (vf_graph_init())
		abort();
	for (size_t m = 0; m < N_MODES; m++) {
		vf_config_defaults(&cfg[m]);
		if (vf_config_parse_string(&cfg[m], "fuzz.conf", CONFS[m], err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			abort();
		}
		W[m] = aligned_alloc(VF_CACHE_LINE, sizeof(vf_worker_t));
		if (!W[m] || vf_worker_init(W[m], 0, &cfg[m], 256, VF_STRIDE_PG))
			abort();
		for (uint32_t k = 0; k < cfg[m].n_ports; k++)
			if (vf_port_open(W[m], &cfg[m], k, err, sizeof(err)))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		init();
		ready = 1;
	}
	if (size < 2)
		return 0;
	size_t m = data[0] % N_MODES;
	vf_worker_t *w = W[m];
	vf_fib = cfg[m].fib;
	vf_cfg = &cfg[m];
	uint32_t len = (uint32_t)(size - 2);
	if (len > VF_BUF_SIZE - VF_BUF_HEADROOM)
		len = VF_BUF_SIZE - VF_BUF_HEADROOM;
	/* the same frame twice in one vector: state (sessions, learning) is hit */
	uint32_t bi[2];
	if (vf_alloc(&w->pool, bi, 2) != 2)
		abort();
	for (int k = 0; k < 2; k++) {
		w->pool.meta[bi[k]].len = (uint16_t)len;
		w->pool.meta[bi[k]].rx_port = (uint16_t)(data[1] % cfg[m].n_ports);
		memcpy(vf_buf_data(&w->pool, bi[k]), data + 2, len);
	}
	vf_enqueue_to_node(w, vf_node_by_name("ethernet-input")->index, bi, 2);
	vf_worker_run_once(w);
	if (w->pool.n_free != w->pool.n) {
		fprintf(stderr, "buffer leak: %u of %u free\n", w->pool.n_free, w->pool.n);
		abort();
	}
	return 0;
}
