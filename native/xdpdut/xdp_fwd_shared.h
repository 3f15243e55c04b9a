/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the fwdbench XDP DUT programs (native/bpf/xdp_fwd.bpf.c)
 * and their loader fb-xdp (native/xdpdut/fb_xdp.c).
 *
 * Every packet a program sees is accounted to exactly one reason below, so
 * the per-reason packet counts add up to the packets the DUT received.
 */
#ifndef FWDBENCH_XDP_FWD_SHARED_H
#define FWDBENCH_XDP_FWD_SHARED_H

/* X(enum suffix, JSON name, verdict) -- one list for BPF and user space. */
#define FB_XDP_REASONS(X)                                                  \
	X(FORWARDED,        "forwarded",          redirect)                 \
	X(PASS_NOT_IP,      "pass_not_ip",        pass) /* ARP, VLAN, ... */ \
	X(PASS_TTL,         "pass_ttl_expired",   pass) /* TTL/hlim <= 1 */  \
	X(PASS_NOT_FWDED,   "pass_not_forwarded", pass) /* local, mcast */   \
	X(PASS_NO_NEIGH,    "pass_no_neigh",      pass)                     \
	X(PASS_FRAG_NEEDED, "pass_frag_needed",   pass)                     \
	X(PASS_FWD_DISABLED,"pass_fwd_disabled",  pass)                     \
	X(PASS_NO_PORT,     "pass_no_port",       pass) /* egress not ours */ \
	X(PASS_OTHER,       "pass_other",         pass) /* lwt, no src */   \
	X(DROP_MALFORMED,   "drop_malformed",     drop) /* truncated hdr */ \
	X(DROP_FIB,         "drop_fib",           drop) /* blackhole etc. */ \
	X(DROP_NO_PORT,     "drop_no_port",       drop) /* xconnect: no peer */

enum fb_xdp_reason {
#define FB_XDP_ENUM(sym, name, verdict) FB_XDP_##sym,
	FB_XDP_REASONS(FB_XDP_ENUM)
#undef FB_XDP_ENUM
	FB_XDP_N_REASONS
};

/* Value of the per-CPU array "fb_stats", indexed by enum fb_xdp_reason. */
struct fb_xdp_count {
	__u64 packets;
	__u64 bytes; /* L2 frame bytes without FCS */
};

/* Names the loader and the driver rely on. */
#define FB_XDP_PROG_XCONNECT "fb_xconnect"
#define FB_XDP_PROG_ROUTER   "fb_router"
#define FB_XDP_MAP_STATS     "fb_stats"
#define FB_XDP_MAP_PORTS     "fb_ports"
#define FB_XDP_MAX_PORTS     64

#endif
