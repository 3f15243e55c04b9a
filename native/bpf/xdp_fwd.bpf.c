// SPDX-License-Identifier: GPL-2.0
/*
 * fwdbench XDP DUT: two programs sharing one port map and one counter map.
 *
 *   fb_xconnect  every frame received on a port leaves through its peer
 *                port (fb_ports: ingress ifindex -> egress ifindex).
 *   fb_router    IPv4/IPv6 forwarding with bpf_fib_lookup() against the
 *                namespace's kernel FIB: TTL / hop limit decrement,
 *                incremental IPv4 checksum update, MAC rewrite from the
 *                lookup, redirect through fb_ports (key = value = egress
 *                ifindex, so only ports the loader enrolled are used;
 *                one devmap lookup per frame, inside bpf_redirect_map).
 *                Whatever the fast path cannot handle goes to the kernel
 *                stack (XDP_PASS), which answers with ICMP errors, ARP/ND.
 *
 * Every frame is counted exactly once in fb_stats, per CPU, by reason
 * (see FB_XDP_REASONS in xdp_fwd_shared.h).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_fwd_shared.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

#define IPV6_FLOWINFO_MASK bpf_htonl(0x0FFFFFFF)

/* Load-time settings (set by fb-xdp before load). */
const volatile __u32 fib_flags = 0; /* 0 or BPF_FIB_LOOKUP_DIRECT */

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, FB_XDP_MAX_PORTS);
	__type(key, __u32);   /* ifindex */
	__type(value, __u32); /* egress ifindex */
} fb_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FB_XDP_N_REASONS);
	__type(key, __u32);
	__type(value, struct fb_xdp_count);
} fb_stats SEC(".maps");

static __always_inline int count(struct xdp_md *ctx, __u32 reason, int action)
{
	struct fb_xdp_count *c = bpf_map_lookup_elem(&fb_stats, &reason);

	if (c) {
		c->packets++;
		c->bytes += (__u64)(ctx->data_end - ctx->data);
	}
	return action;
}

SEC("xdp")
int fb_xconnect(struct xdp_md *ctx)
{
	__u32 reason = FB_XDP_FORWARDED;
	int action;

	/* On a missing map entry the low bits of flags are the verdict. */
	action = bpf_redirect_map(&fb_ports, ctx->ingress_ifindex, XDP_DROP);
	if (action != XDP_REDIRECT)
		reason = FB_XDP_DROP_NO_PORT;
	return count(ctx, reason, action);
}

/* Map a bpf_fib_lookup() failure to a counter reason and a verdict. */
static __always_inline __u32 fib_failure(long rc, int *action)
{
	*action = XDP_PASS;
	switch (rc) {
	case BPF_FIB_LKUP_RET_BLACKHOLE:
	case BPF_FIB_LKUP_RET_UNREACHABLE:
	case BPF_FIB_LKUP_RET_PROHIBIT:
		*action = XDP_DROP;
		return FB_XDP_DROP_FIB;
	case BPF_FIB_LKUP_RET_NOT_FWDED:
		return FB_XDP_PASS_NOT_FWDED;
	case BPF_FIB_LKUP_RET_FWD_DISABLED:
		return FB_XDP_PASS_FWD_DISABLED;
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		return FB_XDP_PASS_NO_NEIGH;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		return FB_XDP_PASS_FRAG_NEEDED;
	default: /* UNSUPP_LWT, NO_SRC_ADDR, negative errno */
		return FB_XDP_PASS_OTHER;
	}
}

/* Same arithmetic as the kernel's ip_decrease_ttl() (RFC 1624). */
static __always_inline void ip4_decrease_ttl(struct iphdr *iph)
{
	__u32 check = (__u32)iph->check;

	check += (__u32)bpf_htons(0x0100);
	iph->check = (__sum16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

SEC("xdp")
int fb_router(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6h = NULL;
	struct iphdr *iph = NULL;
	int action = XDP_PASS;
	__u32 reason;
	long rc;

	if ((void *)(eth + 1) > data_end) {
		action = XDP_DROP;
		reason = FB_XDP_DROP_MALFORMED;
		goto out;
	}

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > data_end || iph->ihl < 5) {
			action = XDP_DROP;
			reason = FB_XDP_DROP_MALFORMED;
			goto out;
		}
		if (iph->ttl <= 1) {
			reason = FB_XDP_PASS_TTL; /* kernel sends ICMP time exceeded */
			goto out;
		}
		fib.family = AF_INET;
		fib.tos = iph->tos;
		fib.l4_protocol = iph->protocol;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = iph->saddr;
		fib.ipv4_dst = iph->daddr;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6h = (void *)(eth + 1);
		if ((void *)(ip6h + 1) > data_end) {
			action = XDP_DROP;
			reason = FB_XDP_DROP_MALFORMED;
			goto out;
		}
		/* Multicast and link-local traffic (ND, RS/RA) is the kernel's. */
		if (ip6h->daddr.s6_addr[0] == 0xff ||
		    (ip6h->daddr.s6_addr[0] == 0xfe &&
		     (ip6h->daddr.s6_addr[1] & 0xc0) == 0x80) ||
		    (ip6h->saddr.s6_addr[0] == 0xfe &&
		     (ip6h->saddr.s6_addr[1] & 0xc0) == 0x80)) {
			reason = FB_XDP_PASS_NOT_FWDED;
			goto out;
		}
		if (ip6h->hop_limit <= 1) {
			reason = FB_XDP_PASS_TTL;
			goto out;
		}
		fib.family = AF_INET6;
		fib.flowinfo = *(__be32 *)ip6h & IPV6_FLOWINFO_MASK;
		fib.l4_protocol = ip6h->nexthdr;
		fib.tot_len = bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, sizeof(fib.ipv6_dst));
	} else {
		reason = FB_XDP_PASS_NOT_IP;
		goto out;
	}

	fib.ifindex = ctx->ingress_ifindex;
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), fib_flags);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS) {
		reason = fib_failure(rc, &action);
		goto out;
	}

	/*
	 * Redirect first: it only records the target, the frame leaves after the
	 * program returns, so it may still be rewritten below. An egress port
	 * fb-xdp did not enroll makes it return XDP_PASS: the kernel gets the
	 * frame unmodified.
	 */
	action = bpf_redirect_map(&fb_ports, fib.ifindex, XDP_PASS);
	if (action != XDP_REDIRECT) {
		reason = FB_XDP_PASS_NO_PORT;
		goto out;
	}
	if (iph)
		ip4_decrease_ttl(iph);
	else if (ip6h)
		ip6h->hop_limit--;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	reason = FB_XDP_FORWARDED;
out:
	return count(ctx, reason, action);
}

char _license[] SEC("license") = "GPL";
