/* SPDX-License-Identifier: MIT */
#include "fg_pkt.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

uint32_t fg_csum_partial(const void *buf, size_t len, uint32_t sum)
{
	const uint8_t *p = buf;
	uint64_t s = sum;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t fg_csum_finish(uint32_t sum)
{
	return (uint16_t)~fg_csum_fold(sum);
}

uint32_t fg_pkt_template_len(const struct fg_pktcfg *c)
{
	return (c->frame_size ? c->frame_size : FG_IMIX_MAX_FRAME) - FG_FCS_LEN;
}

uint32_t fg_pkt_frame_len(const struct fg_pktcfg *c, uint32_t seq)
{
	return (c->frame_size ? c->frame_size : fg_imix_frame(seq, (uint32_t)c->ipv6)) - FG_FCS_LEN;
}

uint64_t fg_pkt_bytes(const struct fg_pktcfg *c, uint64_t n)
{
	uint64_t b;
	uint32_t i;

	if (c->frame_size)
		return n * (c->frame_size - FG_FCS_LEN);
	b = 0;
	for (i = 0; i < FG_IMIX_CYCLE; i++)
		b += fg_pkt_frame_len(c, i);
	b *= n / FG_IMIX_CYCLE;
	for (i = 0; i < n % FG_IMIX_CYCLE; i++)
		b += fg_pkt_frame_len(c, i);
	return b;
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint32_t fg_addr_lo32(int ipv6, const uint8_t addr[16])
{
	return be32_at(ipv6 ? addr + 12 : addr);
}

void fg_pkt_consts(const struct fg_pktcfg *c, struct fg_csum_consts *k)
{
	/* IPv4: ver/ihl|tos, id, frag (DF), ttl|proto */
	k->ip4_hdr = 0x4500u + 0 + 0x4000u + ((uint32_t)c->ttl << 8 | 17u);
	k->udp = 17u + (c->magic >> 16) + (c->magic & 0xffff);
	if (c->ipv6) {
		k->udp = fg_csum_partial(c->src_ip, 12, k->udp);
		k->udp = fg_csum_partial(c->dst_ip, 12, k->udp);
	}
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

size_t fg_pkt_template(const struct fg_pktcfg *c, uint8_t *buf, size_t cap)
{
	uint32_t len = fg_pkt_template_len(c);
	struct fg_csum_consts k;
	uint8_t *l3 = buf + FG_ETH_LEN;

	if (cap < len)
		return 0;
	memset(buf, 0, len);
	memcpy(buf, c->dst_mac, 6);
	memcpy(buf + 6, c->src_mac, 6);
	if (!c->ipv6) {
		put16(buf + 12, 0x0800);
		l3[0] = 0x45;
		put16(l3 + 6, 0x4000); /* DF */
		l3[8] = c->ttl;
		l3[9] = 17;
	} else {
		put16(buf + 12, 0x86dd);
		put32(l3, 0x60000000u);
		l3[6] = 17;
		l3[7] = c->ttl;
		memcpy(l3 + 8, c->src_ip, 16);
		memcpy(l3 + 24, c->dst_ip, 16);
	}
	fg_pkt_consts(c, &k);
	fg_pkt_write(c, &k, buf, 0, 0, 0, 0);
	return len;
}

uint32_t fg_pkt_write(const struct fg_pktcfg *c, const struct fg_csum_consts *k,
		      uint8_t *frame, uint32_t phase, uint32_t seq, uint32_t flow,
		      uint32_t ts)
{
	uint32_t len = fg_pkt_frame_len(c, seq);
	uint32_t l3len = c->ipv6 ? FG_IP6_LEN : FG_IP4_LEN;
	uint32_t ulen = len - FG_ETH_LEN - l3len;
	uint8_t *l3 = frame + FG_ETH_LEN, *udp = l3 + l3len, *sig = udp + FG_UDP_LEN;
	struct fg_flow fl;

	fg_flow_fields(&c->flow, flow, &fl);
	if (!c->ipv6) {
		put16(l3 + 2, (uint16_t)(len - FG_ETH_LEN));
		put32(l3 + 12, fl.src_lo);
		put32(l3 + 16, fl.dst_lo);
		put16(l3 + 10, fg_ip4_hdr_csum(k, len - FG_ETH_LEN, &fl));
	} else {
		put16(l3 + 4, (uint16_t)ulen);
		put32(l3 + 8 + 12, fl.src_lo);
		put32(l3 + 24 + 12, fl.dst_lo);
	}
	put16(udp, fl.src_port);
	put16(udp + 2, fl.dst_port);
	put16(udp + 4, (uint16_t)ulen);
	put32(sig, c->magic);
	sig[4] = (uint8_t)c->stream;
	sig[5] = (uint8_t)phase;
	put16(sig + 6, 0);
	put32(sig + 8, seq);
	put32(sig + 12, ts);
	put16(udp + 6, fg_udp_csum(k, ulen, &fl, c->stream << 8 | phase, seq, ts));
	return len;
}

int fg_parse_prefix(const char *s, int ipv6, uint8_t addr[16], uint32_t *hosts)
{
	char buf[64], *slash, *end;
	long plen;
	int bits = ipv6 ? 128 : 32;
	uint32_t lo, span;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	plen = bits;
	if (slash) {
		*slash = 0;
		plen = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end || plen < 0 || plen > bits)
			return -1;
	}
	memset(addr, 0, 16);
	if (inet_pton(ipv6 ? AF_INET6 : AF_INET, buf, addr) != 1)
		return -1;
	lo = fg_addr_lo32(ipv6, addr);
	if (bits - plen >= 32) {
		*hosts = lo ? (uint32_t)(0x100000000ULL - lo) : 0xffffffffu;
	} else {
		span = 1u << (bits - plen);
		*hosts = span - (lo & (span - 1));
	}
	return 0;
}

int fg_pkt_parse(const uint8_t *p, size_t len, struct fg_rxinfo *o)
{
	size_t off;

	if (len < FG_ETH_LEN)
		return 0;
	if (p[12] == 0x08 && p[13] == 0x00) {
		if (len < FG_ETH_LEN + FG_IP4_LEN || p[14] != 0x45 || p[14 + 9] != 17)
			return 0;
		off = FG_ETH_LEN + FG_IP4_LEN + FG_UDP_LEN;
	} else if (p[12] == 0x86 && p[13] == 0xdd) {
		if (len < FG_ETH_LEN + FG_IP6_LEN || p[14 + 6] != 17)
			return 0;
		off = FG_ETH_LEN + FG_IP6_LEN + FG_UDP_LEN;
	} else {
		return 0;
	}
	if (len < off + FG_SIG_LEN)
		return 0;
	o->magic = be32_at(p + off);
	if (o->magic >> 16 != FG_MAGIC_HI)
		return 0;
	o->stream = p[off + 4];
	o->phase = p[off + 5];
	o->seq = be32_at(p + off + 8);
	o->ts = be32_at(p + off + 12);
	return 1;
}
