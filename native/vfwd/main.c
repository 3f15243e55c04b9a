/* SPDX-License-Identifier: MIT */
/*
 * vfwd main: options, config, ports, worker threads, control socket.
 *
 *   vfwd -c FILE [-s SOCKET] [-d SECONDS] [-o STATS.json] [--check]
 *
 * Prints one JSON line {"event": "ready", ...} on stdout when forwarding,
 * the statistics as JSON on SIGUSR1 and at exit (stdout, and -o FILE),
 * and answers "stats", "trace", "ping", "quit" on the UNIX socket -s.
 * Exit codes: 0 ok, 2 bad input (config/options), 3 runtime failure.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "vf_port.h"
#include "vf_lpm.h"

void vf_ethernet_set_mac(vf_worker_t *w, uint32_t port, const uint8_t mac[6]);
int vf_pg_done(vf_worker_t *w);

struct opts {
	const char *config, *sock, *stats_out;
	double duration;        /* [s], 0: until stopped */
	int check, quiet;
};

/* options: a table bound to fields, with help */
static const struct opt_def {
	const char *name;
	int has_arg, key;
	const char *help;
} OPTS[] = {
	{ "config", 1, 'c', "config file (required; '-' reads stdin)" },
	{ "socket", 1, 's', "UNIX socket answering stats|trace|ping|quit" },
	{ "duration", 1, 'd', "stop after this many seconds [s]" },
	{ "stats-out", 1, 'o', "also write the final statistics JSON here" },
	{ "check", 0, 'C', "parse the config, print a summary, exit" },
	{ "quiet", 0, 'q', "no statistics on stdout at exit" },
	{ "version", 0, 'V', "print the version" },
	{ "help", 0, 'h', "this help" },
};
#define N_OPTS (sizeof(OPTS) / sizeof(OPTS[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: vfwd -c CONFIG [options]\n");
	for (size_t i = 0; i < N_OPTS; i++)
		fprintf(f, "  -%c, --%-10s %s %s\n", OPTS[i].key, OPTS[i].name,
			OPTS[i].has_arg ? "ARG" : "   ", OPTS[i].help);
}

static volatile sig_atomic_t g_stop, g_dump;
static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		g_dump = 1;
	else
		g_stop = 1;
}

static vf_worker_t *g_workers[VF_MAX_WORKERS];
static uint32_t g_n_workers;
static struct vf_config g_cfg;

static void *worker_main(void *arg)
{
	vf_worker_t *w = arg;
	const struct vf_config *c = w->cfg;
	uint32_t idle = 0;
	struct pollfd pfd[VF_MAX_PORTS];
	/* At SCHED_FIFO a thread runs until it blocks or yields: yield after
	 * every pass so that kernel threads of our priority (the NAPI threads
	 * filling our RX rings) run between passes, and drain their 256-frame
	 * veth rings while we work. memif ports have no such thread: there a
	 * yield is only a system call per pass. */
	int yield = 0;
	for (uint32_t k = 0; k < c->n_ports; k++)
		yield |= c->sched_priority > 0 && c->port[k].drv != VF_PORT_MEMIF;
	const uint64_t ms = (uint64_t)(vf_tsc_hz() / 1000);
	uint64_t last = 0;      /* start of the previous pass; 0 after a sleep */
	while (!w->stop) {
		uint32_t n = vf_worker_run_once(w);
		/* a pass (at most a vector per node) takes microseconds: one that
		 * began over a millisecond after the previous one lost its CPU in
		 * between (the pass's own clock reading, no second one) */
		uint64_t t = w->pass_start;
		if (last && t - last > ms) {
			w->stalls_1ms++;
			w->stalls_4ms += t - last > 4 * ms;
		}
		last = t;
		if (yield)
			sched_yield();
		if (n) {
			idle = 0;
			continue;
		}
		uint32_t nfd = 0;
		for (uint32_t k = 0; k < w->n_ports; k++) {
			vf_port_t *p = w->ports[k];
			if (p && p->poll)
				p->poll(p, w);
			if (p && p->fd >= 0 && p->rx)
				pfd[nfd++] = (struct pollfd){ .fd = p->fd, .events = POLLIN };
		}
		if (c->rx_mode == VF_RX_POLL ||
		    (c->rx_mode == VF_RX_ADAPTIVE && ++idle < VF_ADAPTIVE_SPINS))
			continue;
		/* sleep until a packet comes: on a CPU shared with the kernel
		 * thread that fills our RX rings, spinning only delays it */
		if (nfd)
			poll(pfd, nfd, 10);
		else
			usleep(1000);
		last = 0;
	}
	return NULL;
}

static void stats(FILE *f)
{
	vf_stats_json(f, g_workers, g_n_workers, vf_tsc_hz(), &g_cfg);
	fflush(f);
}

static int sock_listen(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "vfwd: socket path '%s' is too long\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 8) < 0) {
		fprintf(stderr, "vfwd: control socket %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	chmod(path, 0600);
	return fd;
}

static void sock_serve(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct timeval tv = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char cmd[64] = { 0 };
	ssize_t n = recv(fd, cmd, sizeof(cmd) - 1, 0);
	if (n > 0) {
		cmd[strcspn(cmd, "\r\n ")] = 0;
		FILE *f = fdopen(fd, "w");
		if (!f) {
			close(fd);
			return;
		}
		if (!strcmp(cmd, "stats"))
			stats(f);
		else if (!strcmp(cmd, "trace"))
			vf_trace_dump(f, g_workers, g_n_workers);
		else if (!strcmp(cmd, "ping"))
			fprintf(f, "{\"pong\": true}\n");
		else if (!strcmp(cmd, "quit")) {
			fprintf(f, "{\"stopping\": true}\n");
			g_stop = 1;
		} else
			fprintf(f, "{\"error\": \"unknown command '%s' (stats, trace, ping, quit)\"}\n",
				cmd);
		fclose(f);
		return;
	}
	close(fd);
}

static void fmt_mac(char *s, const uint8_t *m)
{
	sprintf(s, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct option lo[N_OPTS + 1];
	char short_opts[2 * N_OPTS + 1], *sp = short_opts;
	for (size_t i = 0; i < N_OPTS; i++) {
		lo[i] = (struct option){ OPTS[i].name, OPTS[i].has_arg, NULL, OPTS[i].key };
		*sp++ = (char)OPTS[i].key;
		if (OPTS[i].has_arg)
			*sp++ = ':';
	}
	*sp = 0;
	memset(&lo[N_OPTS], 0, sizeof(lo[0]));
	int ch;
	while ((ch = getopt_long(argc, argv, short_opts, lo, NULL)) != -1) {
		char *end;
		switch (ch) {
		case 'c': o.config = optarg; break;
		case 's': o.sock = optarg; break;
		case 'o': o.stats_out = optarg; break;
		case 'd':
			o.duration = strtod(optarg, &end);
			if (*end || o.duration < 0) {
				fprintf(stderr, "vfwd: --duration: '%s' is not a number of seconds\n",
					optarg);
				return 2;
			}
			break;
		case 'C': o.check = 1; break;
		case 'q': o.quiet = 1; break;
		case 'V': printf("vfwd %s\n", VFWD_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.config) {
		fprintf(stderr, "vfwd: --config is required\n");
		usage(stderr);
		return 2;
	}
	if (vf_graph_init())
		return 3;
	char err[512];
	vf_config_defaults(&g_cfg);
	if (vf_config_load(&g_cfg, o.config, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	vf_fib = g_cfg.fib;
	vf_cfg = &g_cfg;
	if (o.check) {
		printf("{\"ok\": true, \"ports\": %u, \"workers\": %u, \"routes4\": %u, "
		       "\"routes6\": %u, \"adjacencies\": %u, \"lpm\": \"%s\", "
		       "\"lpm4_bytes\": %zu}\n", g_cfg.n_ports, g_cfg.workers, vf_fib->n_routes4,
		       vf_fib->n_routes6, vf_fib->n_adj, vf_fib->ops4->name,
		       vf_fib->ops4->memory(vf_fib->lpm4));
		vf_config_free(&g_cfg);
		return 0;
	}
	/* device ports: MACs from the interfaces unless the config says */
	int has_dev = 0;
	for (uint32_t i = 0; i < g_cfg.n_ports; i++) {
		struct vf_port_cfg *pc = &g_cfg.port[i];
		if (pc->drv == VF_PORT_PG)
			continue;
		has_dev = 1;
		static const uint8_t zero[6];
		if (!memcmp(pc->mac, zero, 6) && pc->drv == VF_PORT_MEMIF) {
			vf_memif_default_mac(i, pc->mac);   /* no interface to ask */
		} else if (!memcmp(pc->mac, zero, 6)) {
			int rc = vf_if_mac(pc->ifname, pc->mac);
			if (rc) {
				fprintf(stderr, "vfwd: port %u: SIOCGIFHWADDR(%s): %s\n", i,
					pc->ifname, strerror(-rc));
				return 3;
			}
		}
	}
	for (uint32_t a = 2; a < vf_fib->n_adj; a++)
		memcpy(vf_fib->adj[a].rewrite + 6, g_cfg.port[vf_fib->adj[a].port].mac, 6);

	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);   /* workers never take signals */
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	uint32_t n_bufs = has_dev ? 4096 + g_cfg.n_ports * 5 * g_cfg.ring_size : 8192;
	/* memif slaves: the pool is the memif region libmemif sizes for one
	 * ring pair: 2 x ring-size buffers (port_memif.c) */
	if (g_cfg.pool_shared)
		n_bufs = 2 * g_cfg.ring_size;
	int rc = 0;
	for (uint32_t i = 0; i < g_cfg.workers; i++) {
		vf_worker_t *w = aligned_alloc(VF_CACHE_LINE, sizeof(*w));
		if (!w || (rc = vf_worker_init(w, i, &g_cfg, n_bufs,
						   has_dev ? VF_STRIDE_UMEM : VF_STRIDE_PG))) {
			fprintf(stderr, "vfwd: worker %u: %s\n", i, strerror(w ? -rc : ENOMEM));
			free(w);
			rc = 3;
			goto out;
		}
		g_workers[g_n_workers++] = w;
		for (uint32_t k = 0; k < g_cfg.n_ports; k++) {
			err[0] = 0;
			int prc = vf_port_open(w, &g_cfg, k, err, sizeof(err));
			if (prc) {
				fprintf(stderr, "vfwd: port %u (%s) worker %u: %s\n", k,
					g_cfg.port[k].ifname, i, err[0] ? err : strerror(-prc));
				rc = 3;
				goto out;
			}
			vf_ethernet_set_mac(w, k, g_cfg.port[k].mac);
		}
	}
	g_workers[0]->trace_left = (uint32_t)g_cfg.trace;

	pthread_t th[VF_MAX_WORKERS];
	uint32_t started = 0;
	for (uint32_t i = 0; i < g_n_workers; i++) {
		pthread_attr_t at;
		pthread_attr_init(&at);
		if (g_cfg.n_cpus) {
			cpu_set_t cs;
			CPU_ZERO(&cs);
			CPU_SET(g_cfg.cpus[i % (uint32_t)g_cfg.n_cpus], &cs);
			pthread_attr_setaffinity_np(&at, sizeof(cs), &cs);
		}
		if (g_cfg.sched_priority) {
			struct sched_param sp = { .sched_priority = g_cfg.sched_priority };
			pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
			pthread_attr_setschedpolicy(&at, SCHED_FIFO);
			pthread_attr_setschedparam(&at, &sp);
		}
		vf_tsc_hz();   /* calibrated once, here: the workers only read it */
		int e = pthread_create(&th[i], &at, worker_main, g_workers[i]);
		pthread_attr_destroy(&at);
		if (e) {
			fprintf(stderr, "vfwd: pthread_create (worker %u, cpu %d): %s%s\n", i,
				g_cfg.n_cpus ? g_cfg.cpus[i % (uint32_t)g_cfg.n_cpus] : -1, strerror(e),
				e == EPERM && g_cfg.sched_priority ?
				" (sched-priority needs CAP_SYS_NICE; use sched-priority 0)" : "");
			rc = 3;
			break;
		}
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (g_cfg.n_cpus) {
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(g_cfg.cpus[0], &cs);
		sched_setaffinity(0, sizeof(cs), &cs);
	}
	int lfd = -1;
	if (!rc && o.sock && (lfd = sock_listen(o.sock)) < 0)
		rc = 3;
	if (!rc) {
		printf("{\"event\": \"ready\", \"pid\": %d, \"version\": \"%s\", \"workers\": %u, "
		       "\"tsc_hz\": %.0f, \"ports\": [", getpid(), VFWD_VERSION, g_n_workers,
		       vf_tsc_hz());
		for (uint32_t k = 0; k < g_cfg.n_ports; k++) {
			char m[18];
			fmt_mac(m, g_cfg.port[k].mac);
			printf("%s{\"port\": %u, \"ifname\": \"%s\", \"driver\": \"%s\", \"mac\": \"%s\"}",
			       k ? ", " : "", k, g_cfg.port[k].ifname,
			       vf_port_drv_name(g_workers[0]->ports[k]->drv), m);
		}
		printf("]}\n");
		fflush(stdout);
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!rc && !g_stop) {
		struct pollfd pf = { .fd = lfd, .events = POLLIN };
		if (poll(&pf, lfd >= 0 ? 1 : 0, 50) > 0)
			sock_serve(lfd);
		if (g_dump) {
			g_dump = 0;
			stats(stdout);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
		if (o.duration > 0 && el >= o.duration)
			break;
		if (g_cfg.pg.enabled && g_cfg.pg.packets) {
			int done = 1;
			for (uint32_t i = 0; i < g_n_workers; i++)
				done &= vf_pg_done(g_workers[i]);
			if (done)
				break;
		}
	}
	for (uint32_t i = 0; i < g_n_workers; i++)
		g_workers[i]->stop = 1;
	for (uint32_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	/* the last frames of a pg run are finished: run_once drained them */
	if (!o.quiet)
		stats(stdout);
	if (o.stats_out) {
		FILE *f = fopen(o.stats_out, "w");
		if (f) {
			stats(f);
			fclose(f);
		} else {
			fprintf(stderr, "vfwd: --stats-out %s: %s\n", o.stats_out, strerror(errno));
		}
	}
	if (lfd >= 0) {
		close(lfd);
		unlink(o.sock);
	}
out:
	for (uint32_t i = 0; i < g_n_workers; i++) {
		vf_port_close_all(g_workers[i]);
		vf_worker_fini(g_workers[i]);
		free(g_workers[i]);
	}
	vf_config_free(&g_cfg);
	return rc;
}
