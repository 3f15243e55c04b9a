/* SPDX-License-Identifier: MIT */
/*
 * xdp backend.
 * TX: one fwdgen_tx BPF program per stream, run by BPF_PROG_RUN with
 *     BPF_F_TEST_XDP_LIVE_FRAMES; `repeat` frames per call, each returned as
 *     XDP_TX (a redirect out of the tx port). The program's .bss sequence
 *     counter says exactly how many frames were generated.
 * RX: one fwdgen_rx program for all xdp rx ports; counters, histograms and
 *     sequence bitmaps are mmapped arrays read without syscalls.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fwdgen.h"
#include "fwdgen_tx.skel.h"
#include "fwdgen_rx.skel.h"

/* ---- TX ------------------------------------------------------------- */

/* Per run: one TX program for all streams. */
struct xdp_txshared {
	struct fwdgen_tx *skel;
	int prog_fd;
	struct fg_tx_state *state; /* mmapped fg_tx_state */
	size_t state_sz;
	struct fg_tx_pair *pair;   /* mmapped fg_tx_pair */
	size_t pair_sz;
	int lo_ifindex;            /* where it is parked; 0 = not parked */
	char warning[256];
};

/* Per stream. */
struct xdp_tx {
	struct xdp_txshared *sh;
	volatile struct fg_tx_state *st;
	struct xdp_md ctx;
	struct fg_tx_streamcfg cfg;
	uint32_t batch;
	double runs_per_ns;       /* kernel pacing: program runs per ns of a call */
};

_Static_assert(sizeof(struct fg_tx_state) == 64, "fg_tx_state: one cache line");

/* Program runs the kernel makes before it flushes the frames to the port
 * (at most TEST_XDP_MAX_BATCH = 256); the call's page pool holds as many
 * pages. The receiving veth's NAPI is kicked at each flush; its ring holds
 * 256 frames, so a user-paced burst flushed every 256 overflows it when it
 * catches up after the thread was preempted (measured: ~0.3% loss at
 * 10-100 kpps on a busy 2-core VM). As-fast-as-possible streams use 256:
 * each flush wakes the peer's NAPI (measured: __napi_schedule + irqrestore
 * were 12% of the TX CPU with 64). Paced streams used 64 until 2026-11-23;
 * that woke the DUT every few us (kernel-paced runs are mostly not-due
 * drops, 64 take ~5 us), and frames freed away from the pool's context
 * overflowed the 64-page pool into the page allocator (perf at 1.5 Mpps on
 * veth's ring: __free_frozen_pages 11% of vfwd's CPU, page init 12% of the
 * generator's). Measured 2026-11-23, 3 interleaved rounds each:
 * - kernel-paced, veth's ring, batch 64 / 128 / 256: DUT CPU busy at 0.1
 *   Mpps vfwd 73 / 66 / 47 %, Linux router 60 / 47 / 35 %; forwarded at
 *   1.2 Mpps offered (median, Mpps) vfwd 0.617 / 0.696 / 0.725, Linux
 *   0.711 / 0.775 / 0.893, testpmd 0.480 / 0.596 / 0.679. But 256 at 1 Mpps
 *   on a veth loop lost 11-49 of 3 M frames in 10 of 13 runs (a catch-up
 *   fills the ring within one flush), 128 none in 5 of 5;
 * - user-paced 1 ms bursts behind the lab's DUT ingress, 64 / 128: at 1.2
 *   Mpps offered vfwd 0.836 / 0.940, Linux 0.800 / 0.923, testpmd 0.743 /
 *   1.186, no more loss at 0.2 and 0.6 Mpps.
 * So paced streams flush every 128 runs, kernel-paced ones below 0.5 Mpps
 * (groups of 50 us of traffic, a few frames per flush) every 256. */
#define XDP_LIVE_BATCH 128
#define XDP_LIVE_BATCH_MAX 256
#define XDP_LIVE_BATCH_PAIR 16
#define XDP_KPACE_FULL_BATCH_PPS 5e5

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

static void *map_mmap(struct bpf_map *m, size_t *sz)
{
	void *p;

	*sz = page_round((size_t)bpf_map__max_entries(m) * bpf_map__value_size(m));
	p = mmap(NULL, *sz, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	return p == MAP_FAILED ? NULL : p;
}

void fg_xdp_tx_cleanup(struct fg_run *r)
{
	struct xdp_txshared *sh = r->xdp_tx;

	if (!sh)
		return;
	if (sh->lo_ifindex) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = sh->prog_fd);
		bpf_xdp_attach(sh->lo_ifindex, -1, XDP_FLAGS_SKB_MODE | XDP_FLAGS_REPLACE, &ao);
	}
	if (sh->state)
		munmap(sh->state, sh->state_sz);
	if (sh->pair)
		munmap(sh->pair, sh->pair_sz);
	fwdgen_tx__destroy(sh->skel);
	free(sh);
	r->xdp_tx = NULL;
}

const char *fg_xdp_tx_warning(struct fg_run *r)
{
	struct xdp_txshared *sh = r->xdp_tx;

	return sh && sh->warning[0] ? sh->warning : NULL;
}

static int xdp_tx_shared(struct fg_run *r, char *err, size_t errlen)
{
	struct xdp_txshared *sh;
	int rc;

	if (r->xdp_tx)
		return 0;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	r->xdp_tx = sh;
	sh->skel = fwdgen_tx__open_and_load();
	if (!sh->skel) {
		rc = -errno;
		fg_errf(err, errlen, "xdp: loading the TX program: %s", strerror(-rc));
		return rc;
	}
	sh->prog_fd = bpf_program__fd(sh->skel->progs.fwdgen_tx);
	sh->state = map_mmap(sh->skel->maps.fg_tx_state, &sh->state_sz);
	sh->pair = map_mmap(sh->skel->maps.fg_tx_pair, &sh->pair_sz);
	if (sh->pair)
		memset(sh->pair, 0xff, sh->pair_sz); /* FG_NO_STREAM: no pairs */
	if (!sh->state || !sh->pair) {
		rc = -errno;
		fg_errf(err, errlen, "xdp: mmap of fg_tx_state/fg_tx_pair: %s", strerror(-rc));
		return rc;
	}
	/* Park the program on lo (generic mode; it passes everything there) so
	 * it stays in the XDP dispatcher between runs. */
	rc = bpf_xdp_attach(1, sh->prog_fd, XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (rc)
		snprintf(sh->warning, sizeof(sh->warning),
			 "xdp: cannot park the TX program on lo (%s): every TX burst waits for an "
			 "RCU grace period, so high rates are out of reach", strerror(-rc));
	else
		sh->lo_ifindex = 1;
	return 0;
}

static int xdp_tx_open(struct fg_run *r, struct fg_stream_rt *s, char *err, size_t errlen)
{
	struct fg_port_rt *p = &r->ports[s->tx_port];
	struct fg_tx_streamcfg c;
	struct xdp_txshared *sh;
	struct xdp_tx *x;
	uint32_t key = (uint32_t)s->idx;
	int rc = xdp_tx_shared(r, err, errlen);

	if (rc)
		return rc;
	sh = r->xdp_tx;
	memset(&c, 0, sizeof(c));
	c.ipv6 = (uint32_t)s->pc.ipv6;
	c.imix = s->pc.frame_size == 0;
	c.frame_len = s->tmpl_len;
	c.magic = r->magic;
	/* as fast as possible: queues dominate latency, a timestamp per 8
	 * frames (~1.5 us apart at 5 Mpps) is enough; paced: every frame */
	c.ts_mask = s->rate > 0 ? 0 : 7;
	c.flow = s->pc.flow;
	c.csum = s->k;
	memcpy(c.hdr, s->tmpl, s->pc.ipv6 ? FG_HDR6_LEN : FG_HDR4_LEN);
	if (bpf_map_update_elem(bpf_map__fd(sh->skel->maps.fg_tx_cfg), &key, &c, 0)) {
		rc = -errno;
		fg_errf(err, errlen, "xdp: bpf_map_update_elem(fg_tx_cfg) for %s: %s",
			p->sp->ifname, strerror(-rc));
		return rc;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->sh = sh;
	x->cfg = c;
	x->st = &sh->state[s->idx];
	x->ctx.data_end = s->tmpl_len; /* the kernel wants ctx to describe data_in */
	x->ctx.ingress_ifindex = (uint32_t)p->ifindex;
	x->batch = s->rate > 0 ? XDP_LIVE_BATCH : XDP_LIVE_BATCH_MAX;
	s->txp = x;
	return 0;
}

static void xdp_tx_set_phase(struct fg_stream_rt *s, uint32_t phase)
{
	struct xdp_tx *x = s->txp;

	x->st->pace_gap_ps = 0;
	x->st->phase = phase;
	x->st->seq = 0;
	x->st->flow = 0;
}

static int64_t xdp_run(struct xdp_tx *x, struct fg_stream_rt *s, uint32_t repeat,
		       uint32_t batch)
{
	uint32_t before = x->st->seq, done;
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = s->tmpl,
		.data_size_in = s->tmpl_len,
		.ctx_in = &x->ctx,
		.ctx_size_in = sizeof(x->ctx),
		.repeat = repeat,
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		.batch_size = repeat < batch ? repeat : batch,
	);
	int rc = bpf_prog_test_run_opts(x->sh->prog_fd, &o);

	done = x->st->seq - before;
	/* EINTR: a signal stopped the run part way; seq says how far */
	if (rc && errno != EINTR && !done)
		return -errno;
	return done;
}

static int64_t xdp_tx_burst(struct fg_stream_rt *s, uint32_t n)
{
	struct xdp_tx *x = s->txp;

	return xdp_run(x, s, n, x->batch);
}

/* Above this load a clock read per frame costs a share of the maximum
 * rate (perf: ~10 % of a frame's cost): frames sent back to back when
 * behind then share a stamp 8 at a time, as unpaced frames do (error
 * < 1.5 us at 4 Mpps). */
#define KPACE_STAMP_EVERY_PPS 2e6

static int xdp_tx_kpace_start(struct fg_stream_rt *s, uint64_t tb_ns, uint64_t total,
			      uint64_t stop_ns, uint32_t group)
{
	struct xdp_tx *x = s->txp;
	uint32_t key = (uint32_t)s->idx, mask = s->rate >= KPACE_STAMP_EVERY_PPS ? 7 : 0;

	if (x->cfg.ts_mask != mask) {
		x->cfg.ts_mask = mask;
		if (bpf_map_update_elem(bpf_map__fd(x->sh->skel->maps.fg_tx_cfg), &key, &x->cfg, 0))
			return -errno;
	}

	x->st->pace_base_ns = tb_ns;
	x->st->pace_next_ps = 0;
	x->st->pace_ok_ps = 0;
	x->st->pace_credit = 0;
	x->st->pace_group = (uint16_t)group;
	x->st->pace_stop_ps = (stop_ns - tb_ns) * 1000;
	x->st->pace_limit = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
	x->st->pace_burst = FG_CATCHUP_BURST;
	x->batch = s->rate < XDP_KPACE_FULL_BATCH_PPS ? XDP_LIVE_BATCH_MAX : XDP_LIVE_BATCH;
	if (!x->runs_per_ns)
		x->runs_per_ns = 0.01; /* a first guess: 100 ns per run */
	x->st->pace_gap_ps = (uint64_t)(1e12 / s->rate + 0.5); /* last: arms it */
	return 0;
}

/* A call's length is given in program runs (`repeat`), most of them the
 * cheap not-due drops; the runs per ns of the calls so far say how many
 * make slice_ns. */
static int xdp_tx_kpace_run(struct fg_stream_rt *const *ss, int n, int cpu, uint64_t slice_ns,
			    int64_t *sent, uint64_t *t_last_ns)
{
	struct xdp_tx *x = ss[0]->txp;
	volatile struct fg_tx_pair *pair = NULL;
	double want = x->runs_per_ns * (double)slice_ns;
	uint32_t runs = want < 256 ? 256 : want > 1e8 ? 100000000u : (uint32_t)want;
	uint32_t before[2];
	uint64_t t0 = fg_now_ns(), t1;
	int64_t r;
	int k, rc = 0;

	if (n == 2) {
		if (cpu < 0 || cpu >= FG_TX_PAIR_CPUS)
			return -EINVAL;
		pair = &x->sh->pair[cpu];
		pair->comp = (uint32_t)ss[1]->idx;
		pair->main = (uint32_t)ss[0]->idx; /* last: arms the pair */
	}
	for (k = 0; k < n; k++)
		before[k] = ((struct xdp_tx *)ss[k]->txp)->st->seq;
	/* a frame waits in the kernel's bulk queue until its batch ends:
	 * latency stream p50 on the veth loop 3.8 us with 64, 1.1 us with 16 */
	r = xdp_run(x, ss[0], runs, n == 2 ? XDP_LIVE_BATCH_PAIR : x->batch);

	if (r < 0)
		rc = (int)r;
	if (pair)
		pair->main = FG_NO_STREAM;
	t1 = fg_now_ns();
	if (t1 > t0 + 100000) /* long enough to learn from; smoothed */
		x->runs_per_ns = 0.5 * x->runs_per_ns + 0.5 * (double)runs / (double)(t1 - t0);
	for (k = 0; k < n; k++) {
		volatile struct fg_tx_state *st = ((struct xdp_tx *)ss[k]->txp)->st;

		sent[k] = (int64_t)(uint32_t)(st->seq - before[k]);
		if (sent[k] > 0) /* the last frame's stamp: 32 bits of ns, this call */
			t_last_ns[k] = t1 - (uint32_t)((uint32_t)t1 - st->ts);
	}
	return sent[0] || (n == 2 && sent[1]) ? 0 : rc;
}

static void xdp_tx_close(struct fg_stream_rt *s)
{
	free(s->txp);
	s->txp = NULL;
}

const struct fg_txops fg_xdp_txops = {
	.name = "xdp",
	.open = xdp_tx_open,
	.set_phase = xdp_tx_set_phase,
	.burst = xdp_tx_burst,
	.close = xdp_tx_close,
	.kpace_start = xdp_tx_kpace_start,
	.kpace_run = xdp_tx_kpace_run,
	.max_burst = 8192,
	/* Every BPF_PROG_RUN creates a page pool; one whose frames are still in
	 * flight when the run ends (in a DUT's ring, on another CPU) is freed
	 * about 1 s later, and the kernel has 65534 pool ids: at 10k runs/s
	 * through the lab router the ids ran out (ENOSPC) within seconds. At
	 * most one run per 250 us per stream keeps far below that. */
	.burst_cap = 8192,   /* = max_burst: 2 ms at 4 Mpps (pace_min_burst) */
	.min_period_ns = 250000,
};

/* ---- RX ------------------------------------------------------------- */

struct xdp_rx {
	struct fwdgen_rx *skel;
	int ncpus;
	struct fg_rx_pcpu *stats;   /* [ncpus][FG_MAX_STREAMS] */
	struct fg_rx_order *order;  /* [FG_MAX_STREAMS] */
	uint64_t *hist;             /* [ncpus][nstreams][FG_HDR_LEN] */
	uint64_t *bitmap;
	size_t stats_sz, order_sz, hist_sz, bitmap_sz;
	int attached[FG_MAX_PORTS];
};

/* Describe the program attached to a port, e.g. "program 42 fwdgen_rx". */
static void attached_prog(int ifindex, char *out, size_t len)
{
	struct bpf_prog_info info;
	__u32 id = 0, ilen = sizeof(info);
	int fd;

	if (bpf_xdp_query_id(ifindex, 0, &id) || !id)
		return;
	fd = bpf_prog_get_fd_by_id(id);
	memset(&info, 0, sizeof(info));
	if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &ilen))
		snprintf(out, len, "XDP program %u \"%s\"%s", id, info.name,
			 strncmp(info.name, "fwdgen", 6) ? "" : " (a fwdgen still running or killed)");
	else
		snprintf(out, len, "XDP program %u", id);
	if (fd >= 0)
		close(fd);
}

static void xdp_rx_close(struct fg_run *r)
{
	struct xdp_rx *x = r->xdp_rx;
	int i;

	if (!x)
		return;
	for (i = 0; i < r->nports; i++) {
		if (x->attached[i]) {
			LIBBPF_OPTS(bpf_xdp_attach_opts, ao,
				.old_prog_fd = bpf_program__fd(x->skel->progs.fwdgen_rx));
			/* detach only if our program is still the one attached */
			bpf_xdp_attach(r->ports[i].ifindex, -1,
				       XDP_FLAGS_DRV_MODE | XDP_FLAGS_REPLACE, &ao);
		}
	}
	if (x->stats)
		munmap(x->stats, x->stats_sz);
	if (x->order)
		munmap(x->order, x->order_sz);
	if (x->hist)
		munmap(x->hist, x->hist_sz);
	if (x->bitmap)
		munmap(x->bitmap, x->bitmap_sz);
	fwdgen_rx__destroy(x->skel);
	free(x);
	r->xdp_rx = NULL;
}

static int xdp_rx_open(struct fg_run *r, char *err, size_t errlen)
{
	struct xdp_rx *x = calloc(1, sizeof(*x));
	uint32_t words = 0, key;
	int i, rc, any = 0;

	if (!x)
		return -ENOMEM;
	r->xdp_rx = x;
	for (i = 0; i < r->nstreams; i++)
		if (r->streams[i]->rxo == &fg_xdp_rxops)
			any = 1;
	if (!any)
		return 0;
	x->ncpus = libbpf_num_possible_cpus();
	if (x->ncpus <= 0) {
		fg_errf(err, errlen, "xdp: counting CPUs: %s", strerror(-x->ncpus));
		return x->ncpus;
	}
	x->skel = fwdgen_rx__open();
	if (!x->skel) {
		rc = -errno;
		fg_errf(err, errlen, "xdp: opening the RX program: %s", strerror(-rc));
		return rc;
	}
	for (i = 0; i < r->nstreams; i++)
		words += r->streams[i]->capacity / 64 + 1;
	x->skel->rodata->cfg_magic = r->magic;
	x->skel->rodata->cfg_nstreams = (uint32_t)r->nstreams;
	bpf_map__set_max_entries(x->skel->maps.fg_rx_stats,
				 (uint32_t)x->ncpus * FG_MAX_STREAMS);
	bpf_map__set_max_entries(x->skel->maps.fg_rx_hist,
				 (uint32_t)(x->ncpus * r->nstreams) * FG_HDR_LEN);
	bpf_map__set_max_entries(x->skel->maps.fg_rx_bitmap, words);
	rc = fwdgen_rx__load(x->skel);
	if (rc) {
		fg_errf(err, errlen, "xdp: loading the RX program: %s", strerror(-rc));
		return rc;
	}
	x->stats = map_mmap(x->skel->maps.fg_rx_stats, &x->stats_sz);
	x->order = map_mmap(x->skel->maps.fg_rx_order, &x->order_sz);
	x->hist = map_mmap(x->skel->maps.fg_rx_hist, &x->hist_sz);
	x->bitmap = map_mmap(x->skel->maps.fg_rx_bitmap, &x->bitmap_sz);
	if (!x->stats || !x->order || !x->hist || !x->bitmap) {
		rc = -errno;
		fg_errf(err, errlen, "xdp: mmap of the RX maps: %s", strerror(-rc));
		return rc;
	}
	words = 0;
	for (i = 0; i < r->nstreams; i++) {
		struct fg_stream_rt *s = r->streams[i];
		struct fg_rx_streamcfg c = {
			.ifindex = s->rx_port >= 0 ? (uint32_t)r->ports[s->rx_port].ifindex : 0,
			.bm_base = words,
			.capacity = s->capacity,
		};

		words += s->capacity / 64 + 1;
		key = (uint32_t)s->idx;
		if (s->rxo != &fg_xdp_rxops)
			c.ifindex = 0; /* counted elsewhere */
		rc = bpf_map_update_elem(bpf_map__fd(x->skel->maps.fg_rx_cfg), &key, &c, 0);
		if (rc) {
			rc = -errno;
			fg_errf(err, errlen, "xdp: bpf_map_update_elem(fg_rx_cfg): %s", strerror(-rc));
			return rc;
		}
	}
	for (i = 0; i < r->nports; i++) {
		struct fg_port_rt *p = &r->ports[i];

		if (!p->rx_used || p->backend != FG_BACKEND_XDP)
			continue;
		rc = bpf_xdp_attach(p->ifindex, bpf_program__fd(x->skel->progs.fwdgen_rx),
				    XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		if (rc) {
			char who[128] = "another XDP program";

			if (rc == -EBUSY || rc == -EEXIST)
				attached_prog(p->ifindex, who, sizeof(who));
			fg_errf(err, errlen, "xdp: bpf_xdp_attach(%s): %s%s%s%s", p->sp->ifname,
				strerror(-rc), rc == -EBUSY || rc == -EEXIST ? " (" : "",
				rc == -EBUSY || rc == -EEXIST ? who : "",
				rc == -EBUSY || rc == -EEXIST
					? " is attached; detach it (ip link set dev IF xdp off) or use "
					  "backend afpacket)" : "");
			return rc;
		}
		x->attached[i] = 1;
	}
	return 0;
}

static void xdp_rx_set_phase(struct fg_run *r, uint32_t phase)
{
	struct xdp_rx *x = r->xdp_rx;

	if (x && x->skel)
		__atomic_store_n(&x->skel->bss->rx_phase, phase, __ATOMIC_SEQ_CST);
}

static uint64_t xdp_rx_packets(struct fg_run *r, int stream)
{
	struct xdp_rx *x = r->xdp_rx;
	uint64_t n = 0;
	int c;

	for (c = 0; c < x->ncpus; c++)
		n += __atomic_load_n(&x->stats[c * FG_MAX_STREAMS + stream].packets,
				     __ATOMIC_RELAXED);
	return n;
}

static int xdp_rx_collect(struct fg_run *r, int stream, struct fg_rx_final *o)
{
	struct xdp_rx *x = r->xdp_rx;
	int c;

	memset(o, 0, sizeof(*o));
	o->lat = calloc(1, sizeof(*o->lat));
	if (!o->lat)
		return -ENOMEM;
	for (c = 0; c < x->ncpus; c++) {
		const struct fg_rx_pcpu *st = &x->stats[c * FG_MAX_STREAMS + stream];

		o->packets += st->packets;
		o->bytes += st->bytes;
		o->duplicated += st->duplicated;
		o->reordered += st->reordered;
		o->out_of_range += st->out_of_range;
		o->lat->sum += (double)st->lat_sum;
		if (st->lat_min && (!o->lat->min || st->lat_min < o->lat->min))
			o->lat->min = st->lat_min;
		if (st->lat_max > o->lat->max)
			o->lat->max = st->lat_max;
		fg_hdr_add_counts(o->lat,
				  &x->hist[((size_t)c * (size_t)r->nstreams + (size_t)stream) *
					   FG_HDR_LEN]);
	}
	o->jitter16 = x->order[stream].jitter16;
	return 0;
}

const struct fg_rxops fg_xdp_rxops = {
	.name = "xdp",
	.open = xdp_rx_open,
	.set_phase = xdp_rx_set_phase,
	.packets = xdp_rx_packets,
	.collect = xdp_rx_collect,
	.close = xdp_rx_close,
};
