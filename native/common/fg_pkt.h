/* SPDX-License-Identifier: MIT */
/*
 * Packet construction in user space: the template frame every backend
 * starts from, and fg_pkt_write(), the user-space twin of the per-frame
 * work of native/bpf/fwdgen_tx.bpf.c (used by the afpacket backend and the
 * unit tests). Reusable by any native component (e.g. the vector
 * forwarder) that needs Ethernet/IP/UDP headers and checksums.
 */
#ifndef FWDBENCH_FG_PKT_H
#define FWDBENCH_FG_PKT_H

#include <stddef.h>
#include <stdint.h>
#include "fg_proto.h"

/* RFC 1071 Internet checksum over bytes, folded and not complemented,
 * starting from a 32-bit partial sum. */
uint32_t fg_csum_partial(const void *buf, size_t len, uint32_t sum);
uint16_t fg_csum_finish(uint32_t sum); /* fold + complement, network order value */

struct fg_pktcfg {
	int ipv6;
	uint8_t src_mac[6], dst_mac[6];
	uint8_t src_ip[16], dst_ip[16]; /* first addresses; IPv4 in bytes 0..3 */
	uint32_t frame_size;            /* with FCS, or 0 for IMIX */
	uint8_t ttl;                    /* IPv4 TTL / IPv6 hop limit */
	struct fg_flowcfg flow;         /* src_lo/dst_lo are set from src_ip/dst_ip */
	uint32_t magic;                 /* FG_MAGIC_HI << 16 | nonce */
	uint32_t stream;                /* internal stream index */
};

/* L2 length without FCS of the template (IMIX: the largest frame). */
uint32_t fg_pkt_template_len(const struct fg_pktcfg *c);
/* L2 length without FCS of frame number seq of the stream. */
uint32_t fg_pkt_frame_len(const struct fg_pktcfg *c, uint32_t seq);
/* Sum of L2 bytes without FCS of frames [0, n). */
uint64_t fg_pkt_bytes(const struct fg_pktcfg *c, uint64_t n);

/* Checksum constants of the stream (see fg_proto.h). */
void fg_pkt_consts(const struct fg_pktcfg *c, struct fg_csum_consts *k);

/* Build the template frame (flow 0, seq 0, phase 0, ts 0, valid
 * checksums) into buf; returns its length or 0 if cap is too small. */
size_t fg_pkt_template(const struct fg_pktcfg *c, uint8_t *buf, size_t cap);

/* Rewrite the varying fields of a frame built from the template: returns
 * the frame's L2 length without FCS (IMIX: fg_pkt_frame_len(seq)). The
 * buffer must hold fg_pkt_template_len() bytes. */
uint32_t fg_pkt_write(const struct fg_pktcfg *c, const struct fg_csum_consts *k,
		      uint8_t *frame, uint32_t phase, uint32_t seq, uint32_t flow,
		      uint32_t ts);

/* Parse "a.b.c.d[/len]" or an IPv6 address[/len] into the first address
 * (16 bytes, IPv4 in 0..3) and the number of addresses from it to the end
 * of the prefix (capped at 2^32-1). Returns 0, or -1 if malformed or of
 * the other family. */
int fg_parse_prefix(const char *s, int ipv6, uint8_t addr[16], uint32_t *hosts);

/* Low 32 bits of an address as a host-order number (IPv4: all of it). */
uint32_t fg_addr_lo32(int ipv6, const uint8_t addr[16]);

/* Decoded view of a received frame, for user-space receivers. */
struct fg_rxinfo {
	uint32_t magic, stream, phase, seq, ts;
};
/* Returns 1 and fills *o if the frame carries a signature, else 0. */
int fg_pkt_parse(const uint8_t *p, size_t len, struct fg_rxinfo *o);

#endif
