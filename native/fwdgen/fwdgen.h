/* SPDX-License-Identifier: MIT */
/*
 * fwdgen runtime: one trial = a set of streams (load streams and their
 * optional latency streams), each sent by a TX backend on its tx port and
 * counted by an RX backend on its rx port. Backends: xdp.c, afxdp.c,
 * afpacket.c, memif.c.
 */
#ifndef FWDGEN_H
#define FWDGEN_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "fg_hdr.h"
#include "fg_pkt.h"
#include "spec.h"

#define FWDGEN_VERSION "0.1.0"

/* Exit codes (docs/contracts.md) */
#define FG_EXIT_OK 0
#define FG_EXIT_BADINPUT 2
#define FG_EXIT_RUNTIME 3

/* Largest template the xdp backend sends: live frames must fit in one
 * page with the kernel's head- and tailroom. */
#define FG_XDP_MAX_FRAME 3000

extern volatile sig_atomic_t fg_stop;

static inline uint64_t fg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void fg_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

struct fg_run;
struct fg_stream_rt;

/* What a receiver reports for one stream at the end. */
struct fg_rx_final {
	uint64_t packets, bytes, duplicated, reordered, out_of_range;
	uint64_t jitter16;
	struct fg_hdr *lat; /* counts + exact min/max/sum */
};

/* A paced stream that fell behind catches up in bursts of at most this
 * many frames (trial.c's pace_catchup, the xdp program's pace_burst). */
#define FG_CATCHUP_BURST 64u

struct fg_txops {
	const char *name;
	int (*open)(struct fg_run *r, struct fg_stream_rt *s, char *err, size_t errlen);
	/* New phase: sequence numbers restart at 0. */
	void (*set_phase)(struct fg_stream_rt *s, uint32_t phase);
	/* Send up to n frames; returns the number sent, -errno on failure. */
	int64_t (*burst)(struct fg_stream_rt *s, uint32_t n);
	void (*close)(struct fg_stream_rt *s);
	/* Optional, pacing in the kernel: kpace_start arms it for a phase that
	 * starts at tb_ns (total frames, none after stop_ns, in groups of
	 * `group` when paired; -errno on failure); kpace_run lets ss[0], and
	 * ss[1] in the same call if n is 2 (its latency stream; the thread is
	 * pinned to `cpu`), send for about slice_ns, and gives each stream's
	 * frames sent and when the last of them left; 0 or -errno. */
	int (*kpace_start)(struct fg_stream_rt *s, uint64_t tb_ns, uint64_t total,
			   uint64_t stop_ns, uint32_t group);
	int (*kpace_run)(struct fg_stream_rt *const *ss, int n, int cpu, uint64_t slice_ns,
			 int64_t *sent, uint64_t *t_last_ns);
	int spin;                 /* pacing: busy-wait between bursts, never sleep */
	uint32_t max_burst;       /* frames per call at most */
	uint32_t burst_cap;       /* pacing: largest regular burst [frames] */
	uint32_t min_period_ns;   /* pacing: at most one burst per period */
};

struct fg_rxops {
	const char *name;
	/* Set up every port whose rx backend is this one. */
	int (*open)(struct fg_run *r, char *err, size_t errlen);
	void (*set_phase)(struct fg_run *r, uint32_t phase);
	uint64_t (*packets)(struct fg_run *r, int stream); /* live, unique */
	int (*collect)(struct fg_run *r, int stream, struct fg_rx_final *out);
	void (*close)(struct fg_run *r);
	/* Optional: receive on a port marked rx_inline (no receiver thread of
	 * its own) once; frames handled, or -errno. Called by the TX thread of
	 * the port's CPU between bursts, and by the trial during the drain. */
	int (*poll)(struct fg_run *r, int port);
};

extern const struct fg_txops fg_xdp_txops, fg_afp_txops, fg_afx_txops, fg_mif_txops;
extern const struct fg_rxops fg_xdp_rxops, fg_afp_rxops, fg_afx_rxops, fg_mif_rxops,
	fg_none_rxops;

struct fg_port_rt {
	const struct fg_spec_port *sp;
	int ifindex;
	uint8_t mac[6];
	int mtu;
	int tx_used, rx_used;
	enum fg_backend backend; /* resolved */
	int rx_inline;           /* received by a TX thread's polls (rxops->poll) */
	int rx_cpu;              /* ... by the one on this CPU (-1: any) */
};

struct fg_stream_rt {
	int idx;                  /* internal index = signature stream field */
	const struct fg_spec_stream *ss;
	int latency_of;           /* -1: load stream; else its load stream */
	int tx_port, rx_port;     /* rx_port -1: send only */
	double rate;              /* [pps]; 0 = as fast as possible */
	struct fg_pktcfg pc;
	struct fg_csum_consts k;
	uint8_t tmpl[FG_MAX_FRAME];
	uint32_t tmpl_len;
	uint32_t capacity;        /* sequence numbers the receiver tracks */

	/* TX state, owned by the TX thread */
	uint32_t min_burst;       /* pacing granularity [frames] */
	int kpaced;               /* paced by the backend in the kernel */
	uint64_t next_ok_ns;      /* catching up: no burst before this time */
	uint64_t total;           /* frames intended in this phase */
	uint64_t sent;            /* frames sent in this phase */
	int done;
	_Atomic uint64_t tx_live; /* measured-phase frames sent so far */
	uint64_t tx_meas;
	uint64_t t_last_ns;       /* end of the last measured burst */
	int tx_error;             /* -errno of a failed burst */

	const struct fg_txops *txo;
	const struct fg_rxops *rxo;
	void *txp;                /* backend private */

	struct fg_rx_final rx;
};

struct fg_sample {
	uint64_t tx[FG_MAX_STREAMS], rx[FG_MAX_STREAMS];
};

struct fg_run {
	const struct fg_spec *sp;
	uint32_t magic;
	int nports, nstreams;
	struct fg_port_rt ports[FG_MAX_PORTS];
	struct fg_stream_rt *streams[FG_MAX_STREAMS];
	void *xdp_tx;             /* backend private, per run */
	void *xdp_rx;
	void *afp_rx;
	void *afxdp;              /* afxdp sockets (TX and RX) */
	void *memif;              /* memif interfaces (TX and RX) */
	uint64_t t0_ns, t1_ns;    /* warm-up start, measured start */
	int nsamples;
	struct fg_sample *samples;
	int nwarn;
	char warn[8][256];        /* for the result's "warnings" */
};

/* Add a warning to the result (dropped silently beyond 8). */
void fg_warn(struct fg_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* xdp.c: the TX program shared by all streams of a run */
void fg_xdp_tx_cleanup(struct fg_run *r);
const char *fg_xdp_tx_warning(struct fg_run *r);

/* memif.c: 1 if this build has libmemif, else 0 and why in err */
int fg_memif_available(char *err, size_t errlen);
/* The MAC of a memif port without spec.ports[].mac: 02:fb:6d:00:00:<index+1> */
void fg_memif_default_mac(int port, uint8_t mac[6]);
/* The slots of memif port `port`'s RX and TX rings, as its last connection
 * made them (a slave's own size, a master's from the peer): 1, or 0 when the
 * port is not memif or never connected. */
int fg_memif_rings(struct fg_run *r, int port, uint32_t *rx, uint32_t *tx);

/* trial.c */
int fg_trial_main(int argc, char **argv);
/* sink.c: the memif drop sink */
int fg_sink_main(int argc, char **argv);
/* path.c: the test path forwarder */
int fg_path_main(int argc, char **argv);
/* errors */
void fg_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
