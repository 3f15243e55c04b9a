/* SPDX-License-Identifier: MIT */
/*
 * fwdgen wire format and the per-packet arithmetic shared by the BPF
 * programs (native/bpf/fwdgen_*.bpf.c) and user space (fwdgen, unit tests).
 *
 * Everything here is header-only, freestanding C (no libc), so the BPF side
 * and the C side compute flows, lengths, checksums and histogram buckets
 * with the very same code.
 *
 * Frame layout: Ethernet | IPv4 (20 B) or IPv6 (40 B) | UDP | fg_sig | zeros
 */
#ifndef FWDBENCH_FG_PROTO_H
#define FWDBENCH_FG_PROTO_H

#include <linux/types.h>

#ifndef FG_INLINE
#define FG_INLINE static inline __attribute__((always_inline))
#endif

/* ---- signature -------------------------------------------------------- */

/* High 16 bits of the magic; the low 16 bits are a per-run nonce, so frames
 * of an earlier run still in flight are never counted. */
#define FG_MAGIC_HI 0x6667u /* "fg" */

enum fg_phase {
	FG_PHASE_NONE = 0,    /* receiver: count nothing */
	FG_PHASE_WARMUP = 1,  /* sent, never counted */
	FG_PHASE_MEASURE = 2, /* counted */
};

/* 16 bytes right after the UDP header; multi-byte fields big endian. */
struct fg_sig {
	__be32 magic;  /* FG_MAGIC_HI << 16 | nonce */
	__u8 stream;   /* internal stream index, < FG_MAX_STREAMS */
	__u8 phase;    /* enum fg_phase */
	__be16 rsvd;   /* 0 */
	__be32 seq;    /* per stream and phase, from 0 */
	__be32 ts;     /* low 32 bits of CLOCK_MONOTONIC [ns] at TX */
} __attribute__((packed));

#define FG_MAX_STREAMS 32 /* load streams + latency streams */

#define FG_ETH_LEN 14
#define FG_IP4_LEN 20
#define FG_IP6_LEN 40
#define FG_UDP_LEN 8
#define FG_SIG_LEN 16
#define FG_FCS_LEN 4

/* Smallest frame (with FCS) that holds headers and signature. */
#define FG_MIN_FRAME_IP4 64 /* 14 + 20 + 8 + 16 = 58 + 4 <= 64 */
#define FG_MIN_FRAME_IP6 82 /* 14 + 40 + 8 + 16 + 4 */
#define FG_MAX_FRAME 9000

/* IMIX 7:4:1 of 64/570/1518 B (with FCS): 12 frames per cycle, the
 * large ones spread out so bursts stay mixed. IPv6 cannot fit in 64 B, so
 * its small frame is FG_MIN_FRAME_IP6 (82 B). */
#define FG_IMIX_CYCLE 12
FG_INLINE __u32 fg_imix_frame(__u32 seq, __u32 ipv6)
{
	/* 0..11 -> size; positions of 570: 2,5,8,11; of 1518: 6 */
	__u32 i = seq % FG_IMIX_CYCLE;
	if (i == 6)
		return 1518;
	if (i == 2 || i == 5 || i == 8 || i == 11)
		return 570;
	return ipv6 ? FG_MIN_FRAME_IP6 : 64;
}
#define FG_IMIX_MAX_FRAME 1518

/* ---- flows ------------------------------------------------------------ */

enum fg_vary {
	FG_VARY_SRC_IP = 1u << 0,
	FG_VARY_DST_IP = 1u << 1,
	FG_VARY_SRC_PORT = 1u << 2,
	FG_VARY_DST_PORT = 1u << 3,
};

enum fg_port_pattern {
	FG_PORTS_SEQUENTIAL = 0,
	FG_PORTS_RFC4814 = 1,
};

/* Flow f (0 <= f < flows) uses offset f in every varied field: the k-th
 * address of a prefix, the k-th port after the base port (sequential), or a
 * pseudorandom port in 1024..65535 (RFC 4814 section 12). Only the low 32
 * bits of an address vary (IPv4: all of it). */
struct fg_flowcfg {
	__u32 flows;       /* >= 1 */
	__u32 vary;        /* enum fg_vary bits */
	__u32 port_pattern;
	__u32 src_hosts;   /* addresses available from src_lo on, >= 1 */
	__u32 dst_hosts;
	__u32 src_lo;      /* low 32 bits of the first source address (host order) */
	__u32 dst_lo;
	__u32 src_port;    /* base ports */
	__u32 dst_port;
	__u32 seed;        /* RFC 4814 generator seed */
};

struct fg_flow {
	__u32 src_lo, dst_lo; /* host order */
	__u16 src_port, dst_port;
};

/* 32-bit integer mixer (a xorshift-multiply finalizer): decorrelated
 * pseudorandom values for consecutive flow indexes. */
FG_INLINE __u32 fg_mix32(__u32 x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

FG_INLINE __u16 fg_port_for(const struct fg_flowcfg *c, __u32 base, __u32 f, __u32 salt)
{
	if (c->port_pattern == FG_PORTS_RFC4814)
		return (__u16)(1024u + fg_mix32(f ^ c->seed ^ salt) % 64512u);
	/* sequential: wraps inside base..65535 */
	return (__u16)(base + f % (65536u - base));
}

FG_INLINE void fg_flow_fields(const struct fg_flowcfg *c, __u32 f, struct fg_flow *o)
{
	o->src_lo = c->src_lo;
	o->dst_lo = c->dst_lo;
	o->src_port = (__u16)c->src_port;
	o->dst_port = (__u16)c->dst_port;
	/* f < flows; the division only runs when flows exceed the prefix */
	if (c->vary & FG_VARY_SRC_IP)
		o->src_lo = c->src_lo + (f < c->src_hosts ? f : f % c->src_hosts);
	if (c->vary & FG_VARY_DST_IP)
		o->dst_lo = c->dst_lo + (f < c->dst_hosts ? f : f % c->dst_hosts);
	if (c->vary & FG_VARY_SRC_PORT)
		o->src_port = fg_port_for(c, c->src_port, f, 0x5eed0001u);
	if (c->vary & FG_VARY_DST_PORT)
		o->dst_port = fg_port_for(c, c->dst_port, f, 0x5eed0002u);
}

/* ---- checksums -------------------------------------------------------- */
/* One's complement sums over big-endian 16-bit words, fed with host-order
 * numbers (RFC 1071 arithmetic). Sums are kept in 32 bits and folded. */

FG_INLINE __u32 fg_csum_add32(__u32 sum, __u32 v)
{
	return sum + (v >> 16) + (v & 0xffff);
}

FG_INLINE __u16 fg_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* Constant part of the checksums, computed once in user space from the
 * template (see fg_pkt_consts()); the per-frame fields are added by
 * fg_csum_frame(). */
struct fg_csum_consts {
	__u32 ip4_hdr;  /* IPv4 header words except tot_len, addresses, csum */
	__u32 udp;      /* pseudo-header proto + constant address words +
			   magic + rsvd */
};

/* Per-frame fields that vary: flow, lengths, signature. */
FG_INLINE __u16 fg_ip4_hdr_csum(const struct fg_csum_consts *k, __u32 tot_len,
				const struct fg_flow *fl)
{
	__u32 s = k->ip4_hdr + tot_len;
	s = fg_csum_add32(s, fl->src_lo);
	s = fg_csum_add32(s, fl->dst_lo);
	return (__u16)~fg_csum_fold(s); /* host order */
}

FG_INLINE __u16 fg_udp_csum(const struct fg_csum_consts *k, __u32 udp_len,
			    const struct fg_flow *fl, __u32 stream_phase_word,
			    __u32 seq, __u32 ts)
{
	__u32 s = k->udp + 2 * udp_len + fl->src_port + fl->dst_port + stream_phase_word;
	__u16 r;
	s = fg_csum_add32(s, fl->src_lo);
	s = fg_csum_add32(s, fl->dst_lo);
	s = fg_csum_add32(s, seq);
	s = fg_csum_add32(s, ts);
	r = (__u16)~fg_csum_fold(s);
	return r ? r : 0xffff; /* host order; 0 means "no checksum" in UDP */
}

/* ---- latency histogram layout (HdrHistogram) -------------------------- */
/* lowest 1 ns, highest 2^32-1 ns, 3 significant figures: unit magnitude 0,
 * sub-bucket count 2048 (half 1024, magnitude 10), 22 buckets,
 * counts length (22 + 1) * 1024. Same indexing as HdrHistogram. */
#define FG_HDR_LOWEST 1ULL
#define FG_HDR_HIGHEST 4294967295ULL
#define FG_HDR_SIGFIGS 3
#define FG_HDR_SUB_HALF_MAG 10
#define FG_HDR_SUB_HALF 1024
#define FG_HDR_SUB_COUNT 2048
#define FG_HDR_BUCKETS 22
#define FG_HDR_LEN ((FG_HDR_BUCKETS + 1) * FG_HDR_SUB_HALF)

FG_INLINE __u32 fg_msb32(__u32 v)
{
	__u32 r = 0;
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Counts index of a value [ns]; always < FG_HDR_LEN for a __u32. */
FG_INLINE __u32 fg_hdr_index(__u32 v)
{
	__u32 bucket = fg_msb32(v | (FG_HDR_SUB_COUNT - 1)) - FG_HDR_SUB_HALF_MAG;
	__u32 sub = v >> bucket;
	return ((bucket + 1) << FG_HDR_SUB_HALF_MAG) + (sub - FG_HDR_SUB_HALF);
}

/* ---- receiver state (BPF maps, read by user space through mmap) ------- */

/* Per CPU and stream (array "fg_rx_stats", index cpu * FG_MAX_STREAMS + s). */
struct fg_rx_pcpu {
	__u64 packets;     /* unique signed frames of the measured phase */
	__u64 bytes;       /* their L2 bytes without FCS */
	__u64 duplicated;
	__u64 reordered;   /* RFC 4737: seq below the highest seen */
	__u64 out_of_range;/* seq beyond the bitmap (never sent) */
	__u64 lat_sum;     /* [ns] */
	__u64 lat_min;     /* [ns], 0 = none yet */
	__u64 lat_max;
	__u64 pad[8];      /* one 128 B slot per CPU and stream */
};

/* Shared per stream (array "fg_rx_order"): arrival order and jitter. A
 * veth queue is served by one NAPI instance at a time, so these plain
 * updates are exact for one RX queue per stream. */
struct fg_rx_order {
	__u64 next_seq;    /* highest seq seen + 1 */
	__u64 jitter16;    /* RFC 3550 jitter [ns] scaled by 16 */
	__u32 prev_transit;
	__u32 have_prev;
	__u64 pad[5];
};

/* Per stream receiver configuration (array "fg_rx_cfg"). */
struct fg_rx_streamcfg {
	__u32 ifindex;     /* port the stream must arrive on */
	__u32 bm_base;     /* first bitmap word of the stream */
	__u32 capacity;    /* sequence numbers tracked (bitmap bits) */
	__u32 pad;
};

/* ---- sender state (fwdgen_tx.bpf.c) ------------------------------------ */

#define FG_HDR4_LEN (FG_ETH_LEN + FG_IP4_LEN + FG_UDP_LEN) /* 42 */
#define FG_HDR6_LEN (FG_ETH_LEN + FG_IP6_LEN + FG_UDP_LEN) /* 62 */

/* Per stream (array "fg_tx_cfg"), written before the first run. */
struct fg_tx_streamcfg {
	__u32 ipv6;
	__u32 imix;
	__u32 frame_len;   /* fixed L2 length without FCS */
	__u32 magic;       /* host order */
	__u32 ts_mask;     /* read the clock when (seq & ts_mask) == 0 (0: always) */
	struct fg_flowcfg flow;
	struct fg_csum_consts csum;
	/* Ethernet + IP + UDP header of the template, copied into every frame:
	 * a live frame's page may come back from a DUT that forwarded it in
	 * place (new MACs, TTL - 1) and be sent again. */
	__u8 hdr[64];
};

/* Per stream (mmapable array "fg_tx_state"); the one thread driving the
 * stream writes it between runs and reads seq after each run.
 *
 * Pacing in the program (pace_gap_ps > 0): every run of the program reads
 * the clock and sends a frame only when one is due, else returns XDP_DROP
 * (the live frame goes straight back to its page pool). A call then paces
 * to the nanosecond for as long as user space lets it run, and a stream
 * that fell behind catches up at twice its rate in bursts of at most
 * pace_burst frames (a veth ring holds 256). Times
 * are in picoseconds after pace_base_ns so that 1e12 / rate keeps its
 * fraction (250 ns per frame at 4 Mpps). */
#define FG_PACE_CREDIT_MAX 7

/* Two streams paced in one BPF_PROG_RUN call (a load stream and its
 * latency stream, on one pinned TX thread): array "fg_tx_pair", indexed by
 * CPU, set by the thread around its calls. comp is served first when due.
 * main >= FG_MAX_STREAMS: no pair; the frame's stream byte says whose call
 * it is. */
#define FG_TX_PAIR_CPUS 4096
#define FG_NO_STREAM 0xffffffffu
struct fg_tx_pair {
	__u32 main, comp;
};

struct fg_tx_state {
	__u16 phase;       /* enum fg_phase written into frames */
	__u16 pace_group;  /* paired calls: frames leave in groups of this many */
	__u32 seq;         /* next sequence number of the phase */
	__u32 flow;        /* next flow index */
	__u32 ts;          /* last TX timestamp read */
	__u32 pace_limit;  /* no frame with seq >= pace_limit */
	__u16 pace_burst;  /* catching up: at most this many back to back */
	__u16 pace_credit; /* behind: frames sure to be due and allowed, sent
			    * without the pacing checks (at most
			    * FG_PACE_CREDIT_MAX in a row) */
	__u64 pace_base_ns;  /* phase start [ns, CLOCK_MONOTONIC] */
	__u64 pace_gap_ps;   /* 1e12 / rate; 0: the program does not pace */
	__u64 pace_next_ps;  /* the next frame is due then */
	__u64 pace_ok_ps;    /* catching up: and not before then (a token
			      * bucket of pace_burst frames at twice the rate) */
	__u64 pace_stop_ps;  /* no frame after this */
};

#endif
