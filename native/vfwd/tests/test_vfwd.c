/* SPDX-License-Identifier: MIT */
/*
 * vfwd unit tests: LPM against the reference on random tables, and the
 * graph in every mode with pg ports that capture what they transmit.
 * Bursts of 257 and 2 packets exercise the quad loops and their tails,
 * with vectors of 256 and of 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "vf_lpm.h"
#include "vf_port.h"

uint32_t vf_l2_bridge_entries(vf_worker_t *w);
uint32_t vf_nat44_sessions(vf_worker_t *w);
int vf_pg_done(vf_worker_t *w);

static int failures, checks;
#define CHECK(cond, ...) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
	} } while (0)

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- LPM --------------------------------------------------------------- */

static void test_lpm4_random(void)
{
	for (int round = 0; round < 12; round++) {
		void *d = vf_lpm4_dir24.create(8192), *r = vf_lpm4_ref.create(0);
		CHECK(d && r, "create");
		uint32_t n = 1 + (uint32_t)(rnd() % (round < 6 ? 300 : 3000));
		uint32_t *pfx = malloc(n * 4);
		uint8_t *len = malloc(n);
		for (uint32_t i = 0; i < n; i++) {
			uint8_t l = (uint8_t)(rnd() % 33);
			if (round % 3 == 0 && l < 8)
				l += 8;   /* fewer huge prefixes: keep some rounds fast */
			uint32_t a = (uint32_t)rnd();
			if (i && rnd() % 3 == 0)   /* nest inside an earlier prefix */
				a = pfx[rnd() % i] ^ (uint32_t)((uint64_t)(uint32_t)rnd() >> l);
			pfx[i] = a;
			len[i] = l;
			uint32_t nh = 2 + (uint32_t)(rnd() % 100000);
			int e1 = vf_lpm4_dir24.add(d, a, l, nh), e2 = vf_lpm4_ref.add(r, a, l, nh);
			CHECK(e1 == 0 && e2 == 0, "add %08x/%u: %d %d", a, l, e1, e2);
		}
		uint32_t bad = 0, addrs[256], nh_bulk[256];
		for (uint32_t k = 0; k < 6144; k++) {
			uint32_t a = (uint32_t)rnd();
			if (k & 1) {
				uint32_t i = (uint32_t)(rnd() % n);
				uint32_t m = len[i] ? ~0u << (32 - len[i]) : 0;
				a = (pfx[i] & m) | (a & ~m);
			}
			uint32_t x = vf_lpm4_dir24.lookup(d, a), y = vf_lpm4_ref.lookup(r, a);
			if (x != y && bad++ < 5)
				fprintf(stderr, "lpm4 round %d: %08x dir24 %u ref %u\n", round, a, x, y);
			addrs[k & 255] = a;
			if ((k & 255) == 255) {
				vf_lpm4_dir24.lookup_bulk(d, addrs, nh_bulk, 256, (int)(k & 256));
				for (int j = 0; j < 256; j++)
					if (nh_bulk[j] != vf_lpm4_ref.lookup(r, addrs[j]) && bad++ < 5)
						fprintf(stderr, "lpm4 bulk mismatch %08x\n", addrs[j]);
			}
		}
		CHECK(bad == 0, "round %d: %u mismatches in %u routes", round, bad, n);
		free(pfx);
		free(len);
		vf_lpm4_dir24.destroy(d);
		vf_lpm4_ref.destroy(r);
	}
	/* tbl8 exhaustion is reported, not a crash */
	void *d = vf_lpm4_dir24.create(2);
	CHECK(vf_lpm4_dir24.add(d, 0x0a000001, 32, 5) == 0, "1st tbl8");
	CHECK(vf_lpm4_dir24.add(d, 0x0a000101, 32, 5) == 0, "2nd tbl8");
	CHECK(vf_lpm4_dir24.add(d, 0x0a000201, 32, 5) == -28, "3rd tbl8 -> ENOSPC");
	CHECK(vf_lpm4_dir24.add(d, 0x0a000202, 32, 1u << 31) < 0, "nh too large");
	vf_lpm4_dir24.destroy(d);
}

struct r6 { uint8_t p[16]; uint8_t len; uint32_t nh; };
static int match6(const uint8_t *a, const uint8_t *p, uint8_t len)
{
	for (int b = 0; b < len; b++)
		if (((a[b / 8] ^ p[b / 8]) >> (7 - b % 8)) & 1)
			return 0;
	return 1;
}

static void test_lpm6_random(void)
{
	for (int round = 0; round < 5; round++) {
		struct vf_lpm6 *t = vf_lpm6_create();
		uint32_t n = 1 + (uint32_t)(rnd() % 500);
		struct r6 *r = calloc(n, sizeof(*r));
		for (uint32_t i = 0; i < n; i++) {
			for (int k = 0; k < 16; k++)
				r[i].p[k] = (uint8_t)rnd();
			if (i && rnd() % 2)
				memcpy(r[i].p, r[rnd() % i].p, 8);
			static const uint8_t lens[] = { 0, 16, 32, 48, 56, 64, 72, 96, 127, 128 };
			r[i].len = lens[rnd() % sizeof(lens)];
			for (int b = r[i].len; b < 128; b++)
				r[i].p[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
			r[i].nh = 2 + (uint32_t)i;
			/* a duplicate (prefix, len) replaces: keep the reference the same */
			for (uint32_t j = 0; j < i; j++)
				if (r[j].len == r[i].len && !memcmp(r[j].p, r[i].p, 16))
					r[j].nh = r[i].nh;
			CHECK(vf_lpm6_add(t, r[i].p, r[i].len, r[i].nh) == 0, "add6");
		}
		uint32_t bad = 0;
		for (int k = 0; k < 5000; k++) {
			uint8_t a[16];
			for (int j = 0; j < 16; j++)
				a[j] = (uint8_t)rnd();
			if (k & 1)
				memcpy(a, r[rnd() % n].p, 9 + rnd() % 7);
			int best = -1;
			uint32_t want = VF_LPM_MISS;
			for (uint32_t i = 0; i < n; i++)
				if (r[i].len > best && match6(a, r[i].p, r[i].len)) {
					best = r[i].len;
					want = r[i].nh;
				}
			if (vf_lpm6_lookup(t, a) != want)
				bad++;
		}
		CHECK(bad == 0, "lpm6 round %d: %u mismatches", round, bad);
		free(r);
		vf_lpm6_destroy(t);
	}
}

/* ---- graph harness ----------------------------------------------------- */

static struct vf_config cfg;
static vf_worker_t *W;

static int setup(const char *text)
{
	char err[256];
	vf_config_defaults(&cfg);
	if (vf_config_parse_string(&cfg, "test.conf", text, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	vf_fib = cfg.fib;
	vf_cfg = &cfg;
	W = aligned_alloc(VF_CACHE_LINE, sizeof(*W));
	if (vf_worker_init(W, 0, &cfg, 4096, VF_STRIDE_PG))
		return -1;
	for (uint32_t k = 0; k < cfg.n_ports; k++) {
		if (vf_port_open(W, &cfg, k, err, sizeof(err)))
			return -1;
		W->ports[k]->cap_capture = 4096;
		W->ports[k]->capture = malloc(4096 * sizeof(uint32_t));
	}
	return 0;
}

static void teardown(void)
{
	for (uint32_t k = 0; k < W->n_ports; k++)
		vf_free(&W->pool, W->ports[k]->capture, W->ports[k]->n_capture);
	CHECK(W->pool.n_free == W->pool.n, "buffer leak: %u of %u free", W->pool.n_free,
	      W->pool.n);
	vf_port_close_all(W);
	vf_worker_fini(W);
	free(W);
	W = NULL;
	vf_config_free(&cfg);
}

static void inject(const uint8_t *pkt, uint32_t len, uint16_t port)
{
	uint32_t bi;
	if (!vf_alloc(&W->pool, &bi, 1))
		abort();
	W->pool.meta[bi].len = (uint16_t)len;
	W->pool.meta[bi].rx_port = port;
	memcpy(vf_buf_data(&W->pool, bi), pkt, len);
	vf_enqueue_to_node(W, vf_node_by_name("ethernet-input")->index, &bi, 1);
}

static void run(void)
{
	vf_worker_run_once(W);
}

static uint64_t drops(const char *name)
{
	for (uint32_t e = 0; e < vf_n_errors; e++)
		if (!strcmp(vf_error_names[e], name))
			return W->drops[e];
	fprintf(stderr, "no error named '%s'\n", name);
	abort();
}

static uint32_t captured(uint32_t port) { return W->ports[port]->n_capture; }
static uint8_t *cap_pkt(uint32_t port, uint32_t i, uint32_t *len)
{
	uint32_t bi = W->ports[port]->capture[i];
	if (len)
		*len = W->pool.meta[bi].len;
	return vf_buf_data(&W->pool, bi);
}
static void cap_clear(void)
{
	for (uint32_t k = 0; k < W->n_ports; k++) {
		vf_free(&W->pool, W->ports[k]->capture, W->ports[k]->n_capture);
		W->ports[k]->n_capture = 0;
	}
}

static const uint8_t MAC_TG0[6] = { 2, 0xfb, 0, 0, 0, 1 }, MAC_TG1[6] = { 2, 0xfb, 0, 0, 0, 2 };
static const uint8_t MAC_DUT0[6] = { 2, 0xfb, 0, 0, 1, 1 }, MAC_DUT1[6] = { 2, 0xfb, 0, 0, 1, 2 };

static uint16_t csum(const uint8_t *p, uint32_t n, uint32_t sum)
{
	return (uint16_t)~vf_csum_fold(vf_csum_add(p, n, sum));
}

/* Ethernet/IPv4/UDP with valid IP and UDP checksums; returns length. */
static uint32_t mk_ip4(uint8_t *p, const uint8_t *dmac, const uint8_t *smac, uint32_t src,
		       uint32_t dst, uint8_t ttl, uint16_t sport, uint16_t dport, uint32_t payload)
{
	memset(p, 0, 14 + 28 + payload);
	memcpy(p, dmac, 6);
	memcpy(p + 6, smac, 6);
	vf_wr16(p + 12, 0x0800);
	uint8_t *ip = p + 14, *udp = ip + 20;
	ip[0] = 0x45;
	vf_wr16(ip + 2, (uint16_t)(28 + payload));
	ip[8] = ttl;
	ip[9] = 17;
	vf_wr32(ip + 12, src);
	vf_wr32(ip + 16, dst);
	vf_wr16(ip + 10, csum(ip, 20, 0));
	vf_wr16(udp, sport);
	vf_wr16(udp + 2, dport);
	vf_wr16(udp + 4, (uint16_t)(8 + payload));
	for (uint32_t i = 0; i < payload; i++)
		udp[8 + i] = (uint8_t)(i * 7);
	uint32_t ph = vf_csum_add(ip + 12, 8, 0) + 17 + 8 + payload;
	uint16_t c = csum(udp, 8 + payload, ph);
	vf_wr16(udp + 6, c ? c : 0xffff);
	return 14 + 28 + payload;
}

static int ip4_csum_valid(const uint8_t *ip) { return csum(ip, (ip[0] & 15u) * 4, 0) == 0; }
static int udp4_csum_valid(const uint8_t *ip)
{
	const uint8_t *udp = ip + 20;
	uint32_t l = vf_rd16(udp + 4);
	if (!vf_rd16(udp + 6))
		return 1;
	uint32_t ph = vf_csum_add(ip + 12, 8, 0) + 17 + l;
	return csum(udp, l, ph) == 0;
}

#define ROUTER_CONF(mv) \
	"mode router\nmax-vector " mv "\n" \
	"port 0 dut0 driver pg mac 02:fb:00:00:01:01 ip4 198.18.0.2\n" \
	"port 1 dut1 driver pg mac 02:fb:00:00:01:02 ip4 198.19.0.2 ip6 2001:2:0:1::2\n" \
	"neighbor 198.19.0.1 02:fb:00:00:00:02 port 1\n" \
	"neighbor 198.18.0.1 02:fb:00:00:00:01 port 0\n" \
	"neighbor 2001:2:0:1::1 02:fb:00:00:00:02 port 1\n" \
	"route 198.19.128.0/17 via 198.19.0.1\n" \
	"route 198.18.128.0/17 via 198.18.0.1 port 0\n" \
	"route 2001:2:0:11::/64 via 2001:2:0:1::1\n"

static void test_ip4_bursts(void)
{
	/* the same frames out whatever the vector size, prefetch on or off */
	const char *confs[] = { ROUTER_CONF("256"), ROUTER_CONF("1"),
				ROUTER_CONF("256") "prefetch off\n" };
	for (int c = 0; c < 3; c++) {
		CHECK(setup(confs[c]) == 0, "setup");
		CHECK(!W->prefetch == (c == 2), "prefetch %d in conf %d", W->prefetch, c);
		uint32_t bursts[] = { 257, 2 };
		for (int b = 0; b < 2; b++) {
			uint8_t pkt[128];
			for (uint32_t i = 0; i < bursts[b]; i++) {
				uint32_t len = mk_ip4(pkt, MAC_DUT0, MAC_TG0, 0xc6128000 + i,
						      0xc6138000 + i, (uint8_t)(64 - (i % 3)), 1024,
						      1024, 18);
				inject(pkt, len, 0);
			}
			run();
			CHECK(captured(1) == bursts[b], "vector %u burst %u: %u forwarded",
			      cfg.max_vector, bursts[b], captured(1));
			for (uint32_t i = 0; i < captured(1); i++) {
				uint32_t len;
				uint8_t *p = cap_pkt(1, i, &len);
				CHECK(!memcmp(p, MAC_TG1, 6) && !memcmp(p + 6, MAC_DUT1, 6), "macs %u", i);
				CHECK(p[14 + 8] == 63 - (i % 3), "ttl %u: %u", i, p[22]);
				CHECK(ip4_csum_valid(p + 14), "ip checksum %u", i);
				CHECK(vf_rd32(p + 14 + 16) == 0xc6138000 + i, "order %u", i);
				CHECK(len == 60, "len %u", len);
			}
			cap_clear();
		}
		uint32_t ni = vf_node_by_name("ip4-input")->index;
		uint64_t want_calls = cfg.max_vector == 1 ? 259 : 3;
		CHECK(W->rt[ni].calls == want_calls, "ip4-input calls %llu (want %llu)",
		      (unsigned long long)W->rt[ni].calls, (unsigned long long)want_calls);
		CHECK(W->rt[ni].vectors == 259, "ip4-input vectors");
		teardown();
	}
}

static void test_malformed(void)
{
	CHECK(setup(ROUTER_CONF("256")) == 0, "setup");
	uint8_t good[128], p[128];
	uint32_t len = mk_ip4(good, MAC_DUT0, MAC_TG0, 0xc6128001, 0xc6138001, 64, 1, 2, 18);
	struct { const char *reason; int mutate; uint32_t len; } cases[] = {
		{ "ethernet-input: frame too short", 0, 10 },
		{ "ip4-input: packet too short", 0, 14 + 12 },
		{ "ip4-input: ip4 version != 4", 1, 0 },
		{ "ip4-input: bad header length", 2, 0 },
		{ "ip4-input: bad header length", 3, 0 },
		{ "ip4-input: bad checksum", 4, 0 },
		{ "ip4-input: ttl expired", 5, 0 },
		{ "ip4-input: ttl expired", 6, 0 },
		{ "ip4-input: bad total length", 7, 0 },
		{ "ethernet-input: l3 port: destination MAC is not the port's", 8, 0 },
		{ "ethernet-input: arp (no control plane)", 9, 0 },
		{ "ethernet-input: unknown ethertype", 10, 0 },
		{ "ip4-lookup: no route", 11, 0 },
		{ "ip4-lookup: for us (no control plane)", 12, 0 },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		memcpy(p, good, len);
		uint32_t l = cases[c].len ? cases[c].len : len;
		uint8_t *ip = p + 14;
		int fix = 1;
		switch (cases[c].mutate) {
		case 1: ip[0] = 0x65; break;
		case 2: ip[0] = 0x44; break;
		case 3: ip[0] = 0x4f; break;               /* 60 bytes > packet */
		case 4: ip[10] ^= 0x55; fix = 0; break;
		case 5: ip[8] = 1; break;
		case 6: ip[8] = 0; break;
		case 7: vf_wr16(ip + 2, 200); break;
		case 8: p[0] = 0x04; break;
		case 9: vf_wr16(p + 12, 0x0806); memcpy(p, "\xff\xff\xff\xff\xff\xff", 6); break;
		case 10: vf_wr16(p + 12, 0x88cc); break;
		case 11: vf_wr32(ip + 16, 0x0a000001); break;
		case 12: vf_wr32(ip + 16, 0xc6130002); break;
		}
		if (fix && cases[c].mutate && cases[c].mutate < 8) {
			vf_wr16(ip + 10, 0);
			uint32_t hl = (ip[0] & 15u) * 4;
			vf_wr16(ip + 10, csum(ip, hl < 20 ? 20 : hl > 40 ? 20 : hl, 0));
		} else if (cases[c].mutate >= 11) {
			vf_wr16(ip + 10, 0);
			vf_wr16(ip + 10, csum(ip, 20, 0));
		}
		uint64_t before = drops(cases[c].reason);
		/* bursts of 2 and 257 of the same malformed packet */
		for (int k = 0; k < 257; k++)
			inject(p, l, 0);
		run();
		inject(p, l, 0);
		inject(p, l, 0);
		run();
		CHECK(drops(cases[c].reason) - before == 259, "case %zu '%s': %llu", c,
		      cases[c].reason, (unsigned long long)(drops(cases[c].reason) - before));
		CHECK(captured(1) == 0 && captured(0) == 0, "case %zu forwarded", c);
		cap_clear();
	}
	/* an Ethernet pad after the IP packet is trimmed, not forwarded */
	memcpy(p, good, len);
	inject(p, len + 6, 0);
	run();
	CHECK(captured(1) == 1 && W->pool.meta[W->ports[1]->capture[0]].len == len, "trim pad");
	cap_clear();
	teardown();
}

/* ip4-input's fast test sums the header as 64-bit words and tests the sum
 * mod 0xffff: it must agree with RFC 1071's fold on every header. Random
 * headers (addresses, TOS, ID; sources that make the 64-bit sums carry)
 * with a valid checksum are forwarded; each
 * with one bit flipped in its addresses or ID (no other check can fail) is
 * dropped for its checksum; the same with 4 bytes of options (slow path). */
static void test_ip4_checksum(void)
{
	CHECK(setup(ROUTER_CONF("256")) == 0, "setup");
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	uint32_t want_fwd = 0, want_bad = 0;
	uint64_t before = drops("ip4-input: bad checksum");
	for (int round = 0; round < 8; round++) {
		for (int k = 0; k < 200; k++) {
			uint8_t p[128];
			rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
			uint32_t len = mk_ip4(p, MAC_DUT0, MAC_TG0, (uint32_t)rng,
					      0xc6138000u | (uint32_t)(rng >> 32 & 0x7fff), 64, 1, 2, 18);
			uint8_t *ip = p + 14;
			ip[1] = (uint8_t)(rng >> 48);
			vf_wr16(ip + 4, (uint16_t)(rng >> 52));
			/* sources whose words carry out of 64 bits in the fast sum */
			switch (k / 2 % 4) {
			case 1: vf_wr16(ip + 14, 0xffff); break;
			case 2: vf_wr32(ip + 12, 0xffffffff); break;
			case 3: vf_wr32(ip + 12, 0xffffffff); vf_wr16(ip + 4, 0); break;
			}
			if (round & 1) {         /* 4 bytes of options: NOPs */
				memmove(ip + 24, ip + 20, len - 34);
				memset(ip + 20, 1, 4);
				ip[0] = 0x46;
				vf_wr16(ip + 2, (uint16_t)(vf_rd16(ip + 2) + 4));
				len += 4;
			}
			uint32_t hl = (ip[0] & 15u) * 4;
			vf_wr16(ip + 10, 0);
			vf_wr16(ip + 10, csum(ip, hl, 0));
			CHECK(ip4_csum_valid(ip), "round %d packet %d built valid", round, k);
			if (k & 1) {
				static const uint8_t where[] = { 4, 5, 12, 13, 14, 15, 16, 17, 18, 19 };
				ip[where[(rng >> 8) % sizeof(where)]] ^= (uint8_t)(1u << (rng >> 16) % 8);
				want_bad++;
			} else {
				want_fwd++;
			}
			inject(p, len, 0);
		}
		run();
	}
	CHECK(captured(1) == want_fwd, "forwarded %u (want %u)", captured(1), want_fwd);
	CHECK(drops("ip4-input: bad checksum") - before == want_bad, "bad checksum %llu (want %u)",
	      (unsigned long long)(drops("ip4-input: bad checksum") - before), want_bad);
	for (uint32_t i = 0; i < captured(1); i++) {
		uint32_t l;
		uint8_t *q = cap_pkt(1, i, &l);
		CHECK(ip4_csum_valid(q + 14) && q[14 + 8] == 63, "forwarded %u: ttl and checksum", i);
	}
	cap_clear();
	teardown();
}

static void test_ip6(void)
{
	CHECK(setup(ROUTER_CONF("256")) == 0, "setup");
	uint8_t p[128];
	uint32_t bursts[] = { 257, 2 };
	for (int b = 0; b < 2; b++) {
		for (uint32_t i = 0; i < bursts[b]; i++) {
			memset(p, 0, sizeof(p));
			memcpy(p, MAC_DUT0, 6);
			memcpy(p + 6, MAC_TG0, 6);
			vf_wr16(p + 12, 0x86dd);
			uint8_t *ip = p + 14;
			ip[0] = 0x60;
			vf_wr16(ip + 4, 8);
			ip[6] = 17;
			ip[7] = 64;
			static const uint8_t src[16] = { 0x20, 1, 0, 2, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 5 };
			static const uint8_t dst[16] = { 0x20, 1, 0, 2, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 9 };
			memcpy(ip + 8, src, 16);
			memcpy(ip + 24, dst, 16);
			ip[39] = (uint8_t)i;
			inject(p, 14 + 48, 0);
		}
		run();
		CHECK(captured(1) == bursts[b], "ip6 burst %u: %u", bursts[b], captured(1));
		for (uint32_t i = 0; i < captured(1); i++) {
			uint8_t *q = cap_pkt(1, i, NULL);
			CHECK(q[14 + 7] == 63 && !memcmp(q, MAC_TG1, 6) && !memcmp(q + 6, MAC_DUT1, 6),
			      "ip6 rewrite %u", i);
		}
		cap_clear();
	}
	/* hop limit 1, bad version, no route, too short */
	uint64_t h = drops("ip6-input: hop limit expired"), v = drops("ip6-input: ip6 version != 6");
	uint64_t nr = drops("ip6-lookup: no route"), sh = drops("ip6-input: packet too short");
	uint64_t pl = drops("ip6-input: bad payload length");
	p[14 + 7] = 1;
	inject(p, 62, 0);
	p[14 + 7] = 64;
	p[14] = 0x40;
	inject(p, 62, 0);
	p[14] = 0x60;
	p[14 + 24] = 0x30;
	inject(p, 62, 0);
	inject(p, 14 + 39, 0);
	vf_wr16(p + 14 + 4, 9);
	inject(p, 62, 0);
	run();
	CHECK(drops("ip6-input: hop limit expired") == h + 1, "hlim");
	CHECK(drops("ip6-input: ip6 version != 6") == v + 1, "ver6");
	CHECK(drops("ip6-lookup: no route") == nr + 1, "noroute6");
	CHECK(drops("ip6-input: packet too short") == sh + 1, "short6");
	CHECK(drops("ip6-input: bad payload length") == pl + 1, "plen6");
	teardown();
}

static void test_xconnect(void)
{
	const char *conf = "mode xconnect\nport 0 a driver pg\nport 1 b driver pg\nxconnect 0 1\n";
	CHECK(setup(conf) == 0, "setup");
	uint8_t p[128];
	uint32_t len = mk_ip4(p, MAC_DUT0, MAC_TG0, 1, 2, 1, 1, 2, 10);
	for (int k = 0; k < 257; k++)
		inject(p, len, 0);
	inject(p, len, 1);
	inject(p, len, 1);
	run();
	CHECK(captured(1) == 257 && captured(0) == 2, "xc %u %u", captured(1), captured(0));
	CHECK(!memcmp(cap_pkt(1, 0, NULL), p, len), "unchanged");
	cap_clear();
	teardown();
}

static uint32_t mk_l2(uint8_t *p, const uint8_t *dst, const uint8_t *src)
{
	memset(p, 0, 60);
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	vf_wr16(p + 12, 0x88b5);
	return 60;
}

static void test_bridge(void)
{
	const char *conf = "mode bridge\nbridge aging 10 size 64\nport 0 a driver pg\n"
			   "port 1 b driver pg\nport 2 c driver pg\n";
	CHECK(setup(conf) == 0, "setup");
	uint8_t p[64];
	const uint8_t A[6] = { 2, 0, 0, 0, 0, 0xa }, B[6] = { 2, 0, 0, 0, 0, 0xb };
	const uint8_t BC[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	inject(p, mk_l2(p, B, A), 0);           /* unknown: flooded to 1 and 2 */
	run();
	CHECK(captured(0) == 0 && captured(1) == 1 && captured(2) == 1, "flood %u %u %u",
	      captured(0), captured(1), captured(2));
	CHECK(!memcmp(cap_pkt(2, 0, NULL), p, 60) && !memcmp(cap_pkt(1, 0, NULL), p, 60), "copy");
	cap_clear();
	inject(p, mk_l2(p, A, B), 2);           /* A learnt on 0 */
	run();
	CHECK(captured(0) == 1 && captured(1) == 0 && captured(2) == 0, "learnt A");
	cap_clear();
	for (int k = 0; k < 257; k++)            /* B learnt on 2 */
		inject(p, mk_l2(p, B, A), 0);
	run();
	CHECK(captured(2) == 257 && captured(1) == 0, "learnt B: %u", captured(2));
	cap_clear();
	inject(p, mk_l2(p, BC, A), 0);          /* broadcast floods */
	run();
	CHECK(captured(1) == 1 && captured(2) == 1, "broadcast");
	cap_clear();
	uint64_t f = drops("l2-bridge: destination is on the receiving port");
	inject(p, mk_l2(p, A, B), 0);           /* B moves to port 0, A is on 0: filtered */
	run();
	CHECK(drops("l2-bridge: destination is on the receiving port") == f + 1, "filtered");
	CHECK(vf_l2_bridge_entries(W) == 2, "entries %u", vf_l2_bridge_entries(W));
	W->now_offset = 100;                     /* everything learnt ages out */
	inject(p, mk_l2(p, A, B), 1);
	run();
	CHECK(captured(0) == 1 && captured(2) == 1, "aged out -> flood %u %u", captured(0),
	      captured(2));
	cap_clear();
	teardown();
}

/* A table of bridge_size entries once filled keeps learning after aging:
 * aged-out entries give their room back. */
static void test_bridge_aging_frees_room(void)
{
	const char *conf = "mode bridge\nbridge aging 10 size 16\nport 0 a driver pg\n"
			   "port 1 b driver pg\nport 2 c driver pg\n";
	CHECK(setup(conf) == 0, "setup");
	uint8_t p[64];
	const uint8_t BC[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t S[6] = { 2, 0, 0, 0, 1, 0 }, N[6] = { 2, 0, 0, 0, 2, 5 };
	for (int k = 1; k <= 16; k++) {          /* fill the table from port 0 */
		S[5] = (uint8_t)k;
		inject(p, mk_l2(p, BC, S), 0);
	}
	run();
	CHECK(vf_l2_bridge_entries(W) == 16, "full %u", vf_l2_bridge_entries(W));
	cap_clear();
	inject(p, mk_l2(p, BC, N), 1);          /* full and nothing aged: N not learnt */
	inject(p, mk_l2(p, N, S), 0);
	run();
	CHECK(vf_l2_bridge_entries(W) == 16, "still %u", vf_l2_bridge_entries(W));
	CHECK(captured(2) == 2 && captured(1) == 1, "N unknown, flooded %u %u", captured(1),
	      captured(2));
	cap_clear();
	W->now_offset = 100;                     /* all 16 age out */
	inject(p, mk_l2(p, BC, N), 1);          /* N learnt in their room */
	run();
	CHECK(vf_l2_bridge_entries(W) == 1, "after sweep %u", vf_l2_bridge_entries(W));
	cap_clear();
	inject(p, mk_l2(p, N, S), 0);           /* to N: forwarded to port 1 only */
	run();
	CHECK(captured(1) == 1 && captured(2) == 0, "N learnt %u %u", captured(1), captured(2));
	cap_clear();
	uint64_t st[VF_L2_N_STATS];              /* entries learnt moved flooded full aged */
	vf_l2_bridge_stats(W, st);
	CHECK(st[0] == 2 && st[1] == 18 && st[2] == 0 && st[3] == 19 && st[4] == 1 && st[5] == 16,
	      "stats %llu %llu %llu %llu %llu %llu", (unsigned long long)st[0],
	      (unsigned long long)st[1], (unsigned long long)st[2], (unsigned long long)st[3],
	      (unsigned long long)st[4], (unsigned long long)st[5]);
	teardown();
}

static void test_bridge_static(void)
{
	const char *conf = "mode bridge\nbridge aging 1\nport 0 a driver pg\nport 1 b driver pg\n"
			   "port 2 c driver pg\nbridge-mac 02:00:00:00:00:0b port 2\n";
	CHECK(setup(conf) == 0, "setup");
	uint8_t p[64];
	const uint8_t A[6] = { 2, 0, 0, 0, 0, 0xa }, B[6] = { 2, 0, 0, 0, 0, 0xb };
	W->now_offset = 1000;                    /* static entries never age */
	inject(p, mk_l2(p, B, A), 0);
	inject(p, mk_l2(p, A, B), 1);           /* B seen on 1: a static entry does not move */
	inject(p, mk_l2(p, B, A), 0);
	run();
	CHECK(captured(2) == 2 && captured(1) == 0 && captured(0) == 1, "static %u %u %u",
	      captured(0), captured(1), captured(2));
	cap_clear();
	teardown();
}

static void test_nat44(void)
{
	const char *conf = "mode nat44\n"
		"port 0 dut0 driver pg mac 02:fb:00:00:01:01\n"
		"port 1 dut1 driver pg mac 02:fb:00:00:01:02\n"
		"neighbor 198.19.0.1 02:fb:00:00:00:02 port 1\n"
		"neighbor 198.18.0.1 02:fb:00:00:00:01 port 0\n"
		"route 198.19.128.0/17 via 198.19.0.1\nroute 198.18.128.0/17 via 198.18.0.1\n"
		"nat44 inside 0 outside 1 pool 198.19.0.100 sessions 1024 ports 5000-5999\n";
	CHECK(setup(conf) == 0, "setup");
	uint8_t p[128];
	uint32_t len;
	for (uint32_t i = 0; i < 257; i++) {
		len = mk_ip4(p, MAC_DUT0, MAC_TG0, 0xc6128005, 0xc6138009, 64,
			     (uint16_t)(1000 + (i % 5)), 80, 22);
		inject(p, len, 0);
	}
	run();
	CHECK(captured(1) == 257, "in2out %u", captured(1));
	CHECK(vf_nat44_sessions(W) == 5, "sessions %u", vf_nat44_sessions(W));
	uint16_t outport[5];
	for (uint32_t i = 0; i < captured(1); i++) {
		uint8_t *q = cap_pkt(1, i, NULL), *ip = q + 14;
		CHECK(vf_rd32(ip + 12) == 0xc6130064, "src rewritten");
		CHECK(ip4_csum_valid(ip) && udp4_csum_valid(ip), "checksums in2out %u", i);
		uint16_t sp = vf_rd16(ip + 20);
		CHECK(sp >= 5000 && sp <= 5999, "port range %u", sp);
		if (i < 5)
			outport[i] = sp;
		else
			CHECK(sp == outport[i % 5], "stable mapping");
	}
	cap_clear();
	/* return path */
	for (int i = 0; i < 5; i++) {
		len = mk_ip4(p, MAC_DUT1, MAC_TG1, 0xc6138009, 0xc6130064, 64, 80, outport[i], 22);
		inject(p, len, 1);
	}
	len = mk_ip4(p, MAC_DUT1, MAC_TG1, 0xc6138009, 0xc6130064, 64, 80, 4000, 22);
	uint64_t ns = drops("nat44: out2in: no session");
	inject(p, len, 1);
	run();
	CHECK(drops("nat44: out2in: no session") == ns + 1, "no session");
	CHECK(captured(0) == 5, "out2in %u", captured(0));
	for (uint32_t i = 0; i < captured(0); i++) {
		uint8_t *q = cap_pkt(0, i, NULL), *ip = q + 14;
		CHECK(vf_rd32(ip + 16) == 0xc6128005 && vf_rd16(ip + 22) == 1000 + i, "dst back");
		CHECK(ip4_csum_valid(ip) && udp4_csum_valid(ip), "checksums out2in");
		CHECK(!memcmp(q, MAC_TG0, 6) && ip[8] == 63, "routed back");
	}
	cap_clear();
	teardown();
}

static void test_work(void)
{
	const char *confs[] = {
		"mode work\nwork lookups 3 hashes 2 hash crc32 arith 5 regs 2 recirc 2\n",
		"mode work\nwork lookups 0 hashes 4 hash jhash arith 0 regs 0 recirc 0\n",
	};
	for (int c = 0; c < 2; c++) {
		char conf[1024];
		snprintf(conf, sizeof(conf), "%s%s", confs[c],
			 "port 0 dut0 driver pg mac 02:fb:00:00:01:01\n"
			 "port 1 dut1 driver pg mac 02:fb:00:00:01:02\n"
			 "neighbor 198.19.0.1 02:fb:00:00:00:02 port 1\n"
			 "route 198.19.128.0/17 via 198.19.0.1\n");
		CHECK(setup(conf) == 0, "setup");
		uint8_t p[128];
		for (int i = 0; i < 257; i++)
			inject(p, mk_ip4(p, MAC_DUT0, MAC_TG0, 0xc6128000 + (uint32_t)i, 0xc6138001,
					 64, 1, 2, 18), 0);
		run();
		CHECK(captured(1) == 257, "work forwarded %u", captured(1));
		uint32_t e = vf_node_by_name("ethernet-input")->index;
		uint64_t want = c == 0 ? 3 * 257 : 257;
		CHECK(W->rt[e].vectors == want, "recirculated: %llu",
		      (unsigned long long)W->rt[e].vectors);
		CHECK(cap_pkt(1, 0, NULL)[22] == 63, "ttl once");
		cap_clear();
		teardown();
	}
}

static void test_pg_and_trace(void)
{
	const char *conf = ROUTER_CONF("256") "trace 8\n"
		"pg port 0 size 64 flows 100 src 198.18.128.0/17 dst 198.19.128.0/17 packets 1000\n";
	CHECK(setup(conf) == 0, "setup");
	W->trace_left = 8;
	while (!vf_pg_done(W))
		run();
	run();
	CHECK(captured(1) == 1000, "pg forwarded %u", captured(1));
	for (uint32_t i = 0; i < captured(1); i += 97) {
		uint8_t *q = cap_pkt(1, i, NULL);
		CHECK(ip4_csum_valid(q + 14) && q[22] == 63, "pg packet %u", i);
	}
	char *buf = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);
	vf_trace_dump(f, &W, 1);
	fclose(f);
	CHECK(strstr(buf, "\"pg-input\"") && strstr(buf, "flow 0 length 60"), "trace: %s", buf);
	CHECK(strstr(buf, "\"ip4-rewrite\"") && strstr(buf, "ttl 63") &&
	      strstr(buf, "\"ip4-lookup\"") && strstr(buf, "\"port-output\""), "trace path: %s", buf);
	int records = 0;
	for (char *q = buf; (q = strstr(q, "\"worker\"")); q++)
		records++;
	CHECK(records == 8 * 6, "8 packets x 6 nodes traced: %d", records);
	free(buf);
	f = open_memstream(&buf, &sz);
	vf_stats_json(f, &W, 1, 2.5e9, &cfg);
	fclose(f);
	CHECK(strstr(buf, "\"ip4-rewrite\": {\"calls\": 4, \"vectors\": 1000"), "stats: %.300s", buf);
	free(buf);
	cap_clear();
	teardown();

	/* IPv6 and random destinations */
	const char *conf6 = ROUTER_CONF("256")
		"pg port 0 ipv6 size 78 flows 7 src 2001:2:0:10::/64 dst 2001:2:0:11::/64 "
		"dst-random packets 300\n";
	CHECK(setup(conf6) == 0, "setup6");
	while (!vf_pg_done(W))
		run();
	CHECK(captured(1) == 300, "pg6 forwarded %u", captured(1));
	cap_clear();
	teardown();
}

static void test_config_errors(void)
{
	struct { const char *text, *want; } cases[] = {
		{ "port 0 a driver pg\nmax-vector 300\n", "test.conf:2: max-vector" },
		{ "\n\nport 0 a driver pgx\n", "test.conf:3: port: driver 'pgx'" },
		{ "port 0 a driver pg\nroute 10.0.0.0/33 via 10.0.0.1\n", "test.conf:2: route: bad prefix" },
		{ "port 0 a driver pg\n# c\nroute 10.0.0.0/8 via 10.0.0.1\n",
		  "test.conf:3: route: next hop has no neighbour" },
		{ "port 0 a driver pg\nfoo bar\n", "test.conf:2: unknown statement 'foo'" },
		{ "port 1 a driver pg\n", "test.conf:1: port: index 1 out of order" },
		{ "mode xconnect\nport 0 a driver pg\n", "test.conf:2: port 0: mode xconnect" },
		{ "port 0 a driver pg\nneighbor 1.2.3.4 zz:00:00:00:00:00 port 0\n",
		  "test.conf:2: neighbor: bad MAC" },
		{ "port 0 a driver pg\npg size 10 src 1.0.0.0/8 dst 2.0.0.0/8\n", "test.conf:2: pg: size" },
		{ "port 0 a driver pg\nwork hashes 5 hash md5\n", "test.conf:2: work: hash 'md5'" },
		{ "port 0 a driver pg\nring-size 1000\n", "test.conf:2: ring-size" },
		{ "port 0 a driver pg\n\nfill-depth 8\n", "test.conf:3: fill-depth" },
		{ "port 0 a driver pg\nfill-depth 2048\nring-size 512\n",
		  "test.conf:2: fill-depth 2048 is more than the fill ring holds" },
		{ "", "no 'port' statement" },
		{ "mode nat44\nport 0 a driver pg\nport 1 b driver pg\n",
		  "test.conf:1: mode nat44 needs 'nat44 inside" },
		{ "mode nat44\nworkers 2\nport 0 a driver xdp\nport 1 b driver xdp\n"
		  "nat44 inside 0 outside 1 pool 198.19.0.100\n",
		  "test.conf:2: workers 2: mode nat44 keeps its sessions per worker" },
		{ "port 0 a driver pg\n\npg port 3 size 64 src 198.18.0.0/16 dst 198.19.0.0/16\n",
		  "test.conf:3: pg: port 3 does not exist" },
		{ "port 0 a driver pg\nlpm-tbl8 1\nneighbor 1.1.1.1 02:00:00:00:00:01 port 0\n"
		  "route 10.0.0.1/32 via 1.1.1.1\nroute 10.0.1.1/32 via 1.1.1.1\n",
		  "test.conf:5: route: DIR-24-8 has no free tbl8 group" },
		{ "port 0 m driver memif\n", "test.conf:1: port: driver memif needs 'socket PATH'" },
		{ "port 0 m driver pg socket /x\n", "test.conf:1: port: socket is for driver memif" },
		{ "port 0 m driver memif socket /x role client\n", "test.conf:1: port: role 'client'" },
		{ "port 0 m driver memif socket /x id -1\n", "test.conf:1: port: id '-1'" },
		{ "port 0 m driver memif socket /x\nport 1 n driver memif socket /x\n",
		  "test.conf:2: port 1: memif id 0 on /x is port 0's too" },
		{ "port 0 m driver memif socket /x\nport 1 e driver xdp\n",
		  "test.conf:2: port 1: memif ports (port 0) and kernel ports cannot be mixed" },
		{ "workers 2\nport 0 m driver memif socket /x\n",
		  "test.conf:1: workers 2: memif ports run one worker" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vf_config c;
		char err[256] = "";
		vf_config_defaults(&c);
		int rc = vf_config_parse_string(&c, "test.conf", cases[i].text, err, sizeof(err));
		CHECK(rc == -1 && strstr(err, cases[i].want), "case %zu: got '%s', want '%s'", i, err,
		      cases[i].want);
		vf_config_free(&c);
	}
}

static void test_config_memif(void)
{
	struct vf_config c;
	char err[256] = "";
	vf_config_defaults(&c);
	int rc = vf_config_parse_string(&c, "m.conf",
		"mode xconnect\nport 0 m0 driver memif socket /run/fb/d0.sock\n"
		"port 1 m1 driver memif socket @fb id 7 role master mac 02:00:00:00:00:09\n"
		"port 2 p driver pg\nxconnect 0 1\nxconnect 1 0\nxconnect 2 0\n", err, sizeof(err));
	CHECK(rc == 0, "memif config: %s", err);
	CHECK(c.port[0].drv == VF_PORT_MEMIF && !strcmp(c.port[0].socket, "/run/fb/d0.sock") &&
	      c.port[0].memif_id == 0 && !c.port[0].memif_master, "memif port 0");
	CHECK(c.port[1].drv == VF_PORT_MEMIF && !strcmp(c.port[1].socket, "@fb") &&
	      c.port[1].memif_id == 7 && c.port[1].memif_master && c.port[1].mac[5] == 9,
	      "memif port 1");
	/* a slave's pool is the shared memory; a master-only config keeps its own */
	CHECK(c.pool_shared == 1 && !c.fill_depth_set, "pool_shared %d", c.pool_shared);
	CHECK(!strcmp(vf_port_drv_name(VF_PORT_MEMIF), "memif"), "driver name");
	uint8_t mac[6];
	vf_memif_default_mac(1, mac);
	CHECK(mac[0] == 0x02 && mac[5] == 2, "default memif MAC");
	vf_config_free(&c);
	vf_config_defaults(&c);
	rc = vf_config_parse_string(&c, "m.conf", "port 0 m0 driver memif socket /a role master\n"
				    "fill-depth 512\n", err, sizeof(err));
	CHECK(rc == 0 && c.pool_shared == 0 && c.fill_depth_set, "master-only memif: %s", err);
	vf_config_free(&c);
}

int main(void)
{
	if (vf_graph_init())
		return 1;
	test_lpm4_random();
	test_lpm6_random();
	test_ip4_bursts();
	test_malformed();
	test_ip4_checksum();
	test_ip6();
	test_xconnect();
	test_bridge();
	test_bridge_static();
	test_bridge_aging_frees_room();
	test_nat44();
	test_work();
	test_pg_and_trace();
	test_config_errors();
	test_config_memif();
	printf("test_vfwd: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
