/* SPDX-License-Identifier: MIT */
/* Unit tests of the trial spec parser: valid specs and errors naming fields. */
#include <stdio.h>
#include <string.h>

#include "spec.h"

static int failures, checks;

#define BASE_PORTS "\"ports\":[{\"ifname\":\"tg0\",\"mac\":\"02:fb:00:00:00:01\"," \
	"\"peer_mac\":\"02:fb:00:00:01:01\",\"backend\":\"auto\"},{\"ifname\":\"tg1\"}]"
#define BASE_STREAMS "\"streams\":[{\"id\":0,\"tx_port\":0,\"rx_port\":1," \
	"\"src\":\"198.18.128.0/17\",\"dst\":\"198.19.128.0/17\",\"src_port\":1024,\"dst_port\":1024}]"

static void expect_ok(const char *json, const char *what)
{
	struct fg_spec sp;
	char err[512] = "";
	int rc = fg_spec_parse(json, strlen(json), &sp, err, sizeof(err));

	checks++;
	if (rc) {
		failures++;
		fprintf(stderr, "FAIL %s: unexpected error: %s\n", what, err);
	}
}

static void expect_err(const char *json, const char *needle)
{
	struct fg_spec sp;
	char err[512] = "";
	int rc = fg_spec_parse(json, strlen(json), &sp, err, sizeof(err));

	checks++;
	if (!rc || !strstr(err, needle)) {
		failures++;
		fprintf(stderr, "FAIL: expected error with \"%s\", got rc=%d \"%s\"\n", needle, rc, err);
	}
}

int main(void)
{
	struct fg_spec sp;
	char err[512];
	const char *full =
		"{" BASE_PORTS "," BASE_STREAMS ","
		"\"profile\":{\"l3\":\"ipv4\",\"frame_size\":64,\"flows\":1000,"
		"\"vary\":[\"src_ip\",\"dst_port\"],\"port_pattern\":\"rfc4814\"},"
		"\"load_pps\":100000,\"duration_s\":10.0,\"warmup_s\":1.0,\"drain_s\":0.2,"
		"\"latency\":{\"enabled\":true,\"rate_pps\":9000},\"cpus\":{\"tx\":[0],\"rx\":[0]},"
		"\"samples\":true}";

	checks++;
	if (fg_spec_parse(full, strlen(full), &sp, err, sizeof(err)) ||
	    sp.nports != 2 || sp.nstreams != 1 || sp.frame_size != 64 || sp.flows != 1000 ||
	    sp.vary != (FG_VARY_SRC_IP | FG_VARY_DST_PORT) || sp.port_pattern != FG_PORTS_RFC4814 ||
	    sp.load_pps != 100000 || !sp.latency_enabled || sp.latency_pps != 9000 ||
	    sp.ntx_cpus != 1 || !sp.samples || sp.streams[0].src_hosts != 32768 ||
	    sp.ports[0].mac[5] != 1 || !sp.ports[0].has_peer_mac || sp.ports[1].has_peer_mac) {
		failures++;
		fprintf(stderr, "FAIL full spec: %s\n", err);
	}
	expect_ok("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":\"imix\"},"
		  "\"load_pps\":\"max\",\"duration_s\":1}", "imix + max");
	expect_ok("{" BASE_PORTS ",\"streams\":[{\"id\":0,\"tx_port\":0,\"rx_port\":1,"
		  "\"src\":\"2001:2::/64\",\"dst\":\"2001:2:0:1::/64\"}],"
		  "\"profile\":{\"l3\":\"ipv6\",\"frame_size\":82},\"load_pps\":1000,\"duration_s\":1}",
		  "ipv6");
	expect_ok("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		  "\"load_pps\":1000,\"duration_s\":1,\"latency\":null}", "latency null");

	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":40},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.profile.frame_size: 40 is below 64");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":9001},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.profile.frame_size: 9001 is above 9000");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":\"big\"},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.profile.frame_size:");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"l3\":\"ipv6\",\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.profile.frame_size: 64 is below 82");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64,\"vary\":[\"ttl\"]},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.profile.vary[0]");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64,\"flows\":0},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.profile.flows: 0 is below 1");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":0,\"duration_s\":1}", "spec.load_pps: 0 is below 1");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000}", "spec.duration_s: is required");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1,\"bogus\":1}", "spec.bogus: unknown field");
	expect_err("{" BASE_PORTS ",\"streams\":[{\"id\":0,\"tx_port\":0,\"rx_port\":2,"
		   "\"src\":\"198.18.0.1\",\"dst\":\"198.19.0.1\"}],\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.streams[0].rx_port: 2 is above 1");
	expect_err("{" BASE_PORTS ",\"streams\":[{\"id\":0,\"tx_port\":1,\"rx_port\":0,"
		   "\"src\":\"198.18.0.1\",\"dst\":\"198.19.0.1\"}],\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.ports[1].peer_mac: is required");
	expect_err("{" BASE_PORTS ",\"streams\":[{\"id\":0,\"tx_port\":0,\"rx_port\":1,"
		   "\"src\":\"2001:2::1\",\"dst\":\"198.19.0.1\"}],\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.streams[0].src: \"2001:2::1\" is not an IPv4");
	expect_err("{\"ports\":[{\"ifname\":\"tg0\",\"peer_mac\":\"zz\"}]," BASE_STREAMS
		   ",\"profile\":{\"frame_size\":64},\"load_pps\":1000,\"duration_s\":1}",
		   "spec.ports[0].peer_mac");
	expect_err("{\"ports\":[{\"ifname\":\"tg0\",\"backend\":\"dpdk\"}]," BASE_STREAMS
		   ",\"profile\":{\"frame_size\":64},\"load_pps\":1000,\"duration_s\":1}",
		   "spec.ports[0].backend: \"dpdk\" is not one of");
	expect_err("{\"ports\":[{\"ifname\":\"tg0\",\"peer_mac\":\"02:fb:00:00:01:01\","
		   "\"burst_period_us\":0}]," BASE_STREAMS
		   ",\"profile\":{\"frame_size\":64},\"load_pps\":1000,\"duration_s\":1}",
		   "spec.ports[0].burst_period_us");
	expect_ok("{\"ports\":[{\"ifname\":\"tg0\",\"peer_mac\":\"02:fb:00:00:01:01\","
		  "\"burst_period_us\":1000},{\"ifname\":\"tg1\"}]," BASE_STREAMS
		  ",\"profile\":{\"frame_size\":64},\"load_pps\":1000,\"duration_s\":1}",
		  "burst_period_us");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1,\"latency\":{\"enabled\":1}}",
		   "spec.latency.enabled: must be true or false");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1,\"cpus\":{\"tx\":[-1]}}",
		   "spec.cpus.tx[0]: -1 is below 0");
	expect_err("{" BASE_PORTS ",\"streams\":[{\"id\":0,\"tx_port\":0,\"rx_port\":1,"
		   "\"src\":\"198.18.0.1\",\"dst\":\"198.19.0.1\"},{\"id\":0,\"tx_port\":0,\"rx_port\":1,"
		   "\"src\":\"198.18.0.1\",\"dst\":\"198.19.0.1\"}],\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1}", "spec.streams[1].id: 0 is used");
	expect_err("{\"ports\":[", "spec: invalid JSON");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1e7,\"duration_s\":1000}", "spec.duration_s:");
	expect_err("{" BASE_PORTS "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},"
		   "\"load_pps\":1000,\"duration_s\":1,\"duration_s\":2}", "duplicate");

	/* memif ports */
#define MIF_TAIL "," BASE_STREAMS ",\"profile\":{\"frame_size\":64},\"load_pps\":1000," \
	"\"duration_s\":1}"
	{
		const char *m = "{\"ports\":[{\"ifname\":\"m0\",\"peer_mac\":\"02:fb:00:00:01:01\","
			"\"memif\":{\"socket\":\"/run/fb/m0.sock\",\"id\":7,\"role\":\"slave\","
			"\"ring_size\":4096,\"buffer_size\":9216,\"connect_timeout_s\":2.5}},"
			"{\"ifname\":\"m1\",\"backend\":\"memif\",\"memif\":{\"socket\":\"@fb\"}}]"
			MIF_TAIL;
		const struct fg_spec_memif *a = &sp.ports[0].memif, *b = &sp.ports[1].memif;

		checks++;
		if (fg_spec_parse(m, strlen(m), &sp, err, sizeof(err)) ||
		    sp.ports[0].backend != FG_BACKEND_MEMIF || !sp.ports[0].has_memif ||
		    strcmp(a->socket, "/run/fb/m0.sock") || a->id != 7 || a->master ||
		    a->ring_size != 4096 || a->buffer_size != 9216 || a->connect_timeout_s != 2.5 ||
		    sp.ports[1].backend != FG_BACKEND_MEMIF || !b->master || b->id != 0 ||
		    b->ring_size != 1024 || b->buffer_size != 2048 || b->connect_timeout_s != 10 ||
		    strcmp(fg_backend_name(sp.ports[1].backend), "memif")) {
			failures++;
			fprintf(stderr, "FAIL memif spec: %s\n", err);
		}
	}
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"backend\":\"memif\"}]" MIF_TAIL,
		   "spec.ports[0].memif: is required with backend memif");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"backend\":\"xdp\",\"memif\":{\"socket\":\"/a\"}}]"
		   MIF_TAIL, "spec.ports[0].memif: only a port with backend memif");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"memif\":{\"id\":1}}]" MIF_TAIL,
		   "spec.ports[0].memif.socket: is required");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"memif\":{\"socket\":\"/a\",\"ring_size\":1000}}]"
		   MIF_TAIL, "spec.ports[0].memif.ring_size: 1000 is not a power of two");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"memif\":{\"socket\":\"/a\",\"ring_size\":32768}}]"
		   MIF_TAIL, "spec.ports[0].memif.ring_size: 32768 is above 16384");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"memif\":{\"socket\":\"/a\",\"buffer_size\":64}}]"
		   MIF_TAIL, "spec.ports[0].memif.buffer_size: 64 is below 128");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"memif\":{\"socket\":\"/a\",\"role\":\"client\"}}]"
		   MIF_TAIL, "spec.ports[0].memif.role: \"client\" is not master or slave");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"memif\":{\"socket\":\"/a\",\"secret\":\"x\"}}]"
		   MIF_TAIL, "spec.ports[0].memif.secret: unknown field");
	expect_err("{\"ports\":[{\"ifname\":\"m0\",\"memif\":{\"socket\":\""
		   "/a/very/long/path/a/very/long/path/a/very/long/path/a/very/long/path/a/very/long/"
		   "path/a/very/long/path/a.sock\"}}]" MIF_TAIL,
		   "spec.ports[0].memif.socket:");

	printf("test_spec: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
