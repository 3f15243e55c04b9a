// SPDX-License-Identifier: GPL-2.0
/*
 * fwdgen test path: a tiny XDP forwarder for `fwdgen xdp-path`. Every
 * frame arriving on the port is redirected to cfg_out_ifindex, except that
 * every k-th fwdgen-signed frame of the measured phase is dropped
 * (cfg_drop_every = k; 0 never drops). Counts what it forwarded and
 * dropped, so a test can compare fwdgen's reported loss with the truth.
 * With cfg_drop_all it is an XDP-drop sink that counts every frame (the
 * peer benchmark's sink).
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

const volatile __u32 cfg_out_ifindex; /* 0: drop signed frames (a sink) */
const volatile __u32 cfg_drop_every;
const volatile __u32 cfg_drop_all;

/* single writer: the port's one NAPI instance */
__u64 received;
__u64 signed_seen;
__u64 dropped;
__u64 forwarded;

static __always_inline struct fg_sig *find_sig(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	struct udphdr *udp;

	if ((void *)(eth + 1) > data_end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->ihl != 5 ||
		    ip->protocol != IPPROTO_UDP)
			return 0;
		udp = (void *)(ip + 1);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			return 0;
		udp = (void *)(ip6 + 1);
	} else {
		return 0;
	}
	if ((void *)(udp + 1) + sizeof(struct fg_sig) > data_end)
		return 0;
	return (void *)(udp + 1);
}

SEC("xdp")
int fwdgen_path(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct fg_sig *sg;

	received++;
	if (cfg_drop_all) {
		dropped++;
		return XDP_DROP;
	}
	sg = find_sig(data, data_end);
	if (sg && (bpf_ntohl(sg->magic) >> 16) == FG_MAGIC_HI &&
	    sg->phase == FG_PHASE_MEASURE) {
		signed_seen++;
		if (!cfg_out_ifindex ||
		    (cfg_drop_every && signed_seen % cfg_drop_every == 0)) {
			dropped++;
			return XDP_DROP;
		}
	}
	if (!cfg_out_ifindex)
		return XDP_PASS;
	forwarded++;
	return bpf_redirect(cfg_out_ifindex, 0);
}

char LICENSE[] SEC("license") = "GPL";
