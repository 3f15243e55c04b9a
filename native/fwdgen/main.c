/* SPDX-License-Identifier: MIT */
/* fwdgen: fwdbench's traffic generator and receiver. main() only dispatches. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "fwdgen.h"
#include "fwdgen_tx.skel.h"

void fg_trial_usage(FILE *f);
void fg_path_usage(FILE *f);
void fg_sink_usage(FILE *f);

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fwdgen [--help|--version] COMMAND [options]\n\n"
		"fwdbench's traffic generator and receiver: Ethernet/IPv4|IPv6/UDP frames of\n"
		"64..9000 B (incl. FCS) or IMIX, N flows, paced from 1 kpps to the maximum;\n"
		"every frame is signed (stream, sequence number, TX timestamp) and the\n"
		"receiver counts only signed frames: loss, reordering (RFC 4737),\n"
		"duplicates, one-way latency (HdrHistogram) and jitter (RFC 3550).\n\n"
		"commands:\n"
		"  trial      run one trial from a JSON spec, print a JSON result\n"
		"  check      probe the backends on this kernel, print JSON\n"
		"  sink       memif drop sink for benchmarks: counts what arrives, drops it\n"
		"  xdp-path   test aid: XDP forwarder that drops every k-th signed frame\n\n"
		"backends (per port, spec.ports[].backend):\n"
		"  xdp        TX by BPF_PROG_RUN live frames, RX counted in an XDP program\n"
		"             (frames up to %d B; the tx port's peer needs XDP or GRO)\n"
		"  afxdp      AF_XDP socket per port (copy mode on veth), busy-polled, frames\n"
		"             up to %d B\n"
		"  afpacket   TX by sendmmsg (PACKET_QDISC_BYPASS), RX by busy-polled recvmmsg\n"
		"  memif      a memif interface (libmemif; spec.ports[].memif: UNIX socket, id,\n"
		"             role), no kernel on the path: for user-space data planes\n"
		"  auto       xdp when it fits and loads, else afpacket\n\n"
		"global options:\n"
		"  --help     show this help (and `fwdgen COMMAND --help`)\n"
		"  --version  print the version\n\n",
		FG_XDP_MAX_FRAME + FG_FCS_LEN, FG_XDP_MAX_FRAME + FG_FCS_LEN);
	fg_trial_usage(f);
	fprintf(f, "\n");
	fg_path_usage(f);
	fprintf(f, "\n");
	fg_sink_usage(f);
	fprintf(f, "\nusage: fwdgen check\n\nPrints {\"fwdgen_version\",\"xdp\",\"afpacket\","
		   "\"memif\",\"errors\"}; exit 0 if at least one backend works, else 3.\n");
}

/* Can this process load the TX program and run it in live-frame mode? */
static int probe_xdp(char *err, size_t errlen)
{
	struct fwdgen_tx *skel = fwdgen_tx__open_and_load();
	uint8_t frame[64] = {0};
	/* ingress lo: the program passes, nothing is sent */
	struct xdp_md ctx = {.data_end = 60, .ingress_ifindex = 1};
	int rc;

	if (!skel) {
		fg_errf(err, errlen, "bpf load: %s", strerror(errno));
		return 0;
	}
	frame[12] = 0x08;
	frame[14] = 0x45;
	{
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = 60,
			    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1,
			    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
		rc = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.fwdgen_tx), &o);
		if (rc)
			fg_errf(err, errlen, "BPF_PROG_RUN live frames: %s", strerror(errno));
	}
	fwdgen_tx__destroy(skel);
	return rc == 0;
}

/* memif: built with libmemif, and the kernel has memfd_create (its shared
 * memory) */
static int probe_memif(char *err, size_t errlen)
{
	int fd;

	if (!fg_memif_available(err, errlen))
		return 0;
	fd = memfd_create("fwdgen check", MFD_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "memfd_create: %s", strerror(errno));
		return 0;
	}
	close(fd);
	return 1;
}

static int do_check(void)
{
	char xerr[256] = "", aerr[256] = "", merr[512] = "";
	int xdp = probe_xdp(xerr, sizeof(xerr));
	int fd = socket(AF_PACKET, SOCK_RAW, 0), afp = fd >= 0;
	int mif = probe_memif(merr, sizeof(merr));
	json_t *o;
	char *out;

	if (fd >= 0)
		close(fd);
	else
		snprintf(aerr, sizeof(aerr), "socket(AF_PACKET): %s", strerror(errno));
	o = json_pack("{s:s, s:b, s:b, s:b, s:{s:s, s:s, s:s}}", "fwdgen_version", FWDGEN_VERSION,
		      "xdp", xdp, "afpacket", afp, "memif", mif, "errors", "xdp", xerr,
		      "afpacket", aerr, "memif", merr);
	out = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (out)
		puts(out);
	free(out);
	json_decref(o);
	return xdp || afp || mif ? FG_EXIT_OK : FG_EXIT_RUNTIME;
}

static int silent_print(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	if (lvl == LIBBPF_WARN && getenv("FWDGEN_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static int silent_xdp_print(enum libxdp_print_level lvl, const char *fmt, va_list ap)
{
	if (lvl == LIBXDP_WARN && getenv("FWDGEN_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

int main(int argc, char **argv)
{
	libbpf_set_print(silent_print);
	libxdp_set_print(silent_xdp_print);
	if (argc < 2) {
		usage(stderr);
		return FG_EXIT_BADINPUT;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return FG_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("fwdgen %s\n", FWDGEN_VERSION);
		return FG_EXIT_OK;
	}
	if (!strcmp(argv[1], "trial"))
		return fg_trial_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return do_check();
	if (!strcmp(argv[1], "xdp-path"))
		return fg_path_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sink"))
		return fg_sink_main(argc - 1, argv + 1);
	fprintf(stderr, "fwdgen: unknown command \"%s\" (see fwdgen --help)\n", argv[1]);
	return FG_EXIT_BADINPUT;
}
