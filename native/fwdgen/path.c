/* SPDX-License-Identifier: MIT */
/*
 * `fwdgen xdp-path`: a test aid. Attaches fwdgen_path.bpf.c to a port:
 * frames are redirected to another port, and every k-th fwdgen-signed frame
 * of the measured phase is dropped and counted. Runs until SIGINT/SIGTERM,
 * then prints {"signed":N,"dropped":N,"forwarded":N} and detaches.
 */
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fwdgen.h"
#include "fwdgen_path.skel.h"

void fg_install_signals(void);

void fg_path_usage(FILE *f);
void fg_path_usage(FILE *f)
{
	fprintf(f,
		"usage: fwdgen xdp-path --in IF [--out IF] [--drop-every K] [--drop-all]\n\n"
		"Test aid: an XDP forwarder from IF to --out (without --out: a sink that drops\n"
		"signed frames), dropping every K-th fwdgen-signed frame of the measured phase.\n"
		"Prints \"ready\" once attached, the counts as one JSON line on SIGUSR1, and on\n"
		"SIGINT/SIGTERM the final counts, then detaches. Counts: {\"received\":N,\n"
		"\"signed\":N,\"dropped\":N,\"forwarded\":N,\"t_ns\":CLOCK_MONOTONIC}.\n\n"
		"options:\n"
		"  --in IF              port to attach to (required)\n"
		"  --out IF             port to redirect to (its peer needs XDP or GRO)\n"
		"  --drop-every K       drop every K-th signed frame; 0 = none (default 0)\n"
		"  --drop-all           drop and count every frame (an XDP-drop sink)\n"
		"  --help               show this help\n");
}

static volatile sig_atomic_t snapshot;

static void on_usr1(int sig)
{
	(void)sig;
	snapshot = 1;
}

static void print_counts(struct fwdgen_path *skel)
{
	printf("{\"received\":%llu,\"signed\":%llu,\"dropped\":%llu,\"forwarded\":%llu,"
	       "\"t_ns\":%llu}\n",
	       (unsigned long long)skel->bss->received, (unsigned long long)skel->bss->signed_seen,
	       (unsigned long long)skel->bss->dropped, (unsigned long long)skel->bss->forwarded,
	       (unsigned long long)fg_now_ns());
	fflush(stdout);
}

int fg_path_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"in", required_argument, NULL, 'i'},
		{"out", required_argument, NULL, 'o'},
		{"drop-every", required_argument, NULL, 'k'},
		{"drop-all", no_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *in = NULL, *out = NULL;
	unsigned long k = 0;
	int drop_all = 0;
	struct fwdgen_path *skel;
	int c, ifin, ifout = 0, rc, fd;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'k':
			k = strtoul(optarg, &end, 10);
			if (*end || end == optarg) {
				fprintf(stderr, "fwdgen: --drop-every: \"%s\" is not a number\n", optarg);
				return FG_EXIT_BADINPUT;
			}
			break;
		case 'a': drop_all = 1; break;
		case 'h': fg_path_usage(stdout); return FG_EXIT_OK;
		default: return FG_EXIT_BADINPUT;
		}
	}
	if (!in) {
		fprintf(stderr, "fwdgen: xdp-path: --in IF is required\n");
		return FG_EXIT_BADINPUT;
	}
	ifin = (int)if_nametoindex(in);
	if (!ifin) {
		fprintf(stderr, "fwdgen: --in: no interface \"%s\"\n", in);
		return FG_EXIT_BADINPUT;
	}
	if (out && !(ifout = (int)if_nametoindex(out))) {
		fprintf(stderr, "fwdgen: --out: no interface \"%s\"\n", out);
		return FG_EXIT_BADINPUT;
	}
	skel = fwdgen_path__open();
	if (!skel) {
		fprintf(stderr, "fwdgen: xdp-path: opening the program: %s\n", strerror(errno));
		return FG_EXIT_RUNTIME;
	}
	skel->rodata->cfg_out_ifindex = (uint32_t)ifout;
	skel->rodata->cfg_drop_every = (uint32_t)k;
	skel->rodata->cfg_drop_all = (uint32_t)drop_all;
	rc = fwdgen_path__load(skel);
	if (rc) {
		fprintf(stderr, "fwdgen: xdp-path: loading the program: %s\n", strerror(-rc));
		fwdgen_path__destroy(skel);
		return FG_EXIT_RUNTIME;
	}
	fd = bpf_program__fd(skel->progs.fwdgen_path);
	fg_install_signals();
	rc = bpf_xdp_attach(ifin, fd, XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (rc) {
		fprintf(stderr, "fwdgen: xdp-path: bpf_xdp_attach(%s): %s\n", in, strerror(-rc));
		fwdgen_path__destroy(skel);
		return FG_EXIT_RUNTIME;
	}
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sigaction(SIGUSR1, &sa, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	while (!fg_stop) {
		pause();
		if (snapshot) {
			snapshot = 0;
			print_counts(skel);
		}
	}
	{
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = fd);
		bpf_xdp_attach(ifin, -1, XDP_FLAGS_DRV_MODE | XDP_FLAGS_REPLACE, &ao);
	}
	print_counts(skel);
	fwdgen_path__destroy(skel);
	return FG_EXIT_OK;
}
