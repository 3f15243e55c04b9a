/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of native/common: checksums, frame builder, flows, IMIX,
 * histogram layout and encoding, sequence tracking.
 *   test_common              run the tests
 *   test_common frames       print test frames as hex (decoded by scapy in
 *                            tests/test_fwdgen_native.py)
 *   test_common hdr V:N ...  print the encoding of a histogram with N
 *                            samples of value V (read back by hdrhistogram)
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_hdr.h"
#include "fg_pkt.h"
#include "fg_seq.h"

static int failures, checks;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		checks++;                                                  \
		if (!(cond)) {                                             \
			failures++;                                        \
			fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                      \
			fprintf(stderr, "\n");                             \
		}                                                          \
	} while (0)

static void cfg_init(struct fg_pktcfg *c, int ipv6, uint32_t frame_size)
{
	uint32_t hosts;

	memset(c, 0, sizeof(*c));
	c->ipv6 = ipv6;
	memcpy(c->src_mac, "\x02\xfb\x00\x00\x00\x01", 6);
	memcpy(c->dst_mac, "\x02\xfb\x00\x00\x01\x01", 6);
	fg_parse_prefix(ipv6 ? "2001:2::100/64" : "198.18.128.0/17", ipv6, c->src_ip, &hosts);
	c->flow.src_hosts = hosts;
	fg_parse_prefix(ipv6 ? "2001:2:0:1::100/64" : "198.19.128.0/17", ipv6, c->dst_ip, &hosts);
	c->flow.dst_hosts = hosts;
	c->flow.src_lo = fg_addr_lo32(ipv6, c->src_ip);
	c->flow.dst_lo = fg_addr_lo32(ipv6, c->dst_ip);
	c->flow.flows = 1;
	c->flow.src_port = 1024;
	c->flow.dst_port = 1024;
	c->frame_size = frame_size;
	c->ttl = 64;
	c->magic = FG_MAGIC_HI << 16 | 0x1234;
	c->stream = 3;
}

/* Verify IPv4 header and UDP checksums of a frame from scratch. */
static int frame_csums_ok(const uint8_t *f, uint32_t len, int ipv6)
{
	uint32_t s;
	const uint8_t *l3 = f + FG_ETH_LEN;

	if (!ipv6) {
		uint32_t ulen = len - FG_ETH_LEN - FG_IP4_LEN;

		if (fg_csum_fold(fg_csum_partial(l3, 20, 0)) != 0xffff)
			return 0;
		s = fg_csum_partial(l3 + 12, 8, 17 + ulen);
		return fg_csum_fold(fg_csum_partial(l3 + 20, ulen, s)) == 0xffff;
	}
	s = fg_csum_partial(l3 + 8, 32, 17 + (len - FG_ETH_LEN - FG_IP6_LEN));
	return fg_csum_fold(fg_csum_partial(l3 + 40, len - FG_ETH_LEN - FG_IP6_LEN, s)) == 0xffff;
}

static void test_csum(void)
{
	/* RFC 1071 example: 00 01 f2 03 f4 f5 f6 f7 -> sum ddf2, csum 220d */
	const uint8_t ex[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	const uint8_t odd[] = {0x01, 0x02, 0x03};

	CHECK(fg_csum_fold(fg_csum_partial(ex, sizeof(ex), 0)) == 0xddf2, "sum");
	CHECK(fg_csum_finish(fg_csum_partial(ex, sizeof(ex), 0)) == 0x220d, "csum");
	CHECK(fg_csum_fold(fg_csum_partial(odd, 3, 0)) == 0x0402, "odd length pads with zero");
	CHECK(fg_csum_fold(fg_csum_add32(0, 0xffffffffu)) == 0xffff, "add32");
}

static void test_frames(int ipv6)
{
	static const uint32_t sizes[] = {64, 65, 82, 128, 570, 1518, 9000, 0};
	uint8_t *buf = malloc(FG_MAX_FRAME);
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct fg_pktcfg c;
		struct fg_csum_consts k;
		struct fg_rxinfo ri;
		uint32_t seq, len;
		size_t tl;

		if (ipv6 && sizes[i] && sizes[i] < FG_MIN_FRAME_IP6)
			continue;
		cfg_init(&c, ipv6, sizes[i]);
		c.flow.flows = 1000;
		c.flow.vary = FG_VARY_SRC_IP | FG_VARY_DST_IP | FG_VARY_SRC_PORT | FG_VARY_DST_PORT;
		c.flow.port_pattern = i & 1 ? FG_PORTS_RFC4814 : FG_PORTS_SEQUENTIAL;
		tl = fg_pkt_template(&c, buf, FG_MAX_FRAME);
		CHECK(tl == fg_pkt_template_len(&c), "template len %zu", tl);
		CHECK(frame_csums_ok(buf, fg_pkt_frame_len(&c, 0), ipv6), "template checksums size %u", sizes[i]);
		fg_pkt_consts(&c, &k);
		/* frames are rewritten in place without reset, as live frames are */
		for (seq = 0; seq < 300; seq += 7) {
			len = fg_pkt_write(&c, &k, buf, FG_PHASE_MEASURE, seq, seq % 1000,
					   0xfffffff0u + seq);
			CHECK(len == fg_pkt_frame_len(&c, seq), "len");
			CHECK(frame_csums_ok(buf, len, ipv6), "checksums v6=%d size=%u seq=%u", ipv6,
			      sizes[i], seq);
			CHECK(fg_pkt_parse(buf, len, &ri) == 1, "parse");
			CHECK(ri.seq == seq && ri.stream == 3 && ri.phase == FG_PHASE_MEASURE &&
			      ri.magic == c.magic && ri.ts == 0xfffffff0u + seq, "signature");
		}
	}
	free(buf);
}

static void test_imix(void)
{
	uint32_t n64 = 0, n570 = 0, n1518 = 0, i;
	struct fg_pktcfg c;
	uint64_t b = 0;

	for (i = 0; i < 1200; i++) {
		uint32_t f = fg_imix_frame(i, 0);

		n64 += f == 64;
		n570 += f == 570;
		n1518 += f == 1518;
	}
	CHECK(n64 == 700 && n570 == 400 && n1518 == 100, "7:4:1 got %u:%u:%u", n64, n570, n1518);
	cfg_init(&c, 0, 0);
	for (i = 0; i < 1207; i++)
		b += fg_pkt_frame_len(&c, i);
	CHECK(fg_pkt_bytes(&c, 1207) == b, "imix bytes %llu vs %llu",
	      (unsigned long long)fg_pkt_bytes(&c, 1207), (unsigned long long)b);
	cfg_init(&c, 0, 128);
	CHECK(fg_pkt_bytes(&c, 10) == 1240, "fixed bytes exclude FCS");
	CHECK(fg_imix_frame(0, 1) == FG_MIN_FRAME_IP6 && fg_imix_frame(6, 1) == 1518, "v6 imix");
}

static void test_flows(void)
{
	struct fg_flowcfg c = {.flows = 256, .vary = FG_VARY_SRC_IP, .src_hosts = 32768,
			       .dst_hosts = 32768, .src_lo = 0xc6128000u, .dst_lo = 0xc6138000u,
			       .src_port = 1024, .dst_port = 1024, .seed = 7};
	static uint8_t seen[65536];
	struct fg_flow fl;
	uint32_t f, distinct = 0, buckets[16] = {0};

	for (f = 0; f < 256; f++) {
		fg_flow_fields(&c, f, &fl);
		CHECK(fl.src_lo == 0xc6128000u + f && fl.dst_lo == 0xc6138000u, "src split");
		CHECK(fl.src_port == 1024 && fl.dst_port == 1024, "ports fixed");
	}
	/* prefix wraps: 4 hosts */
	c.src_hosts = 4;
	fg_flow_fields(&c, 5, &fl);
	CHECK(fl.src_lo == 0xc6128001u, "wrap in prefix");
	/* RFC 4814 ports: in 1024..65535, spread, distinct for most flows */
	c.vary = FG_VARY_SRC_PORT | FG_VARY_DST_PORT;
	c.port_pattern = FG_PORTS_RFC4814;
	c.flows = 4096;
	for (f = 0; f < 4096; f++) {
		fg_flow_fields(&c, f, &fl);
		CHECK(fl.src_port >= 1024 && fl.dst_port >= 1024, "port range");
		if (!seen[fl.src_port]++)
			distinct++;
		buckets[fl.src_port >> 12]++;
	}
	CHECK(distinct > 3900, "rfc4814 distinct ports %u", distinct);
	for (f = 1; f < 16; f++)
		CHECK(buckets[f] > 150 && buckets[f] < 400, "spread bucket %u: %u", f, buckets[f]);
	/* sequential ports wrap at 65535 */
	c.port_pattern = FG_PORTS_SEQUENTIAL;
	c.src_port = 65534;
	fg_flow_fields(&c, 3, &fl);
	CHECK(fl.src_port == 65534 + 3 - 2, "sequential wrap: %u", fl.src_port);
}

static void test_prefix(void)
{
	uint8_t a[16];
	uint32_t h;

	CHECK(fg_parse_prefix("198.18.128.0/17", 0, a, &h) == 0 && h == 32768, "v4 /17");
	CHECK(fg_parse_prefix("198.18.128.10/24", 0, a, &h) == 0 && h == 246, "v4 offset");
	CHECK(fg_parse_prefix("198.18.0.1", 0, a, &h) == 0 && h == 1, "v4 host");
	CHECK(fg_parse_prefix("2001:2::/64", 1, a, &h) == 0 && h == 0xffffffffu, "v6 /64");
	CHECK(fg_parse_prefix("2001:2::1/120", 1, a, &h) == 0 && h == 255, "v6 /120");
	CHECK(fg_parse_prefix("2001:2::/64", 0, a, &h) == -1, "family");
	CHECK(fg_parse_prefix("198.18.0.0/33", 0, a, &h) == -1, "plen");
	CHECK(fg_parse_prefix("198.18.0/24", 0, a, &h) == -1, "malformed");
}

static void test_hdr_layout(void)
{
	static const uint32_t vals[] = {0, 1, 2047, 2048, 2049, 4095, 4096, 1000000, 123456789,
					0xffffffffu};
	size_t i;

	CHECK(FG_HDR_LEN == 23552, "counts len");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint32_t idx = fg_hdr_index(vals[i]);
		uint64_t lo = fg_hdr_value_from_index(idx), hi = fg_hdr_highest_equivalent(vals[i]);

		CHECK(idx < FG_HDR_LEN, "index range");
		CHECK(lo <= vals[i] && vals[i] <= hi, "value %u in [%llu, %llu]", vals[i],
		      (unsigned long long)lo, (unsigned long long)hi);
		CHECK(vals[i] < 2048 ? hi == vals[i] : (hi - lo + 1) * 1000 <= lo * 2 + 2048,
		      "3 significant digits at %u", vals[i]);
	}
	CHECK(fg_hdr_index(2048) == 2048 && fg_hdr_index(2050) == 2049, "second bucket halves");
}

static void test_hdr_stats(void)
{
	struct fg_hdr *h = calloc(1, sizeof(*h));
	uint32_t v;

	for (v = 1; v <= 10000; v++)
		fg_hdr_record(h, v, 1);
	CHECK(h->total == 10000 && h->min == 1 && h->max == 10000, "totals");
	CHECK(h->sum / (double)h->total == 5000.5, "mean");
	CHECK(fg_hdr_value_at_percentile(h, 50) >= 5000 &&
	      fg_hdr_value_at_percentile(h, 50) <= 5003, "p50 %llu",
	      (unsigned long long)fg_hdr_value_at_percentile(h, 50));
	CHECK(fg_hdr_value_at_percentile(h, 99) >= 9900 &&
	      fg_hdr_value_at_percentile(h, 99) <= 9907, "p99");
	CHECK(fg_hdr_value_at_percentile(h, 100) >= 10000, "p100");
	free(h);
}

static void test_zigzag(void)
{
	uint8_t b[10];

	CHECK(fg_zigzag_put(b, 0) == 1 && b[0] == 0, "0");
	CHECK(fg_zigzag_put(b, -1) == 1 && b[0] == 1, "-1");
	CHECK(fg_zigzag_put(b, 1) == 1 && b[0] == 2, "1");
	CHECK(fg_zigzag_put(b, 64) == 2 && b[0] == 0x80 && b[1] == 1, "64");
	CHECK(fg_zigzag_put(b, INT64_MAX) == 9, "9 bytes max");
}

/* Sequence patterns: loss, reorder, duplicates, as RFC 4737 counts them. */
static void test_seq(void)
{
	struct fg_seq s;
	uint32_t i;
	static const uint32_t pat[] = {0, 1, 2, 5, 3, 4, 6, 6, 9, 7, 8, 10, 2, 11};

	fg_seq_init(&s, 100, 1);
	for (i = 0; i < sizeof(pat) / sizeof(pat[0]); i++)
		fg_seq_rx(&s, pat[i], 60, 1000);
	/* unique 0..11 = 12; dups: 6, 2; reordered: 3, 4, 7, 8 (below highest) */
	CHECK(s.packets == 12, "unique %llu", (unsigned long long)s.packets);
	CHECK(s.duplicated == 2, "dups %llu", (unsigned long long)s.duplicated);
	CHECK(s.reordered == 4, "reordered %llu", (unsigned long long)s.reordered);
	CHECK(s.bytes == 720, "bytes");
	CHECK(s.jitter16 == 0, "constant transit: no jitter");
	fg_seq_rx(&s, 100, 60, 1000);
	CHECK(s.out_of_range == 1 && s.packets == 12, "beyond capacity");
	fg_seq_free(&s);

	/* loss: every 7th of 10000 missing, in order */
	fg_seq_init(&s, 10000, 0);
	for (i = 0; i < 10000; i++)
		if (i % 7 != 6)
			fg_seq_rx(&s, i, 60, 0);
	CHECK(10000 - s.packets == 10000 / 7, "loss %llu", (unsigned long long)(10000 - s.packets));
	CHECK(s.reordered == 0 && s.duplicated == 0, "clean");
	fg_seq_free(&s);

	/* RFC 3550 jitter converges to |D| for alternating transit times */
	fg_seq_init(&s, 10000, 0);
	for (i = 0; i < 10000; i++)
		fg_seq_rx(&s, i, 60, i & 1 ? 1100 : 1000);
	CHECK(s.jitter16 / 16 >= 99 && s.jitter16 / 16 <= 100, "jitter %llu",
	      (unsigned long long)(s.jitter16 / 16));
	CHECK(fg_jitter16_update(0, 1000, 900) == 100, "first update is |D|");
	fg_seq_free(&s);
}

static int dump_frames(void)
{
	/* one line per frame: name hex */
	static const struct { const char *name; int v6; uint32_t size; uint32_t vary; int rfc; } t[] = {
		{"v4_64", 0, 64, FG_VARY_SRC_IP, 0},
		{"v4_1518", 0, 1518, FG_VARY_SRC_IP | FG_VARY_DST_IP, 0},
		{"v4_imix", 0, 0, FG_VARY_SRC_PORT, 1},
		{"v6_82", 1, 82, FG_VARY_SRC_IP, 0},
		{"v6_1518", 1, 1518, FG_VARY_DST_IP | FG_VARY_DST_PORT, 1},
		{"v6_imix", 1, 0, FG_VARY_SRC_IP, 0},
	};
	uint8_t *buf = malloc(FG_MAX_FRAME);
	size_t i;
	uint32_t seq, j;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct fg_pktcfg c;
		struct fg_csum_consts k;

		cfg_init(&c, t[i].v6, t[i].size);
		c.flow.flows = 10;
		c.flow.vary = t[i].vary;
		c.flow.port_pattern = t[i].rfc ? FG_PORTS_RFC4814 : FG_PORTS_SEQUENTIAL;
		c.flow.seed = 42;
		fg_pkt_template(&c, buf, FG_MAX_FRAME);
		fg_pkt_consts(&c, &k);
		for (seq = 0; seq < 12; seq++) {
			uint32_t len = fg_pkt_write(&c, &k, buf, FG_PHASE_MEASURE, seq, seq % 10,
						    1000000 + seq);

			printf("%s %u ", t[i].name, seq);
			for (j = 0; j < len; j++)
				printf("%02x", buf[j]);
			printf("\n");
		}
	}
	free(buf);
	return 0;
}

static int dump_hdr(int argc, char **argv)
{
	struct fg_hdr *h = calloc(1, sizeof(*h));
	char *enc;
	int i;

	for (i = 0; i < argc; i++) {
		unsigned long v, n;

		if (sscanf(argv[i], "%lu:%lu", &v, &n) != 2)
			return 2;
		fg_hdr_record(h, (uint32_t)v, n);
	}
	enc = fg_hdr_encode(h);
	printf("%s\n", enc);
	printf("%llu %llu %llu %llu %llu\n",
	       (unsigned long long)fg_hdr_value_at_percentile(h, 50),
	       (unsigned long long)fg_hdr_value_at_percentile(h, 90),
	       (unsigned long long)fg_hdr_value_at_percentile(h, 99),
	       (unsigned long long)fg_hdr_value_at_percentile(h, 99.9),
	       (unsigned long long)fg_hdr_value_at_percentile(h, 100));
	free(enc);
	free(h);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "frames"))
		return dump_frames();
	if (argc > 1 && !strcmp(argv[1], "hdr"))
		return dump_hdr(argc - 2, argv + 2);
	test_csum();
	test_frames(0);
	test_frames(1);
	test_imix();
	test_flows();
	test_prefix();
	test_hdr_layout();
	test_hdr_stats();
	test_zigzag();
	test_seq();
	printf("test_common: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
