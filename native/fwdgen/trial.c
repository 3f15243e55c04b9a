/* SPDX-License-Identifier: MIT */
/*
 * `fwdgen trial`: read a spec, set up ports and streams, send warm-up then
 * the measured phase with paced bursts, wait for in-flight frames, and
 * print one JSON result (docs/contracts.md sections 1-2).
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fwdgen.h"

volatile sig_atomic_t fg_stop;

void fg_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void fg_warn(struct fg_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nwarn >= (int)(sizeof(r->warn) / sizeof(r->warn[0])))
		return;
	va_start(ap, fmt);
	vsnprintf(r->warn[r->nwarn++], sizeof(r->warn[0]), fmt, ap);
	va_end(ap);
}

static void on_signal(int sig)
{
	(void)sig;
	fg_stop = 1;
}

void fg_install_signals(void);
void fg_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* ---- options ---------------------------------------------------------- */

struct trial_opts {
	const char *spec;
	const char *backend;
	double load_pps, duration_s, warmup_s;
	int pretty;
};

enum opt_type { OPT_STR, OPT_NUM, OPT_FLAG };

struct opt_def {
	const char *name;
	enum opt_type type;
	size_t off;
	const char *arg, *help;
};

#define OFF(f) offsetof(struct trial_opts, f)
static const struct opt_def trial_optdefs[] = {
	{"spec", OPT_STR, OFF(spec), "FILE|-",
	 "trial spec, JSON (docs/contracts.md section 1); '-' reads stdin (required)"},
	{"backend", OPT_STR, OFF(backend), "NAME",
	 "override the backend of every port but memif ones: auto, xdp, afxdp or afpacket"},
	{"load-pps", OPT_NUM, OFF(load_pps), "PPS",
	 "override spec.load_pps [pps per stream]; 0 = as fast as possible"},
	{"duration", OPT_NUM, OFF(duration_s), "S", "override spec.duration_s [s]"},
	{"warmup", OPT_NUM, OFF(warmup_s), "S", "override spec.warmup_s [s]"},
	{"pretty", OPT_FLAG, OFF(pretty), NULL, "indent the JSON result"},
	{"help", OPT_FLAG, 0, NULL, "show this help"},
};
#define N_TRIAL_OPTS (sizeof(trial_optdefs) / sizeof(trial_optdefs[0]))

void fg_trial_usage(FILE *f);
void fg_trial_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: fwdgen trial --spec FILE|- [options]\n\n"
		   "Runs warm-up then the measured trial and prints one JSON result on stdout.\n"
		   "Exit codes: 0 ok, 2 bad input (the message names the field), 3 runtime failure.\n\n"
		   "options:\n");
	for (i = 0; i < N_TRIAL_OPTS; i++) {
		char lhs[40];

		snprintf(lhs, sizeof(lhs), "--%s%s%s", trial_optdefs[i].name,
			 trial_optdefs[i].arg ? " " : "", trial_optdefs[i].arg ? trial_optdefs[i].arg : "");
		fprintf(f, "  %-22s %s\n", lhs, trial_optdefs[i].help);
	}
	fprintf(f, "\nspec in brief (docs/contracts.md has every field and default):\n"
		   "  ports[]    ifname, peer_mac (required to transmit), mac, backend,\n"
		   "             burst_period_us (pacing: at most one burst per period),\n"
		   "             memif {socket, id, role master|slave, ring_size, buffer_size,\n"
		   "             connect_timeout_s} (backend memif: no kernel interface)\n"
		   "  streams[]  id, tx_port, rx_port (null: send only), src, dst (address or\n"
		   "             prefix), src_port, dst_port\n"
		   "  profile    l3 ipv4|ipv6, frame_size 64..9000 (IPv6 >= 82) or \"imix\",\n"
		   "             flows, vary [src_ip dst_ip src_port dst_port],\n"
		   "             port_pattern sequential|rfc4814\n"
		   "  load_pps [pps] or \"max\", duration_s, warmup_s, drain_s [s],\n"
		   "  latency {enabled, rate_pps}, cpus {tx: [..], rx: [..]}, samples,\n"
		   "  pacer auto|kernel|user (kernel: the xdp program sends each frame when\n"
		   "             due; auto: from 0.5 Mpps for a stream alone on its TX thread,\n"
		   "             and a load stream with its latency stream on a pinned one)\n"
		   "\nenvironment: FWDGEN_DEBUG=1 prints libbpf and libxdp warnings.\n");
}

static int parse_trial_opts(int argc, char **argv, struct trial_opts *o)
{
	struct option lo[N_TRIAL_OPTS + 1];
	size_t i;
	int c, idx;

	memset(lo, 0, sizeof(lo));
	for (i = 0; i < N_TRIAL_OPTS; i++) {
		lo[i].name = trial_optdefs[i].name;
		lo[i].has_arg = trial_optdefs[i].type == OPT_FLAG ? no_argument : required_argument;
		lo[i].val = 0;
	}
	o->load_pps = o->duration_s = o->warmup_s = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, &idx)) != -1) {
		const struct opt_def *d;
		char *end;

		if (c != 0)
			return FG_EXIT_BADINPUT;
		d = &trial_optdefs[idx];
		if (!strcmp(d->name, "help")) {
			fg_trial_usage(stdout);
			exit(FG_EXIT_OK);
		}
		switch (d->type) {
		case OPT_STR:
			*(const char **)((char *)o + d->off) = optarg;
			break;
		case OPT_NUM:
			*(double *)((char *)o + d->off) = strtod(optarg, &end);
			if (*end || end == optarg) {
				fprintf(stderr, "fwdgen: --%s: \"%s\" is not a number\n", d->name, optarg);
				return FG_EXIT_BADINPUT;
			}
			break;
		case OPT_FLAG:
			*(int *)((char *)o + d->off) = 1;
			break;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fwdgen: trial: unexpected argument \"%s\"\n", argv[optind]);
		return FG_EXIT_BADINPUT;
	}
	if (!o->spec) {
		fprintf(stderr, "fwdgen: trial: --spec FILE|- is required\n");
		return FG_EXIT_BADINPUT;
	}
	return 0;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t cap = 4096, n = 0, k;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap);
	while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

/* ---- setup ------------------------------------------------------------ */

static int port_info(struct fg_port_rt *p)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->sp->ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(p->mac, ifr.ifr_hwaddr.sa_data, 6);
	else
		rc = -errno;
	if (!rc && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		p->mtu = ifr.ifr_mtu;
	close(fd);
	if (p->sp->has_mac)
		memcpy(p->mac, p->sp->mac, 6);
	return rc;
}

/* User-space pacing granularity: frames per burst so that a stream makes
 * at most one burst per `period_ns` (the port's burst_period_us, else the
 * backend's min_period_ns) of its traffic, capped at the backend's
 * burst_cap frames. (Streams paced in the kernel, kpace_choose, ignore it.)
 *
 * Above PACE_FAST_PPS the backend's period grows with the cube of the
 * rate: a call has a fixed cost (xdp: a page pool per BPF_PROG_RUN, ~25 us),
 * and at 4000 calls/s the paced loop reached 86-99 % of what the same
 * backend sends unpaced, so "90 % of the maximum" could not be paced; at
 * 4 Mpps this makes 500 calls/s of 8000 frames, as unpaced sending does.
 * Below it, bursts stay short for the 256-frame veth rings of DUTs that
 * forward less. */
#define PACE_FAST_PPS 2e6

static uint32_t pace_min_burst(double rate, const struct fg_txops *o, uint64_t period_ns)
{
	double p = (double)(period_ns ? period_ns : o->min_period_ns), b;

	if (!period_ns && rate > PACE_FAST_PPS)
		p *= (rate / PACE_FAST_PPS) * (rate / PACE_FAST_PPS) * (rate / PACE_FAST_PPS);
	b = rate * p * 1e-9;

	if (rate <= 0)
		return o->burst_cap;
	if (b < 1)
		return 1;
	return b > o->burst_cap ? o->burst_cap : (uint32_t)b;
}

static struct fg_stream_rt *make_stream(struct fg_run *r, int idx, int load_idx, int latency)
{
	const struct fg_spec *sp = r->sp;
	const struct fg_spec_stream *ss = &sp->streams[load_idx];
	struct fg_stream_rt *s = calloc(1, sizeof(*s));
	struct fg_port_rt *tp;
	double dur = sp->duration_s;

	if (!s)
		return NULL;
	s->idx = idx;
	s->ss = ss;
	s->latency_of = latency ? load_idx : -1;
	s->tx_port = ss->tx_port;
	s->rx_port = ss->rx_port;
	s->rate = latency ? sp->latency_pps : sp->load_pps;
	tp = &r->ports[s->tx_port];
	s->pc.ipv6 = sp->ipv6;
	memcpy(s->pc.src_mac, tp->mac, 6);
	memcpy(s->pc.dst_mac, tp->sp->peer_mac, 6);
	memcpy(s->pc.src_ip, ss->src_ip, 16);
	memcpy(s->pc.dst_ip, ss->dst_ip, 16);
	s->pc.frame_size = sp->frame_size;
	s->pc.ttl = 64;
	s->pc.magic = r->magic;
	s->pc.stream = (uint32_t)idx;
	s->pc.flow.flows = latency ? 1 : sp->flows;
	s->pc.flow.vary = latency ? 0 : sp->vary;
	s->pc.flow.port_pattern = sp->port_pattern;
	s->pc.flow.src_hosts = ss->src_hosts;
	s->pc.flow.dst_hosts = ss->dst_hosts;
	s->pc.flow.src_lo = fg_addr_lo32(sp->ipv6, ss->src_ip);
	s->pc.flow.dst_lo = fg_addr_lo32(sp->ipv6, ss->dst_ip);
	s->pc.flow.src_port = ss->src_port;
	s->pc.flow.dst_port = ss->dst_port;
	s->pc.flow.seed = 0x4814u + (uint32_t)idx * 0x9e3779b9u;
	fg_pkt_consts(&s->pc, &s->k);
	s->tmpl_len = (uint32_t)fg_pkt_template(&s->pc, s->tmpl, sizeof(s->tmpl));
	if (s->rate > 0) {
		double n = floor(s->rate * dur + 0.5);

		s->capacity = n < 1 ? 1 : (uint32_t)n;
	} else {
		double n = 20e6 * dur; /* as fast as possible: room for 20 Mpps */

		s->capacity = n > 4e9 ? 4000000000u : (uint32_t)n + 1;
	}
	return s;
}

/* ---- TX threads ------------------------------------------------------- */

static const struct fg_rxops *fg_rxops_of(enum fg_backend b)
{
	static const struct fg_rxops *const rx[] = {
		[FG_BACKEND_XDP] = &fg_xdp_rxops, [FG_BACKEND_AFPACKET] = &fg_afp_rxops,
		[FG_BACKEND_AFXDP] = &fg_afx_rxops, [FG_BACKEND_MEMIF] = &fg_mif_rxops,
	};

	return rx[b];
}

struct txthread {
	struct fg_run *r;
	pthread_t th;
	int cpu;  /* -1: not pinned */
	int cpu_alone; /* no other TX thread pinned to this CPU */
	int n;
	struct fg_stream_rt *s[FG_MAX_STREAMS];
	int kn;   /* streams paced in the kernel, in one call: */
	struct fg_stream_rt *kg[2]; /* a stream, or a load stream and its latency stream */
	int started;
	int spin; /* a backend of its streams wants them paced by busy-waiting */
	int nrx;  /* ports this thread receives on between bursts (rx_inline) */
	int rxp[FG_MAX_PORTS];
	_Atomic int *tx_left;       /* TX threads still sending (shared) */
};

/* Receive once on the thread's inline ports; frames handled. */
static int rx_inline(struct txthread *t)
{
	int k, n = 0;

	for (k = 0; k < t->nrx; k++) {
		const struct fg_port_rt *p = &t->r->ports[t->rxp[k]];
		int got = fg_rxops_of(p->backend)->poll(t->r, t->rxp[k]);

		n += got > 0 ? got : 0;
	}
	return n;
}

static void spin_until(uint64_t t)
{
	while (!fg_stop && fg_now_ns() < t)
		fg_cpu_relax();
}

/* Count what a call sent; t_last_ns: when its last frame left. */
static void account(struct fg_stream_rt *s, int64_t got, int measured, uint64_t t_last_ns)
{
	if (got < 0) {
		s->tx_error = (int)got;
		s->done = 1;
		return;
	}
	s->sent += (uint64_t)got;
	if (measured) {
		atomic_store_explicit(&s->tx_live, s->sent, memory_order_relaxed);
		if (got)
			s->t_last_ns = t_last_ns;
	}
	if (s->sent >= s->total)
		s->done = 1;
}

static void send_some(struct fg_stream_rt *s, uint64_t n, int measured)
{
	int64_t got;

	if (n > s->txo->max_burst)
		n = s->txo->max_burst;
	got = s->txo->burst(s, (uint32_t)n);
	account(s, got, measured, fg_now_ns());
}

/* Pacing in the kernel (the xdp backend, see fg_tx_state) for a stream
 * that has its TX thread to itself, on a port without burst_period_us.
 * User-space pacing makes a call per burst, 4000 calls/s, and each call's
 * fresh page pool (pages initialised, pools torn down) took a third of the
 * generator CPU (perf): at 90 % of the maximum it fell 0.02-9 % short, and
 * in the lab it offered 0.50 of 0.60 Mpps to vfwd (kernel: 0.60). Below
 * KPACE_MIN_PPS the kernel sends in groups of KPACE_GROUP_NS (below): one
 * frame at a time cost vfwd 0.13 % loss at 0.3 Mpps (a NAPI wake-up per
 * frame on the DUT CPU), while user-space bursts (250 us of traffic, 75-112
 * frames at 0.3-0.45 Mpps) overflowed the 256-frame veth ring of DUTs
 * without the lab's ingress queue: at 0.4 Mpps vfwd lost frames in 8 of 8
 * trials (median 3650) against 5 of 8 (median 208) in 50 us groups, and
 * the xdp router at 0.3 Mpps in 6 of 6 against 1 of 6. A call runs for
 * KPACE_SLICE_NS (200 calls/s), less close to the phase's end. */
#define KPACE_MIN_PPS 5e5
#define KPACE_SLICE_NS 5000000ull
#define KPACE_END_SLICE_NS 200000ull

/* A paired call (below) sends a load under KPACE_MIN_PPS in groups of
 * KPACE_GROUP_NS of traffic, as a NIC coalesces interrupts: frames one by
 * one at 150 kpps cost vfwd (a NAPI and a worker wake-up per frame on the
 * DUT CPU) 2.4 % loss. At most half the catch-up bucket per group. */
#define KPACE_GROUP_NS 50000.0

static uint32_t kpace_group(const struct fg_stream_rt *s)
{
	double g = floor(s->rate * KPACE_GROUP_NS * 1e-9 + 0.5);

	if (s->rate >= KPACE_MIN_PPS || g < 1)
		return 1;
	return g > FG_CATCHUP_BURST / 2 ? FG_CATCHUP_BURST / 2 : (uint32_t)g;
}

/* Which streams of this thread the kernel paces (t->kg): a stream alone
 * on its thread from KPACE_MIN_PPS; or a load stream and its latency
 * stream, at any load, when the thread is pinned to a CPU of its own (the
 * program finds the pair by CPU). The pair's calls replace the user-space
 * bursts of both streams, whose ~8000 calls/s spent a third of the
 * generator CPU tearing down page pools (perf) and left latency trials
 * 15 % short of their load at 250 kpps through vfwd. */
static void kpace_choose(struct txthread *t)
{
	const struct fg_spec *sp = t->r->sp;
	struct fg_stream_rt *a = t->s[0], *b = t->n > 1 ? t->s[1] : NULL;

	t->kn = 0;
	if (sp->pacer == FG_PACER_USER || !a->txo->kpace_run || a->rate <= 0)
		return;
	if (t->n == 1) {
		if (sp->pacer == FG_PACER_KERNEL || !t->r->ports[a->tx_port].sp->burst_period_ns)
			t->kg[t->kn++] = a;
		return;
	}
	if (t->n != 2 || t->cpu < 0 || !t->cpu_alone || b->txo != a->txo || b->rate <= 0 ||
	    b->tx_port != a->tx_port)
		return;
	if (a->latency_of == b->idx) { /* load stream first */
		struct fg_stream_rt *x = a;

		a = b;
		b = x;
	}
	if (b->latency_of != a->idx)
		return;
	t->kg[t->kn++] = a;
	t->kg[t->kn++] = b;
}

static void kpace_some(struct txthread *t, uint64_t now, uint64_t t_end, int measured)
{
	uint64_t slice = KPACE_SLICE_NS, t_last[2] = {0, 0};
	int64_t sent[2] = {0, 0};
	int k, rc;

	if (now + slice > t_end)
		slice = now + KPACE_END_SLICE_NS > t_end ? KPACE_END_SLICE_NS : t_end - now;
	rc = t->kg[0]->txo->kpace_run(t->kg, t->kn, t->cpu, slice, sent, t_last);
	for (k = 0; k < t->kn; k++)
		if (!t->kg[k]->done)
			account(t->kg[k], rc ? rc : sent[k], measured, t_last[k]);
}

/* A paced stream that fell behind (its thread was preempted) catches up at
 * CATCHUP_FACTOR x its rate in bursts of at most CATCHUP_BURST frames, never
 * in one burst of everything due: a veth ring holds 256 frames, and one
 * catch-up burst of thousands overflowed it (measured in the lab: 0.1-1 % loss
 * at 64 kpps through the Linux router, all of it dut0 rx_dropped, all of it
 * the generator's doing). After the trial's end it may go on for
 * catchup_grace(); what is still unsent then counts as lost and, beyond
 * 0.5 %, flags tx_limited. */
#define CATCHUP_FACTOR 2.0
#define CATCHUP_BURST FG_CATCHUP_BURST

static uint64_t pace_catchup(struct fg_stream_rt *s, uint64_t want, uint64_t now)
{
	uint64_t cap = s->min_burst > CATCHUP_BURST ? s->min_burst : CATCHUP_BURST;

	if (want > cap)
		want = cap;
	s->next_ok_ns = now + (uint64_t)((double)want * 1e9 / (CATCHUP_FACTOR * s->rate));
	return want;
}

static uint64_t catchup_grace(double dur_s)
{
	double g = dur_s * 0.05;

	return (uint64_t)((g < 0.1 ? 0.1 : g) * 1e9);
}

/* Nothing is due: sleep if the next burst is far enough away, else spin.
 * Sleeping lets other threads of this CPU run (in the lab a port's NAPI
 * kthread shares it; a pure spin starved it and its 256-frame ring
 * overflowed; sched_yield() was worse: the thread lost the CPU to other
 * processes for whole time slices). A sleeper that wakes up preempts
 * spinning work, so waking ~SLEEP_MARGIN early keeps pacing exact. */
#define SLEEP_MIN_NS 80000
#define SLEEP_MARGIN_NS 50000

static void idle_until(struct txthread *t, uint64_t tb, uint64_t t_end, uint64_t now)
{
	uint64_t next = t_end;
	int i;

	if (t->nrx) { /* a receiver too: it polls, never sleeps */
		if (!rx_inline(t))
			fg_cpu_relax();
		return;
	}
	if (t->spin) { /* no kernel work shares this CPU: a sleeper woke late */
		fg_cpu_relax();
		return;
	}
	for (i = 0; i < t->n; i++) {
		struct fg_stream_rt *s = t->s[i];
		uint64_t at;

		if (s->done || s->rate <= 0)
			return; /* as fast as possible: never sleep */
		at = tb + (uint64_t)((double)(s->sent + s->min_burst) * 1e9 / s->rate);
		if (at < s->next_ok_ns)
			at = s->next_ok_ns;
		if (at < next)
			next = at;
	}
	if (next > now + SLEEP_MIN_NS) {
		struct timespec ts;
		uint64_t wake = next - SLEEP_MARGIN_NS;

		ts.tv_sec = (time_t)(wake / 1000000000ull);
		ts.tv_nsec = (long)(wake % 1000000000ull);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	} else {
		fg_cpu_relax();
	}
}

static void run_phase(struct txthread *t, uint32_t phase, uint64_t tb, double dur_s)
{
	uint64_t t_end = tb + (uint64_t)(dur_s * 1e9 + 0.5);
	uint64_t t_stop = t_end + catchup_grace(dur_s); /* paced streams: nothing after */
	int measured = phase == FG_PHASE_MEASURE, i;

	for (i = 0; i < t->n; i++) {
		struct fg_stream_rt *s = t->s[i];

		s->txo->set_phase(s, phase);
		s->sent = 0;
		s->done = 0;
		s->next_ok_ns = 0;
		if (s->rate > 0)
			s->total = (uint64_t)floor(s->rate * dur_s + 0.5);
		else
			s->total = measured ? s->capacity : UINT64_MAX;
		if (!s->total)
			s->done = 1;
		s->kpaced = 0;
	}
	kpace_choose(t);
	for (i = 0; i < t->kn; i++) {
		struct fg_stream_rt *s = t->kg[i];
		int rc = s->txo->kpace_start(s, tb, s->total, t_stop, kpace_group(s));

		s->kpaced = 1;
		if (rc) {
			s->tx_error = rc;
			s->done = 1;
		}
	}
	spin_until(tb);
	while (!fg_stop) {
		uint64_t now = fg_now_ns();
		int active = 0, progressed = 0, k, kleft = 0;

		for (k = 0; k < t->kn; k++)
			kleft += !t->kg[k]->done;
		if (kleft) {
			active = 1;
			if (now >= t_stop) {
				for (k = 0; k < t->kn; k++)
					t->kg[k]->done = 1; /* out of time, as below */
			} else {
				kpace_some(t, now, t_end, measured);
				progressed = 1;
			}
		}

		for (i = 0; i < t->n; i++) {
			struct fg_stream_rt *s = t->s[i];
			uint64_t due, want;

			if (s->done || s->kpaced)
				continue;
			active = 1;
			if (now >= t_end && (s->rate <= 0 || now >= t_stop)) {
				/* out of time: what is unsent stays unsent (and is reported) */
				s->done = 1;
				continue;
			}
			if (s->rate > 0 && now < s->next_ok_ns)
				continue;
			if (s->rate > 0) {
				due = (uint64_t)((double)(now - tb) * s->rate * 1e-9);
				if (due > s->total)
					due = s->total;
			} else {
				due = s->sent + s->txo->max_burst;
			}
			want = due > s->sent ? due - s->sent : 0;
			if (want >= s->min_burst || (want && due == s->total)) {
				if (s->rate > 0)
					want = pace_catchup(s, want, now);
				send_some(s, want, measured);
				progressed = 1;
			}
		}
		if (!active)
			break;
		if (!progressed)
			idle_until(t, tb, t_end, now);
		else if (t->nrx)
			rx_inline(t);
	}
}

static void *tx_main(void *arg)
{
	struct txthread *t = arg;
	struct fg_run *r = t->r;

	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* precise wake-ups */
	if (r->sp->warmup_s > 0)
		run_phase(t, FG_PHASE_WARMUP, r->t0_ns, r->sp->warmup_s);
	run_phase(t, FG_PHASE_MEASURE, r->t1_ns, r->sp->duration_s);
	/* a receiver goes on while other threads still send */
	atomic_fetch_sub(t->tx_left, 1);
	while (t->nrx && atomic_load(t->tx_left) > 0 && !fg_stop)
		if (!rx_inline(t))
			fg_cpu_relax();
	return NULL;
}

/* ---- result ----------------------------------------------------------- */

static json_t *latency_json(const struct fg_rx_final *rx)
{
	const struct fg_hdr *h = rx->lat;
	char *enc;
	json_t *o;

	if (!h || !h->total)
		return json_null();
	enc = fg_hdr_encode(h);
	o = json_pack("{s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:f, s:s?}",
		      "samples", (json_int_t)h->total,
		      "min_ns", (json_int_t)h->min,
		      "mean_ns", h->sum / (double)h->total,
		      "p50_ns", (json_int_t)fg_hdr_value_at_percentile(h, 50),
		      "p90_ns", (json_int_t)fg_hdr_value_at_percentile(h, 90),
		      "p99_ns", (json_int_t)fg_hdr_value_at_percentile(h, 99),
		      "p999_ns", (json_int_t)fg_hdr_value_at_percentile(h, 99.9),
		      "max_ns", (json_int_t)h->max,
		      "jitter_ns", (double)rx->jitter16 / 16.0,
		      "hdr", enc);
	free(enc);
	return o;
}

static double span_s(struct fg_run *r, struct fg_stream_rt *s)
{
	double d = r->sp->duration_s;
	double act = s->t_last_ns > r->t1_ns ? (double)(s->t_last_ns - r->t1_ns) * 1e-9 : 0;

	return act > d ? act : d;
}

static json_t *stream_json(struct fg_run *r, struct fg_stream_rt *s, struct fg_stream_rt *lat,
			   json_t *warnings)
{
	const struct fg_spec *sp = r->sp;
	uint64_t intended = s->rate > 0 ? s->total : s->tx_meas;
	double achieved = (double)s->tx_meas / span_s(r, s);
	double intended_pps = s->rate > 0 ? s->rate : achieved;
	int limited = s->rate > 0 && ((double)s->tx_meas < 0.995 * (double)intended ||
				      achieved < 0.995 * s->rate);
	uint64_t lost = intended > s->rx.packets ? intended - s->rx.packets : 0;
	json_t *o, *ls = json_null(), *ps;
	char w[256];
	int k;

	if (limited) {
		snprintf(w, sizeof(w),
			 "stream %d: generator limited: sent %llu of %llu frames (%.0f of %.0f pps); "
			 "lower the load or give fwdgen a CPU of its own",
			 s->ss->id, (unsigned long long)s->tx_meas, (unsigned long long)intended,
			 achieved, s->rate);
		json_array_append_new(warnings, json_string(w));
	}
	if (s->rx.out_of_range) {
		snprintf(w, sizeof(w), "stream %d: %llu signed frames with sequence numbers never sent",
			 s->ss->id, (unsigned long long)s->rx.out_of_range);
		json_array_append_new(warnings, json_string(w));
	}
	if (lat) {
		uint64_t li = lat->total;

		ls = json_pack("{s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:s}",
			       "intended_pps", lat->rate,
			       "intended_packets", (json_int_t)li,
			       "tx_packets", (json_int_t)lat->tx_meas,
			       "rx_packets", (json_int_t)lat->rx.packets,
			       "lost", (json_int_t)(li > lat->rx.packets ? li - lat->rx.packets : 0),
			       "reordered", (json_int_t)lat->rx.reordered,
			       "duplicated", (json_int_t)lat->rx.duplicated,
			       "latency", latency_json(&lat->rx),
			       "pacer", lat->kpaced ? "kernel" : "user");
	}
	ps = json_array();
	for (k = 0; k < r->nsamples; k++) {
		uint64_t ptx = k ? r->samples[k - 1].tx[s->idx] : 0;
		uint64_t prx = k ? r->samples[k - 1].rx[s->idx] : 0;

		json_array_append_new(ps, json_pack("{s:i, s:I, s:I}", "t", k + 1,
			"tx", (json_int_t)(r->samples[k].tx[s->idx] - ptx),
			"rx", (json_int_t)(r->samples[k].rx[s->idx] - prx)));
	}
	o = json_pack("{s:i, s:s, s:s?, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:b,"
		      " s:o, s:o, s:o, s:b, s:s, s:s, s:s?, s:o}",
		      "id", s->ss->id,
		      "tx_port", r->ports[s->tx_port].sp->ifname,
		      "rx_port", s->rx_port >= 0 ? r->ports[s->rx_port].sp->ifname : NULL,
		      "intended_pps", intended_pps,
		      "intended_packets", (json_int_t)intended,
		      "tx_packets", (json_int_t)s->tx_meas,
		      "tx_bytes", (json_int_t)fg_pkt_bytes(&s->pc, s->tx_meas),
		      "rx_packets", (json_int_t)s->rx.packets,
		      "rx_bytes", (json_int_t)s->rx.bytes,
		      "lost", (json_int_t)lost,
		      "reordered", (json_int_t)s->rx.reordered,
		      "duplicated", (json_int_t)s->rx.duplicated,
		      "achieved_tx_pps", achieved,
		      "tx_limited", limited,
		      "latency", latency_json(&s->rx),
		      "latency_stream", ls,
		      "per_second", sp->samples ? ps : json_null(),
		      "max_rate", s->rate <= 0,
		      "tx_backend", s->txo->name,
		      "rx_backend", s->rxo->name,
		      "pacer", s->rate <= 0 ? NULL : s->kpaced ? "kernel" : "user",
		      "pace_burst", s->rate <= 0 ? json_null() :
		      json_integer(s->kpaced ? kpace_group(s) : s->min_burst));
	if (!sp->samples)
		json_decref(ps);
	return o;
}

/* ---- send-only streams (rx_port null) ---------------------------------- */

static int none_open(struct fg_run *r, char *err, size_t errlen)
{
	(void)r, (void)err, (void)errlen;
	return 0;
}

static void none_set_phase(struct fg_run *r, uint32_t phase)
{
	(void)r, (void)phase;
}

static uint64_t none_packets(struct fg_run *r, int stream)
{
	(void)r, (void)stream;
	return 0;
}

static int none_collect(struct fg_run *r, int stream, struct fg_rx_final *o)
{
	(void)r, (void)stream;
	memset(o, 0, sizeof(*o));
	return 0;
}

static void none_close(struct fg_run *r)
{
	(void)r;
}

const struct fg_rxops fg_none_rxops = {
	.name = "none",
	.open = none_open,
	.set_phase = none_set_phase,
	.packets = none_packets,
	.collect = none_collect,
	.close = none_close,
};

/* ---- trial ------------------------------------------------------------ */

static void close_all(struct fg_run *r)
{
	int i;

	for (i = 0; i < r->nstreams; i++)
		if (r->streams[i] && r->streams[i]->txo)
			r->streams[i]->txo->close(r->streams[i]);
	fg_xdp_tx_cleanup(r);
	fg_xdp_rxops.close(r);
	fg_afp_rxops.close(r);
	fg_afx_rxops.close(r); /* all afxdp sockets, TX ones too */
	fg_mif_rxops.close(r); /* all memif interfaces */
}

static int open_all(struct fg_run *r, char *err, size_t errlen)
{
	int i, rc;

	for (i = 0; i < r->nstreams; i++) {
		struct fg_stream_rt *s = r->streams[i];
		static const struct fg_txops *const tx[] = {
			[FG_BACKEND_XDP] = &fg_xdp_txops, [FG_BACKEND_AFPACKET] = &fg_afp_txops,
			[FG_BACKEND_AFXDP] = &fg_afx_txops, [FG_BACKEND_MEMIF] = &fg_mif_txops,
		};

		s->txo = tx[r->ports[s->tx_port].backend];
		s->rxo = s->rx_port < 0 ? &fg_none_rxops : fg_rxops_of(r->ports[s->rx_port].backend);
	}
	/* receivers first: an afxdp port's socket is created with its RX ring */
	rc = fg_xdp_rxops.open(r, err, errlen);
	if (!rc)
		rc = fg_afp_rxops.open(r, err, errlen);
	if (!rc)
		rc = fg_afx_rxops.open(r, err, errlen);
	if (!rc) /* every memif port, TX ones too: waits for the peers to connect */
		rc = fg_mif_rxops.open(r, err, errlen);
	for (i = 0; !rc && i < r->nstreams; i++) {
		struct fg_stream_rt *s = r->streams[i];

		s->min_burst = pace_min_burst(s->rate, s->txo,
					      r->ports[s->tx_port].sp->burst_period_ns);
		rc = s->txo->open(r, s, err, errlen);
	}
	if (rc)
		close_all(r);
	return rc;
}

static int resolve_backends(struct fg_run *r, const char *override, int force_afpacket,
			    char *err, size_t errlen)
{
	const struct fg_spec *sp = r->sp;
	uint32_t tmpl = (sp->frame_size ? sp->frame_size : FG_IMIX_MAX_FRAME) - FG_FCS_LEN;
	int i;

	for (i = 0; i < r->nports; i++) {
		struct fg_port_rt *p = &r->ports[i];
		enum fg_backend b = p->sp->backend;

		if (b == FG_BACKEND_MEMIF) { /* no kernel interface: --backend leaves it */
			p->backend = b;
			continue;
		}
		if (override)
			b = !strcmp(override, "xdp") ? FG_BACKEND_XDP
			  : !strcmp(override, "afpacket") ? FG_BACKEND_AFPACKET
			  : !strcmp(override, "afxdp") ? FG_BACKEND_AFXDP : FG_BACKEND_AUTO;
		if ((b == FG_BACKEND_XDP || b == FG_BACKEND_AFXDP) && tmpl > FG_XDP_MAX_FRAME) {
			fg_errf(err, errlen, "spec.ports[%d].backend: %s handles frames up to %d B; "
				"frame size %u needs backend afpacket or auto", i, fg_backend_name(b),
				FG_XDP_MAX_FRAME + FG_FCS_LEN, tmpl + FG_FCS_LEN);
			return -EINVAL;
		}
		if (b == FG_BACKEND_AUTO)
			b = (force_afpacket || tmpl > FG_XDP_MAX_FRAME || p->mtu > FG_XDP_MAX_FRAME)
				? FG_BACKEND_AFPACKET : FG_BACKEND_XDP;
		p->backend = b;
	}
	return 0;
}

static void take_sample(struct fg_run *r, int k)
{
	int i;

	for (i = 0; i < r->nstreams; i++) {
		struct fg_stream_rt *s = r->streams[i];

		r->samples[k].tx[i] = atomic_load_explicit(&s->tx_live, memory_order_relaxed);
		r->samples[k].rx[i] = s->rxo->packets(r, i);
	}
}

static void sleep_until(uint64_t t)
{
	while (!fg_stop) {
		uint64_t now = fg_now_ns();
		struct timespec ts;

		if (now >= t)
			return;
		/* short sleeps so a signal or the end is noticed quickly */
		ts.tv_sec = 0;
		ts.tv_nsec = (long)((t - now) > 20000000 ? 20000000 : (t - now));
		nanosleep(&ts, NULL);
	}
}

/* The drain: frames in flight still arrive; inline ports are polled here. */
static void drain_until(struct fg_run *r, uint64_t t)
{
	int i, any = 0;

	for (i = 0; i < r->nports; i++)
		any |= r->ports[i].rx_inline;
	if (!any) {
		sleep_until(t);
		return;
	}
	while (!fg_stop && fg_now_ns() < t) {
		int n = 0;

		for (i = 0; i < r->nports; i++)
			if (r->ports[i].rx_inline) {
				int got = fg_rxops_of(r->ports[i].backend)->poll(r, i);

				n += got > 0 ? got : 0;
			}
		if (!n)
			fg_cpu_relax();
	}
}

static int run_trial(struct fg_run *r, struct txthread *th, int nth)
{
	const struct fg_spec *sp = r->sp;
	_Atomic int tx_left = nth;
	uint64_t t2;
	int i, k, rc = 0;

	r->t0_ns = fg_now_ns() + 2000000;
	r->t1_ns = r->t0_ns + (uint64_t)(sp->warmup_s * 1e9 + 0.5);
	fg_xdp_rxops.set_phase(r, FG_PHASE_MEASURE);
	fg_afp_rxops.set_phase(r, FG_PHASE_MEASURE);
	fg_afx_rxops.set_phase(r, FG_PHASE_MEASURE);
	fg_mif_rxops.set_phase(r, FG_PHASE_MEASURE);
	for (i = 0; i < nth; i++)
		th[i].tx_left = &tx_left;
	for (i = 0; i < nth; i++) {
		if (pthread_create(&th[i].th, NULL, tx_main, &th[i])) {
			fg_stop = 1;
			rc = -EAGAIN;
			break;
		}
		th[i].started = 1;
	}
	r->nsamples = 0;
	if (!rc && sp->samples) {
		int n = (int)ceil(sp->duration_s - 1e-9);

		r->samples = calloc((size_t)n, sizeof(*r->samples));
		for (k = 0; r->samples && k < n && !fg_stop; k++) {
			double t = (k + 1) < sp->duration_s ? k + 1 : sp->duration_s;

			sleep_until(r->t1_ns + (uint64_t)(t * 1e9));
			take_sample(r, k);
			r->nsamples = k + 1;
		}
	}
	for (i = 0; i < nth; i++)
		if (th[i].started)
			pthread_join(th[i].th, NULL);
	for (i = 0; i < r->nstreams; i++)
		r->streams[i]->tx_meas = r->streams[i]->sent;
	t2 = fg_now_ns();
	drain_until(r, t2 + (uint64_t)(sp->drain_s * 1e9));
	fg_xdp_rxops.set_phase(r, FG_PHASE_NONE);
	fg_afp_rxops.set_phase(r, FG_PHASE_NONE);
	fg_afx_rxops.set_phase(r, FG_PHASE_NONE);
	fg_mif_rxops.set_phase(r, FG_PHASE_NONE);
	for (i = 0; i < r->nstreams; i++) {
		struct fg_stream_rt *s = r->streams[i];

		if (s->rxo->collect(r, i, &s->rx))
			rc = -ENOMEM;
	}
	return rc;
}

int fg_trial_main(int argc, char **argv)
{
	struct trial_opts o = {0};
	struct fg_spec *sp = calloc(1, sizeof(*sp));
	struct fg_run r;
	struct txthread th[FG_MAX_CPUS];
	char err[512] = "", *text = NULL, *out;
	int rc, i, nth, exit_code = FG_EXIT_RUNTIME, fallback = 0;
	size_t len;
	json_t *res = NULL, *warn, *arr, *bk, *mif;

	memset(&r, 0, sizeof(r));
	if (!sp)
		return FG_EXIT_RUNTIME;
	rc = parse_trial_opts(argc, argv, &o);
	if (rc) {
		free(sp);
		return rc;
	}
	if (o.backend && strcmp(o.backend, "auto") && strcmp(o.backend, "xdp") &&
	    strcmp(o.backend, "afpacket") && strcmp(o.backend, "afxdp")) {
		fprintf(stderr, "fwdgen: --backend: \"%s\" is not one of auto, xdp, afxdp, afpacket\n",
			o.backend);
		free(sp);
		return FG_EXIT_BADINPUT;
	}
	text = read_all(o.spec, &len);
	if (!text) {
		fprintf(stderr, "fwdgen: --spec: cannot read %s: %s\n", o.spec, strerror(errno));
		free(sp);
		return FG_EXIT_BADINPUT;
	}
	rc = fg_spec_parse(text, len, sp, err, sizeof(err));
	free(text);
	if (!rc && o.load_pps >= 0)
		sp->load_pps = o.load_pps;
	if (!rc && o.duration_s > 0)
		sp->duration_s = o.duration_s;
	if (!rc && o.warmup_s >= 0)
		sp->warmup_s = o.warmup_s;
	if (rc) {
		fprintf(stderr, "fwdgen: %s\n", err);
		free(sp);
		return FG_EXIT_BADINPUT;
	}
	r.sp = sp;
	r.nports = sp->nports;
	for (i = 0; i < sp->nports; i++) {
		struct fg_port_rt *p = &r.ports[i];

		p->sp = &sp->ports[i];
		if (p->sp->backend == FG_BACKEND_MEMIF) { /* a memif interface: no netdev */
			if (p->sp->has_mac)
				memcpy(p->mac, p->sp->mac, 6);
			else
				fg_memif_default_mac(i, p->mac);
			continue;
		}
		p->ifindex = (int)if_nametoindex(p->sp->ifname);
		if (!p->ifindex) {
			fprintf(stderr, "fwdgen: spec.ports[%d].ifname: no interface \"%s\" in this "
				"network namespace\n", i, p->sp->ifname);
			free(sp);
			return FG_EXIT_BADINPUT;
		}
		if ((rc = port_info(p))) {
			fprintf(stderr, "fwdgen: SIOCGIFHWADDR(%s): %s\n", p->sp->ifname, strerror(-rc));
			free(sp);
			return FG_EXIT_RUNTIME;
		}
	}
	{
		uint16_t nonce;

		if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
			nonce = (uint16_t)(fg_now_ns() ^ (uint64_t)getpid());
		r.magic = FG_MAGIC_HI << 16 | nonce;
	}
	for (i = 0; i < sp->nstreams; i++) {
		r.ports[sp->streams[i].tx_port].tx_used = 1;
		if (sp->streams[i].rx_port >= 0)
			r.ports[sp->streams[i].rx_port].rx_used = 1;
	}
	r.nstreams = sp->nstreams * (sp->latency_enabled ? 2 : 1);
	for (i = 0; i < r.nstreams; i++) {
		int load = i % sp->nstreams;

		r.streams[i] = make_stream(&r, i, load, i >= sp->nstreams);
		if (!r.streams[i]) {
			fprintf(stderr, "fwdgen: out of memory\n");
			goto out;
		}
	}
	fg_install_signals();
	warn = json_array();
	for (;;) {
		rc = resolve_backends(&r, o.backend, fallback, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "fwdgen: %s\n", err);
			exit_code = FG_EXIT_BADINPUT;
			json_decref(warn);
			goto out;
		}
		rc = open_all(&r, err, sizeof(err));
		if (!rc)
			break;
		/* auto: fall back to afpacket where xdp failed */
		if (!fallback && (!o.backend || !strcmp(o.backend, "auto"))) {
			int any_auto = 0;

			for (i = 0; i < r.nports; i++)
				if (r.ports[i].sp->backend == FG_BACKEND_AUTO &&
				    r.ports[i].backend == FG_BACKEND_XDP)
					any_auto = 1;
			if (any_auto) {
				char w[700];

				snprintf(w, sizeof(w), "backend auto: xdp failed (%s); using afpacket", err);
				json_array_append_new(warn, json_string(w));
				fallback = 1;
				continue;
			}
		}
		fprintf(stderr, "fwdgen: %s\n", err);
		json_decref(warn);
		goto out;
	}

	/* TX threads: one per tx CPU, streams dealt round-robin */
	nth = sp->ntx_cpus > 0 ? sp->ntx_cpus : 1;
	if (nth > r.nstreams)
		nth = r.nstreams;
	memset(th, 0, sizeof(th));
	for (i = 0; i < nth; i++) {
		th[i].r = &r;
		th[i].cpu = sp->ntx_cpus > 0 ? sp->tx_cpus[i] : -1;
	}
	for (i = 0; i < r.nstreams; i++) {
		struct txthread *t = &th[i % nth];

		t->s[t->n++] = r.streams[i];
		t->spin |= r.streams[i]->txo->spin;
	}
	for (i = 0; i < nth; i++) {
		int j;

		th[i].cpu_alone = 1;
		for (j = 0; j < nth; j++)
			if (j != i && th[j].cpu == th[i].cpu)
				th[i].cpu_alone = 0;
	}
	/* a port received inline: by the TX thread on its CPU, else the first */
	for (i = 0; i < r.nports; i++) {
		int j, t = 0;

		if (!r.ports[i].rx_inline)
			continue;
		for (j = 0; j < nth; j++)
			if (th[j].cpu == r.ports[i].rx_cpu) {
				t = j;
				break;
			}
		th[t].rxp[th[t].nrx++] = i;
	}
	rc = run_trial(&r, th, nth);
	if (fg_stop) {
		fprintf(stderr, "fwdgen: interrupted by a signal; XDP programs detached\n");
		json_decref(warn);
		close_all(&r);
		goto out;
	}
	for (i = 0; i < r.nstreams; i++) {
		if (r.streams[i]->tx_error) {
			fprintf(stderr, "fwdgen: %s TX on %s failed: %s\n", r.streams[i]->txo->name,
				r.ports[r.streams[i]->tx_port].sp->ifname,
				strerror(-r.streams[i]->tx_error));
			rc = r.streams[i]->tx_error;
		}
	}
	if (rc) {
		json_decref(warn);
		close_all(&r);
		goto out;
	}
	if (fg_xdp_tx_warning(&r))
		json_array_append_new(warn, json_string(fg_xdp_tx_warning(&r)));
	for (i = 0; i < r.nwarn; i++)
		json_array_append_new(warn, json_string(r.warn[i]));
	arr = json_array();
	for (i = 0; i < sp->nstreams; i++)
		json_array_append_new(arr, stream_json(&r, r.streams[i],
						       sp->latency_enabled ? r.streams[sp->nstreams + i] : NULL,
						       warn));
	bk = json_object();
	for (i = 0; i < r.nports; i++)
		if (r.ports[i].tx_used || r.ports[i].rx_used)
			json_object_set_new(bk, r.ports[i].sp->ifname,
					    json_string(fg_backend_name(r.ports[i].backend)));
	res = json_pack("{s:s, s:b, s:o, s:f, s:f, s:o, s:o}",
			"fwdgen_version", FWDGEN_VERSION, "ok", 1, "backends", bk,
			"duration_s", sp->duration_s, "warmup_s", sp->warmup_s,
			"streams", arr, "warnings", warn);
	mif = json_object();
	for (i = 0; i < r.nports; i++) {
		uint32_t rxr, txr;

		if (fg_memif_rings(&r, i, &rxr, &txr))
			json_object_set_new(mif, r.ports[i].sp->ifname,
					    json_pack("{s:I, s:I}", "rx_ring", (json_int_t)rxr,
						      "tx_ring", (json_int_t)txr));
	}
	if (json_object_size(mif))
		json_object_set_new(res, "memif", mif);
	else
		json_decref(mif);
	close_all(&r);
	out = json_dumps(res, JSON_REAL_PRECISION(10) | (o.pretty ? JSON_INDENT(2) : JSON_COMPACT));
	if (out) {
		puts(out);
		fflush(stdout);
		free(out);
		exit_code = FG_EXIT_OK;
	}
	json_decref(res);
out:
	for (i = 0; i < r.nstreams; i++) {
		if (r.streams[i]) {
			free(r.streams[i]->rx.lat);
			free(r.streams[i]);
		}
	}
	free(r.samples);
	free(sp);
	return exit_code;
}
