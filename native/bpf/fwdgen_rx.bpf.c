// SPDX-License-Identifier: GPL-2.0
/*
 * fwdgen RX: attached to every receiving port. Counts only frames that
 * carry this run's signature and the measured phase; signed frames are
 * dropped after counting, everything else (ARP, ND, strays) goes on to the
 * stack with XDP_PASS.
 *
 * Per frame: exact duplicate/loss accounting with a per-stream sequence
 * bitmap (atomic fetch-or, so it is exact even across CPUs), RFC 4737
 * reorder count, RFC 3550 jitter, one-way latency into an HdrHistogram
 * layout. Counters and histograms are per CPU slots of mmapable arrays, so
 * user space reads them without syscalls.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "fg_proto.h"

const volatile __u32 cfg_magic;    /* host order */
const volatile __u32 cfg_nstreams;

__u32 rx_phase;    /* phase counted (enum fg_phase); set by user space */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FG_MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct fg_rx_streamcfg);
} fg_rx_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FG_MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct fg_rx_order);
} fg_rx_order SEC(".maps");

/* index cpu * FG_MAX_STREAMS + stream; max_entries set at load time */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_rx_pcpu);
} fg_rx_stats SEC(".maps");

/* index (cpu * nstreams + stream) * FG_HDR_LEN + bucket; sized at load */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fg_rx_hist SEC(".maps");

/* sequence bitmaps of all streams; sized at load */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fg_rx_bitmap SEC(".maps");

SEC("xdp")
int fwdgen_rx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct fg_rx_streamcfg *sc;
	struct fg_rx_order *ord;
	struct fg_rx_pcpu *st;
	struct udphdr *udp;
	struct fg_sig *sg;
	__u32 sid, s, key, now, transit, cpu, bit;
	__u64 *word, *h, old, len;
	int act = XDP_PASS;

	if ((void *)(eth + 1) > data_end)
		goto out;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->ihl != 5 ||
		    ip->protocol != IPPROTO_UDP)
			goto out;
		udp = (void *)(ip + 1);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			goto out;
		udp = (void *)(ip6 + 1);
	} else {
		goto out;
	}
	sg = (void *)(udp + 1);
	if ((void *)(sg + 1) > data_end || sg->magic != bpf_htonl(cfg_magic))
		goto out;
	sid = sg->stream;
	if (sid >= cfg_nstreams || sid >= FG_MAX_STREAMS)
		goto out;
	key = sid;
	sc = bpf_map_lookup_elem(&fg_rx_cfg, &key);
	if (!sc || sc->ifindex != ctx->ingress_ifindex)
		goto out; /* ours, but on the wrong port: let the stack see it */

	act = XDP_DROP;
	if (sg->phase != rx_phase)
		goto out;
	now = (__u32)bpf_ktime_get_ns();
	cpu = bpf_get_smp_processor_id();
	key = cpu * FG_MAX_STREAMS + sid;
	st = bpf_map_lookup_elem(&fg_rx_stats, &key);
	if (!st)
		goto out;
	s = bpf_ntohl(sg->seq);
	if (s >= sc->capacity) {
		st->out_of_range++;
		goto out;
	}
	key = sc->bm_base + s / 64;
	word = bpf_map_lookup_elem(&fg_rx_bitmap, &key);
	if (!word)
		goto out;
	bit = s % 64;
	old = __sync_fetch_and_or(word, 1ULL << bit);
	if (old & (1ULL << bit)) {
		st->duplicated++;
		goto out;
	}
	len = bpf_xdp_get_buff_len(ctx);
	st->packets++;
	st->bytes += len;

	key = sid;
	ord = bpf_map_lookup_elem(&fg_rx_order, &key);
	if (!ord)
		goto out;
	if (s < ord->next_seq)
		st->reordered++;
	else
		ord->next_seq = (__u64)s + 1;

	transit = now - bpf_ntohl(sg->ts);
	if (ord->have_prev) {
		__s32 d = (__s32)(transit - ord->prev_transit);
		__u64 ad = d < 0 ? (__u64)(-(__s64)d) : (__u64)d;

		__u64 j = ord->jitter16;

		ord->jitter16 = j + ad - ((j + 8) >> 4); /* RFC 3550 A.8 */
	}
	ord->prev_transit = transit;
	ord->have_prev = 1;

	st->lat_sum += transit;
	if (!st->lat_min || transit < st->lat_min)
		st->lat_min = transit ? transit : 1;
	if (transit > st->lat_max)
		st->lat_max = transit;
	key = (cpu * cfg_nstreams + sid) * FG_HDR_LEN + fg_hdr_index(transit);
	h = bpf_map_lookup_elem(&fg_rx_hist, &key);
	if (h)
		(*h)++;
out:
	return act;
}

char LICENSE[] SEC("license") = "GPL";
