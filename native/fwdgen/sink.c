/* SPDX-License-Identifier: MIT */
/*
 * `fwdgen sink --memif SOCKET`: a drop sink on a memif interface, for
 * benchmarks (bench/memif_sink.py). One thread, pinned, busy-polls the
 * ring: counts every frame and its bytes, and the signed frames of
 * fwdgen's measured phase per stream (so a trial's tx_packets can be
 * compared with what arrived), and gives the buffers back. It is the slave
 * by default: it brings the shared memory and connects to fwdgen's master
 * socket, retrying until the master is there. Control events (the peer
 * going away) are handled in the same thread between bursts: no locks.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwdgen.h"

void fg_sink_usage(FILE *f);
void fg_sink_usage(FILE *f)
{
	fprintf(f,
		"usage: fwdgen sink --memif SOCKET [options]\n\n"
		"A drop sink on a memif interface: counts what it receives (every frame, and\n"
		"the signed frames of fwdgen's measured phase per stream) and drops it,\n"
		"busy-polling on one CPU. Prints {\"event\": \"up\", ...} when the peer is\n"
		"connected, a snapshot {\"frames\", \"measured\", \"t_ns\"} on SIGUSR1, and the\n"
		"counts as one JSON object when it ends: the peer disconnects, --duration\n"
		"passes, or SIGINT/SIGTERM. Exit codes: 0 ok, 2 bad input, 3 runtime failure\n"
		"(e.g. no peer within --connect-timeout).\n\n"
		"options:\n"
		"  --memif PATH            socket path, or @name (abstract; required)\n"
		"  --id N                  interface id on the socket (0)\n"
		"  --role slave|master     slave (default): connects to a master (fwdgen trial)\n"
		"  --ring-size N           slots per ring, a power of two 2..16384 (1024; slave)\n"
		"  --buffer-size N         bytes per buffer, 128..65535 (2048; slave)\n"
		"  --cpu N                 pin the sink to this CPU\n"
		"  --duration S            stop S seconds after the first connection (0: no limit)\n"
		"  --connect-timeout S     the peer must connect within S seconds (10)\n"
		"  --stay                  after a disconnect, wait for the next peer\n"
		"  --count-only            count descriptors only, never read a frame\n");
}

#ifdef FG_HAVE_MEMIF

#include "fg_memif.h"

#define SINK_BURST 256u
#define SINK_STREAMS 256
#define SINK_PREFETCH 16
/* passes between looks at control events, the clock and the signals: an
 * epoll_wait per empty pass was 40 % of the sink's time (perf) */
#define SINK_CTL_EVERY 1024

struct sink_opts {
	const char *path;
	long long id, ring, bufsize, cpu;
	double duration, timeout;
	int master, stay, count_only;
};

struct sink_counts {
	uint64_t frames, bytes, signed_frames, measured, chained;
	uint64_t busy_ns;             /* in passes that brought frames: the work */
	uint64_t stream[SINK_STREAMS];
	uint64_t first_ns, last_ns; /* first and last measured frame */
};

static volatile sig_atomic_t g_stop, g_snap;

static void on_sig(int sig)
{
	if (sig == SIGUSR1)
		g_snap = 1;
	else
		g_stop = 1;
}

static int parse_num(const char *name, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || end == s || v < lo || v > hi) {
		fprintf(stderr, "fwdgen: sink: --%s: \"%s\" is not a number in %g..%g\n", name, s,
			lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct sink_opts *o)
{
	static const struct option lo[] = {
		{"memif", required_argument, 0, 'm'}, {"id", required_argument, 0, 'i'},
		{"role", required_argument, 0, 'r'}, {"ring-size", required_argument, 0, 'R'},
		{"buffer-size", required_argument, 0, 'B'}, {"cpu", required_argument, 0, 'c'},
		{"duration", required_argument, 0, 'd'},
		{"connect-timeout", required_argument, 0, 't'}, {"stay", no_argument, 0, 's'},
		{"count-only", no_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
	};
	double v;
	int c;

	o->ring = 1024;
	o->bufsize = 2048;
	o->cpu = -1;
	o->timeout = 10;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			o->path = optarg;
			break;
		case 'i':
			if (parse_num("id", optarg, 0, 4294967295.0, &v))
				return FG_EXIT_BADINPUT;
			o->id = (long long)v;
			break;
		case 'r':
			if (strcmp(optarg, "master") && strcmp(optarg, "slave")) {
				fprintf(stderr, "fwdgen: sink: --role: \"%s\" is not master or slave\n",
					optarg);
				return FG_EXIT_BADINPUT;
			}
			o->master = !strcmp(optarg, "master");
			break;
		case 'R':
			if (parse_num("ring-size", optarg, 2, 16384, &v))
				return FG_EXIT_BADINPUT;
			o->ring = (long long)v;
			if (fg_mif_log2_ring((uint64_t)o->ring) < 0 || (double)o->ring != v) {
				fprintf(stderr, "fwdgen: sink: --ring-size: %s is not a power of two in "
					"2..16384\n", optarg);
				return FG_EXIT_BADINPUT;
			}
			break;
		case 'B':
			if (parse_num("buffer-size", optarg, FG_MIF_MIN_BUFFER, 65535, &v))
				return FG_EXIT_BADINPUT;
			o->bufsize = (long long)v;
			break;
		case 'c':
			if (parse_num("cpu", optarg, 0, 4095, &v))
				return FG_EXIT_BADINPUT;
			o->cpu = (long long)v;
			break;
		case 'd':
			if (parse_num("duration", optarg, 0, 86400, &o->duration))
				return FG_EXIT_BADINPUT;
			break;
		case 't':
			if (parse_num("connect-timeout", optarg, 0.01, 3600, &o->timeout))
				return FG_EXIT_BADINPUT;
			break;
		case 's':
			o->stay = 1;
			break;
		case 'n':
			o->count_only = 1;
			break;
		case 'h':
			fg_sink_usage(stdout);
			exit(FG_EXIT_OK);
		default:
			return FG_EXIT_BADINPUT;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fwdgen: sink: unexpected argument \"%s\"\n", argv[optind]);
		return FG_EXIT_BADINPUT;
	}
	if (!o->path) {
		fprintf(stderr, "fwdgen: sink: --memif SOCKET is required (see fwdgen sink --help)\n");
		return FG_EXIT_BADINPUT;
	}
	if (strlen(o->path) >= 108) {
		fprintf(stderr, "fwdgen: sink: --memif: \"%s\" is longer than 107 characters\n",
			o->path);
		return FG_EXIT_BADINPUT;
	}
	return 0;
}

/* Count a burst; read the signatures unless count_only. The frames were
 * written on another CPU: their lines are fetched ahead (a miss each). */
static void count(struct sink_counts *k, const memif_buffer_t *b, uint16_t n, int count_only)
{
	uint64_t now = 0;
	uint16_t j;

	if (!count_only)
		for (j = 0; j < n && j < SINK_PREFETCH; j++)
			__builtin_prefetch(b[j].data);
	for (j = 0; j < n;) {
		uint32_t len = b[j].len;
		uint16_t e = j;
		struct fg_rxinfo ri;

		while (e + 1 < n && (b[e].flags & MEMIF_BUFFER_FLAG_NEXT))
			len += b[++e].len;
		k->frames++;
		k->bytes += len;
		k->chained += e > j;
		if (!count_only) {
			if (j + SINK_PREFETCH < n)
				__builtin_prefetch(b[j + SINK_PREFETCH].data);
			if (fg_pkt_parse(b[j].data, len, &ri)) {
				k->signed_frames++;
				if (ri.phase == FG_PHASE_MEASURE) {
					if (!now)
						now = fg_now_ns(); /* once a burst */
					k->measured++;
					k->stream[ri.stream & (SINK_STREAMS - 1)]++;
					if (!k->first_ns)
						k->first_ns = now;
					k->last_ns = now;
				}
			}
		}
		j = (uint16_t)(e + 1);
	}
}

/* This thread's CPU time and its time runnable but waiting for a CPU
 * (/proc/self/schedstat: the other work of a shared host) [ns]. */
static void cpu_times(uint64_t *run_ns, uint64_t *wait_ns)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	unsigned long long a = 0, b = 0;

	if (f) {
		if (fscanf(f, "%llu %llu", &a, &b) != 2)
			a = b = 0;
		fclose(f);
	}
	*run_ns = a;
	*wait_ns = b;
}

static void print_end(const struct sink_opts *o, const struct fg_mif_if *mi,
		      const struct sink_counts *k, const char *ended, double up_s,
		      double cpu_s, double wait_s)
{
	json_t *st = json_array(), *res;
	char *out;
	int i;

	for (i = 0; i < SINK_STREAMS; i++)
		if (k->stream[i])
			json_array_append_new(st, json_pack("{s:i, s:I}", "stream", i, "measured",
							    (json_int_t)k->stream[i]));
	res = json_pack("{s:s, s:b, s:{s:s, s:I, s:s, s:I, s:I, s:I, s:I}, s:I, s:I, s:I, s:I,"
			" s:I, s:o, s:f, s:f, s:f, s:f, s:f, s:s, s:b}",
			"fwdgen_version", FWDGEN_VERSION, "ok", 1,
			"memif", "socket", o->path, "id", (json_int_t)o->id,
			"role", o->master ? "master" : "slave", "ring_size", (json_int_t)o->ring,
			"buffer_size", (json_int_t)o->bufsize, "connects", (json_int_t)mi->ups,
			"disconnects", (json_int_t)mi->downs,
			"frames", (json_int_t)k->frames, "bytes", (json_int_t)k->bytes,
			"signed_frames", (json_int_t)k->signed_frames,
			"measured_frames", (json_int_t)k->measured,
			"chained_frames", (json_int_t)k->chained,
			"streams", st,
			"measured_span_s", k->last_ns > k->first_ns ?
				(double)(k->last_ns - k->first_ns) * 1e-9 : 0.0,
			"connected_s", up_s, "cpu_s", cpu_s, "cpu_wait_s", wait_s,
			"busy_s", (double)k->busy_ns * 1e-9,
			"ended", ended, "count_only", o->count_only);
	out = json_dumps(res, JSON_COMPACT);
	if (out)
		puts(out);
	fflush(stdout);
	free(out);
	json_decref(res);
}

static void sink_on_up(struct fg_mif_if *i)
{
	memif_set_rx_mode(i->conn, MEMIF_RX_MODE_POLLING, 0);
	if (!i->master) /* a slave gives the master its empty buffers */
		memif_refill_queue(i->conn, 0, 1u << i->log2_ring, 0);
	printf("{\"event\": \"up\", \"connects\": %u}\n", i->ups);
	fflush(stdout);
}

int fg_sink_main(int argc, char **argv)
{
	struct sink_opts o;
	struct fg_mif_ctl ctl;
	struct fg_mif_if mi;
	struct sink_counts k;
	struct sigaction sa;
	memif_buffer_t b[SINK_BURST];
	char err[512];
	const char *ended = "signal";
	uint64_t t_up = 0, t_end = 0, iter = 0, up_ns = 0, run0, wait0, run1, wait1;
	uint16_t have = 0; /* segments of a chain the last burst cut */
	int rc;

	memset(&o, 0, sizeof(o));
	memset(&k, 0, sizeof(k));
	memset(&mi, 0, sizeof(mi));
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "fwdgen: sink: --cpu %lld: sched_setaffinity: %s\n", o.cpu,
				strerror(errno));
			return FG_EXIT_BADINPUT;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (fg_mif_ctl_init(&ctl, "fwdgen-sink", 10, err, sizeof(err))) {
		fprintf(stderr, "fwdgen: sink: %s\n", err);
		return FG_EXIT_RUNTIME;
	}
	snprintf(mi.label, sizeof(mi.label), "sink");
	snprintf(mi.path, sizeof(mi.path), "%s", o.path);
	mi.id = (uint32_t)o.id;
	mi.master = o.master;
	mi.log2_ring = (uint8_t)fg_mif_log2_ring((uint64_t)o.ring);
	mi.buffer_size = (uint16_t)o.bufsize;
	mi.on_up = sink_on_up;
	if (fg_mif_add(&ctl, &mi, err, sizeof(err)) ||
	    fg_mif_wait_up(&ctl, o.timeout, &g_stop, err, sizeof(err))) {
		fprintf(stderr, "fwdgen: sink: %s\n", err);
		fg_mif_ctl_fini(&ctl);
		return FG_EXIT_RUNTIME;
	}
	t_up = fg_now_ns();
	cpu_times(&run0, &wait0);
	if (o.duration > 0)
		t_end = t_up + (uint64_t)(o.duration * 1e9);
	while (!g_stop) {
		uint16_t got = 0, n, whole;

		if (mi.up && fg_mif_rx_pending(mi.conn)) {
			uint64_t t0 = fg_now_ns();

			memif_rx_burst(mi.conn, 0, b + have, (uint16_t)(SINK_BURST - have), &got);
			if (got) {
				n = (uint16_t)(have + got);
				whole = fg_mif_whole(b, n);
				if (!whole && n == SINK_BURST)
					whole = n; /* a chain longer than a burst */
				count(&k, b, whole, o.count_only);
				if (whole)
					memif_refill_queue(mi.conn, 0, whole, 0);
				have = (uint16_t)(n - whole);
				memmove(b, b + whole, have * sizeof(b[0]));
				k.busy_ns += fg_now_ns() - t0;
			}
		} else if (!mi.up) {
			have = 0;
		}
		if ((++iter % SINK_CTL_EVERY) && mi.up) {
			if (!got)
				fg_cpu_relax();
			continue;
		}
		/* between bursts: control events, the clock, the signals */
		if (mi.up) {
			fg_mif_poll(&ctl, 0);
		} else {
			if (!o.stay) {
				ended = "peer";
				break;
			}
			fg_mif_poll(&ctl, 10);
		}
		if (t_end || g_snap) {
			uint64_t now = fg_now_ns();

			if (t_end && now >= t_end) {
				ended = "duration";
				break;
			}
			if (g_snap) {
				g_snap = 0;
				printf("{\"frames\": %llu, \"measured\": %llu, \"t_ns\": %llu}\n",
				       (unsigned long long)k.frames, (unsigned long long)k.measured,
				       (unsigned long long)now);
				fflush(stdout);
			}
		}
	}
	up_ns = fg_now_ns() - t_up;
	cpu_times(&run1, &wait1);
	print_end(&o, &mi, &k, ended, (double)up_ns * 1e-9, (double)(run1 - run0) * 1e-9,
		  (double)(wait1 - wait0) * 1e-9);
	fg_mif_ctl_fini(&ctl);
	return FG_EXIT_OK;
}

#else

int fg_sink_main(int argc, char **argv)
{
	char why[256];

	(void)argc, (void)argv;
	fg_memif_available(why, sizeof(why));
	fprintf(stderr, "fwdgen: sink: memif is not available in this fwdgen: %s\n", why);
	return FG_EXIT_RUNTIME;
}

#endif
