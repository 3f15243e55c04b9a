// SPDX-License-Identifier: GPL-2.0
/*
 * fwdgen TX: run by BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES on a
 * template frame; every run writes one frame of the stream and returns
 * XDP_TX, which the kernel turns into a redirect out of the port given as
 * ctx ingress_ifindex.
 *
 * Live-frame buffers are recycled without being reset (only the frame
 * length is), and a page can come back from a DUT that forwarded the frame
 * in place (measured through the Linux router: frames went out again with
 * the DUT's MACs and were dropped as PACKET_OTHERHOST). So every run copies
 * the whole Ethernet/IP/UDP header from the stream's template and writes
 * the fields that vary: flow fields, lengths (IMIX), signature, checksums.
 * The template's stream byte in the signature (never rewritten by anyone)
 * selects the stream's settings (fg_tx_cfg) and running state
 * (fg_tx_state).
 *
 * One program serves every stream of a run. User space keeps it attached
 * (generic mode, on the namespace's lo, where it passes everything) so it
 * stays in the kernel's XDP dispatcher: otherwise every BPF_PROG_RUN adds
 * and removes it there, and each change waits for an RCU grace period
 * (measured: 16-32 ms per call on kernel 6.18).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "fg_proto.h"

#define LOOPBACK_IFINDEX 1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FG_MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct fg_tx_streamcfg);
} fg_tx_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FG_MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct fg_tx_state);
} fg_tx_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FG_TX_PAIR_CPUS);
	__type(key, __u32);
	__type(value, struct fg_tx_pair);
} fg_tx_pair SEC(".maps");

#define L3_OFF FG_ETH_LEN
#define SIG4_OFF (FG_ETH_LEN + FG_IP4_LEN + FG_UDP_LEN)
#define SIG6_OFF (FG_ETH_LEN + FG_IP6_LEN + FG_UDP_LEN)

static __always_inline void put_sig(struct fg_sig *sg, __u32 magic, __u32 sid, __u32 phase,
				    __u32 s, __u32 ts)
{
	sg->magic = bpf_htonl(magic);
	sg->stream = (__u8)sid; /* a paired call's page serves both streams */
	sg->phase = (__u8)phase;
	sg->seq = bpf_htonl(s);
	sg->ts = bpf_htonl(ts);
}

/* Is a frame of this paced stream due at `now`, within its catch-up
 * token bucket? (fg_tx_state) */
static __always_inline int pace_due(struct fg_tx_state *st, __u64 now)
{
	__u64 rel, lo;

	if (!st->pace_gap_ps || st->seq >= st->pace_limit || now < st->pace_base_ns)
		return 0;
	rel = (now - st->pace_base_ns) * 1000;
	if (rel < st->pace_next_ps || rel > st->pace_stop_ps)
		return 0;
	lo = (__u64)st->pace_burst * (st->pace_gap_ps / 2);
	lo = rel > lo ? rel - lo : 0;
	if (st->pace_ok_ps < lo)
		st->pace_ok_ps = lo;
	return rel >= st->pace_ok_ps;
}

SEC("xdp")
int fwdgen_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct fg_tx_streamcfg *c;
	struct fg_tx_state *st;
	struct fg_flow fl;
	struct ethhdr *eth = data;
	struct fg_tx_pair *pair;
	__u32 sid, s, f, len, ts, phase, cpu;
	__u64 now = 0;

	if (ctx->ingress_ifindex == LOOPBACK_IFINDEX)
		return XDP_PASS; /* parked on lo: never touch real traffic */
	if (data + SIG4_OFF + FG_SIG_LEN > data_end)
		return XDP_ABORTED;
	cpu = bpf_get_smp_processor_id();
	pair = bpf_map_lookup_elem(&fg_tx_pair, &cpu);
	if (pair && pair->main < FG_MAX_STREAMS) {
		/* a load stream and its latency stream in one call */
		now = bpf_ktime_get_ns();
		sid = pair->comp;
		st = sid < FG_MAX_STREAMS ? bpf_map_lookup_elem(&fg_tx_state, &sid) : NULL;
		if (!st || !pace_due(st, now)) {
			sid = pair->main;
			st = bpf_map_lookup_elem(&fg_tx_state, &sid);
			if (!st)
				return XDP_ABORTED;
			if (st->pace_credit && st->seq < st->pace_limit) {
				st->pace_credit--; /* the rest of a group */
			} else {
				__u64 g = st->pace_group > 1 ? st->pace_group - 1 : 0;

				/* a group leaves when its last frame is due */
				if (!pace_due(st, now - g * st->pace_gap_ps / 1000))
					return XDP_DROP;
				st->pace_credit = (__u16)g;
			}
		}
		c = bpf_map_lookup_elem(&fg_tx_cfg, &sid);
		if (!c)
			return XDP_ABORTED;
		goto build;
	}
	/* the stream byte: the call's template (pages are not shared) */
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		if (data + SIG6_OFF + FG_SIG_LEN > data_end)
			return XDP_ABORTED;
		sid = ((struct fg_sig *)(data + SIG6_OFF))->stream;
	} else {
		sid = ((struct fg_sig *)(data + SIG4_OFF))->stream;
	}
	c = bpf_map_lookup_elem(&fg_tx_cfg, &sid);
	st = bpf_map_lookup_elem(&fg_tx_state, &sid);
	if (!c || !st)
		return XDP_ABORTED;
	if (st->pace_gap_ps) {
		/* paced here (see fg_tx_state): not due yet is a cheap drop */
		if (st->pace_credit) {
			if (st->seq >= st->pace_limit)
				return XDP_DROP;
			st->pace_credit--;
		} else {
			__u64 rel, due, tokens;

			now = bpf_ktime_get_ns();
			if (!pace_due(st, now))
				return XDP_DROP;
			/* frames due after this one, and catch-up tokens left */
			rel = (now - st->pace_base_ns) * 1000;
			due = (rel - st->pace_next_ps) / st->pace_gap_ps;
			tokens = (rel - st->pace_ok_ps) / (st->pace_gap_ps / 2);
			due = due < tokens ? due : tokens;
			st->pace_credit = due < FG_PACE_CREDIT_MAX ? due : FG_PACE_CREDIT_MAX;
		}
	}

build:
	if (st->pace_gap_ps) { /* a paced frame leaves: the schedule moves on */
		st->pace_next_ps += st->pace_gap_ps;
		st->pace_ok_ps += st->pace_gap_ps / 2;
	}
	s = st->seq;
	f = st->flow;
	phase = st->phase;
	st->seq = s + 1;
	st->flow = (f + 1 >= c->flow.flows) ? 0 : f + 1;

	len = c->frame_len;
	if (c->imix) {
		len = fg_imix_frame(s, c->ipv6) - FG_FCS_LEN;
		if (len != FG_IMIX_MAX_FRAME - FG_FCS_LEN &&
		    bpf_xdp_adjust_tail(ctx, (int)len - (FG_IMIX_MAX_FRAME - FG_FCS_LEN)))
			return XDP_ABORTED;
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
	}
	fg_flow_fields(&c->flow, f, &fl);
	/* The clock read is ~10% of the per-frame cost (perf, max rate); a
	 * stream sent as fast as possible reads it every ts_mask + 1 frames. */
	if (now)
		st->ts = (__u32)now;
	else if (!(s & c->ts_mask))
		st->ts = (__u32)bpf_ktime_get_ns();
	ts = st->ts;

	if (!c->ipv6) {
		struct iphdr *ip = data + L3_OFF;
		struct udphdr *udp = (void *)(ip + 1);
		struct fg_sig *sg = (void *)(udp + 1);
		__u32 ulen = len - FG_ETH_LEN - FG_IP4_LEN;

		if ((void *)(sg + 1) > data_end)
			return XDP_ABORTED;
		__builtin_memcpy(data, c->hdr, FG_HDR4_LEN);
		ip->tot_len = bpf_htons(len - FG_ETH_LEN);
		ip->saddr = bpf_htonl(fl.src_lo);
		ip->daddr = bpf_htonl(fl.dst_lo);
		ip->check = bpf_htons(fg_ip4_hdr_csum(&c->csum, len - FG_ETH_LEN, &fl));
		udp->source = bpf_htons(fl.src_port);
		udp->dest = bpf_htons(fl.dst_port);
		udp->len = bpf_htons(ulen);
		put_sig(sg, c->magic, sid, phase, s, ts);
		udp->check = bpf_htons(fg_udp_csum(&c->csum, ulen, &fl, (sid << 8) | phase, s, ts));
	} else {
		struct ipv6hdr *ip6 = data + L3_OFF;
		struct udphdr *udp = (void *)(ip6 + 1);
		struct fg_sig *sg = (void *)(udp + 1);
		__u32 ulen = len - FG_ETH_LEN - FG_IP6_LEN;

		if ((void *)(sg + 1) > data_end)
			return XDP_ABORTED;
		__builtin_memcpy(data, c->hdr, FG_HDR6_LEN);
		ip6->payload_len = bpf_htons(ulen);
		ip6->saddr.in6_u.u6_addr32[3] = bpf_htonl(fl.src_lo);
		ip6->daddr.in6_u.u6_addr32[3] = bpf_htonl(fl.dst_lo);
		udp->source = bpf_htons(fl.src_port);
		udp->dest = bpf_htons(fl.dst_port);
		udp->len = bpf_htons(ulen);
		put_sig(sg, c->magic, sid, phase, s, ts);
		udp->check = bpf_htons(fg_udp_csum(&c->csum, ulen, &fl, (sid << 8) | phase, s, ts));
	}
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
