// SPDX-License-Identifier: MIT
/*
 * fb-xdp: loader for the fwdbench XDP DUT (native/bpf/xdp_fwd.bpf.c).
 *
 * Runs in the DUT's network namespace (the driver wraps it with
 * `ip netns exec`). The programs are attached through netlink, so they stay
 * attached after fb-xdp exits and vanish with the interfaces (and so with
 * the namespace). Nothing is pinned in bpffs: later calls find the program
 * from the interface and its maps from the program.
 *
 *   fb-xdp attach --mode xconnect|router --ifaces dut0,dut1
 *                 [--obj FILE] [--attach native|generic] [--fib full|direct]
 *   fb-xdp detach --ifaces dut0,dut1 [--force]
 *   fb-xdp stats  --ifaces dut0[,dut1]
 *   fb-xdp info   --ifaces dut0,dut1
 *   fb-xdp probe
 *   fb-xdp testrun --mode M --ifaces dut0,dut1 --frame HEX [--repeat N] [--calls C]
 *                 (BPF_PROG_TEST_RUN of a private, unattached copy: the
 *                 verdict, the rewritten frame, the program's cost [ns]).
 *                 Each call copies the frame in afresh; its N repetitions
 *                 rewrite it in place (the router lowers the TTL N times), so
 *                 keep N below the frame's TTL to time the fast path only.
 *
 * Every command prints one JSON object on stdout.
 * Exit codes: 0 ok, 2 bad input (stderr names the option), 3 runtime
 * failure (stderr names the call, the interface and the error).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "xdp_fwd_shared.h"

#define EXIT_BAD_INPUT 2
#define EXIT_RUNTIME   3
#define MAX_IFACES     8
#define PROG_PREFIX    "fb_"

static const char *const reason_names[FB_XDP_N_REASONS] = {
#define FB_XDP_NAME(sym, name, verdict) [FB_XDP_##sym] = name,
	FB_XDP_REASONS(FB_XDP_NAME)
#undef FB_XDP_NAME
};

struct iface {
	char name[IF_NAMESIZE];
	unsigned int index;
};

struct cfg {
	const char *cmd;
	const char *mode;      /* xconnect | router */
	const char *ifaces;    /* comma separated */
	const char *obj;       /* BPF object path */
	const char *attach;    /* native | generic */
	const char *fib;       /* full | direct */
	const char *frame;     /* testrun: frame as hex */
	const char *repeat;    /* testrun: repetitions per call */
	const char *calls;     /* testrun: calls */
	bool force;
	bool verbose;
	struct iface ifs[MAX_IFACES];
	int n_ifs;
};

/* ---- options: one table, bound to struct cfg fields ---------------------- */

enum opt_kind { OPT_STR, OPT_FLAG };

struct opt_def {
	const char *name;
	enum opt_kind kind;
	size_t offset;
	const char *def;
	const char *help;
};

#define CFG_OFF(f) offsetof(struct cfg, f)

static const struct opt_def opt_table[] = {
	{"mode", OPT_STR, CFG_OFF(mode), NULL, "xconnect | router (attach)"},
	{"ifaces", OPT_STR, CFG_OFF(ifaces), NULL, "comma-separated interfaces"},
	{"obj", OPT_STR, CFG_OFF(obj), NULL,
	 "BPF object (default: xdp_fwd.bpf.o beside this binary)"},
	{"attach", OPT_STR, CFG_OFF(attach), "native", "native | generic"},
	{"fib", OPT_STR, CFG_OFF(fib), "full",
	 "full | direct (BPF_FIB_LOOKUP_DIRECT: main table, no rules)"},
	{"frame", OPT_STR, CFG_OFF(frame), NULL,
	 "testrun: the frame (hex, 14..1514 bytes) received on the first iface"},
	{"repeat", OPT_STR, CFG_OFF(repeat), "1",
	 "testrun: repetitions per call (1..100000000)"},
	{"calls", OPT_STR, CFG_OFF(calls), "1", "testrun: calls, each on a fresh copy (1..1000000)"},
	{"force", OPT_FLAG, CFG_OFF(force), NULL,
	 "detach even a program fb-xdp did not load"},
	{"verbose", OPT_FLAG, CFG_OFF(verbose), NULL, "libbpf debug output"},
};

#define N_OPTS (sizeof(opt_table) / sizeof(opt_table[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: fb-xdp attach|detach|stats|info|probe|testrun [options]\n");
	for (size_t i = 0; i < N_OPTS; i++)
		fprintf(f, "  --%-8s %s%s%s%s\n", opt_table[i].name,
			opt_table[i].help, opt_table[i].def ? " [" : "",
			opt_table[i].def ? opt_table[i].def : "",
			opt_table[i].def ? "]" : "");
}

static int bad_input(const char *fmt, ...)
{
	va_list ap;

	fputs("fb-xdp: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_BAD_INPUT;
}

static int runtime_err(const char *call, const char *ifname, int err)
{
	char buf[128];

	libbpf_strerror(err < 0 ? err : -err, buf, sizeof(buf));
	fprintf(stderr, "fb-xdp: %s%s%s: %s\n", call, ifname ? " on " : "",
		ifname ? ifname : "", buf);
	return EXIT_RUNTIME;
}

static int parse_args(int argc, char **argv, struct cfg *cfg)
{
	struct option lopts[N_OPTS + 2];
	int c, idx;

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < N_OPTS; i++) {
		lopts[i] = (struct option){opt_table[i].name,
					   opt_table[i].kind == OPT_STR ?
						   required_argument : no_argument,
					   NULL, 0};
		if (opt_table[i].kind == OPT_STR)
			*(const char **)((char *)cfg + opt_table[i].offset) =
				opt_table[i].def;
	}
	lopts[N_OPTS] = (struct option){"help", no_argument, NULL, 'h'};
	lopts[N_OPTS + 1] = (struct option){NULL, 0, NULL, 0};

	if (argc < 2 || argv[1][0] == '-') {
		usage(stderr);
		return bad_input("missing command");
	}
	cfg->cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", lopts, &idx)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c != 0) {
			usage(stderr);
			return EXIT_BAD_INPUT;
		}
		if (opt_table[idx].kind == OPT_STR)
			*(const char **)((char *)cfg + opt_table[idx].offset) = optarg;
		else
			*(bool *)((char *)cfg + opt_table[idx].offset) = true;
	}
	if (optind < argc)
		return bad_input("unexpected argument '%s'", argv[optind]);
	return 0;
}

/* Split --ifaces and resolve the ifindexes in this namespace. */
static int resolve_ifaces(struct cfg *cfg, int min, int max)
{
	const char *p = cfg->ifaces;

	if (!p || !*p)
		return bad_input("--ifaces is required");
	while (*p) {
		size_t len = strcspn(p, ",");
		struct iface *ifc;

		if (cfg->n_ifs == MAX_IFACES)
			return bad_input("--ifaces: more than %d interfaces", MAX_IFACES);
		if (len == 0 || len >= IF_NAMESIZE)
			return bad_input("--ifaces: bad interface name in '%s'",
					 cfg->ifaces);
		ifc = &cfg->ifs[cfg->n_ifs++];
		memcpy(ifc->name, p, len);
		ifc->name[len] = '\0';
		ifc->index = if_nametoindex(ifc->name);
		if (!ifc->index)
			return bad_input("--ifaces: no interface '%s' in this namespace",
					 ifc->name);
		p += len;
		if (*p == ',')
			p++;
	}
	if (cfg->n_ifs < min || cfg->n_ifs > max)
		return bad_input("--ifaces: %d interfaces given, %s needs %d..%d",
				 cfg->n_ifs, cfg->cmd, min, max);
	for (int i = 0; i < cfg->n_ifs; i++)
		for (int j = i + 1; j < cfg->n_ifs; j++)
			if (cfg->ifs[i].index == cfg->ifs[j].index)
				return bad_input("--ifaces: '%s' given twice",
						 cfg->ifs[i].name);
	return 0;
}

/* ---- JSON output --------------------------------------------------------- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static const char *attach_mode_name(__u8 mode)
{
	switch (mode) {
	case XDP_ATTACHED_NONE: return "none";
	case XDP_ATTACHED_DRV: return "native";
	case XDP_ATTACHED_SKB: return "generic";
	case XDP_ATTACHED_HW: return "offload";
	case XDP_ATTACHED_MULTI: return "multi";
	default: return "unknown";
	}
}

/* ---- kernel object helpers ----------------------------------------------- */

struct attached {
	__u8 mode;          /* XDP_ATTACHED_* */
	__u32 prog_id;
	__u32 flags;        /* XDP_FLAGS_*_MODE matching mode */
	struct bpf_prog_info info;
	__u32 map_ids[16];
};

/* What is attached to ifindex? prog_id 0 when nothing. */
static int query_attached(const struct iface *ifc, struct attached *a)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	__u32 len = sizeof(a->info);
	int err, fd;

	memset(a, 0, sizeof(*a));
	err = bpf_xdp_query((int)ifc->index, 0, &q);
	if (err)
		return runtime_err("bpf_xdp_query", ifc->name, err);
	a->mode = q.attach_mode;
	switch (q.attach_mode) {
	case XDP_ATTACHED_DRV:
		a->prog_id = q.drv_prog_id;
		a->flags = XDP_FLAGS_DRV_MODE;
		break;
	case XDP_ATTACHED_SKB:
		a->prog_id = q.skb_prog_id;
		a->flags = XDP_FLAGS_SKB_MODE;
		break;
	case XDP_ATTACHED_MULTI: /* native and generic: report the native one first */
		a->prog_id = q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;
		a->flags = q.drv_prog_id ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
		break;
	case XDP_ATTACHED_NONE:
		return 0;
	default:
		a->prog_id = q.prog_id;
		break;
	}
	if (!a->prog_id)
		return 0;
	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0)
		return runtime_err("bpf_prog_get_fd_by_id", ifc->name, fd);
	a->info.nr_map_ids = sizeof(a->map_ids) / sizeof(a->map_ids[0]);
	a->info.map_ids = (__u64)(uintptr_t)a->map_ids;
	err = bpf_obj_get_info_by_fd(fd, &a->info, &len);
	close(fd);
	if (err)
		return runtime_err("bpf_obj_get_info_by_fd(prog)", ifc->name, err);
	return 0;
}

static bool is_ours(const struct attached *a)
{
	return strncmp(a->info.name, PROG_PREFIX, strlen(PROG_PREFIX)) == 0;
}

/* Open the map called name among the program's maps; fd or -ENOENT. */
static int prog_map_fd(const struct attached *a, const char *name)
{
	__u32 n = a->info.nr_map_ids;

	if (n > sizeof(a->map_ids) / sizeof(a->map_ids[0]))
		n = sizeof(a->map_ids) / sizeof(a->map_ids[0]);
	for (__u32 i = 0; i < n; i++) {
		struct bpf_map_info mi;
		__u32 len = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(a->map_ids[i]);

		if (fd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (!bpf_obj_get_info_by_fd(fd, &mi, &len) &&
		    strcmp(mi.name, name) == 0)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

static void print_attached(const struct iface *ifc, const struct attached *a)
{
	printf("{\"ifname\":");
	json_str(ifc->name);
	printf(",\"ifindex\":%u,\"attach_mode\":\"%s\"", ifc->index,
	       attach_mode_name(a->mode));
	if (a->prog_id) {
		printf(",\"prog_id\":%u,\"prog_name\":", a->prog_id);
		json_str(a->info.name);
		printf(",\"prog_tag\":\"");
		for (int i = 0; i < BPF_TAG_SIZE; i++)
			printf("%02x", a->info.tag[i]);
		printf("\",\"jited\":%s,\"xlated_insns\":%u",
		       a->info.jited_prog_len ? "true" : "false",
		       a->info.xlated_prog_len / 8);
	} else {
		printf(",\"prog_id\":null,\"prog_name\":null");
	}
	printf("}");
}

static void print_env(void)
{
	struct utsname u;

	if (uname(&u) == 0) {
		printf("\"kernel\":");
		json_str(u.release);
		printf(",");
	}
	printf("\"libbpf\":");
	json_str(libbpf_version_string());
}

static int print_info(struct cfg *cfg, const char *cmd)
{
	struct attached a;
	int rc;

	printf("{\"command\":\"%s\",", cmd);
	print_env();
	printf(",\"ifaces\":[");
	for (int i = 0; i < cfg->n_ifs; i++) {
		rc = query_attached(&cfg->ifs[i], &a);
		if (rc) {
			printf("]}\n");
			return rc;
		}
		printf("%s", i ? "," : "");
		print_attached(&cfg->ifs[i], &a);
	}
	printf("]}\n");
	return 0;
}

/* ---- attach -------------------------------------------------------------- */

/* Set a `const volatile __u32` in .rodata (before load) found through BTF. */
static int set_rodata_u32(struct bpf_object *obj, const char *var, __u32 val)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, ".rodata");
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	size_t size;
	void *init;
	int id;

	if (!map || !btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (id < 0)
		return id;
	sec = btf__type_by_id(btf, (__u32)id);
	init = (void *)bpf_map__initial_value(map, &size);
	if (!init)
		return -ENOENT;
	vs = btf_var_secinfos(sec);
	for (unsigned short i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *t = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, t->name_off), var) == 0) {
			if (vs->size != sizeof(val) || vs->offset + vs->size > size)
				return -EINVAL;
			memcpy((char *)init + vs->offset, &val, sizeof(val));
			return 0;
		}
	}
	return -ENOENT;
}

static int default_obj_path(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(buf, len, "%s/xdp_fwd.bpf.o", exe) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int libbpf_print_verbose(enum libbpf_print_level level, const char *fmt,
				va_list ap)
{
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

static int fill_ports(int map_fd, struct cfg *cfg, bool xconnect)
{
	for (int i = 0; i < cfg->n_ifs; i++) {
		__u32 key = cfg->ifs[i].index;
		__u32 val = xconnect ? cfg->ifs[1 - i].index : key;
		int err = bpf_map_update_elem(map_fd, &key, &val, BPF_ANY);

		if (err)
			return runtime_err("bpf_map_update_elem(" FB_XDP_MAP_PORTS ")",
					   cfg->ifs[i].name, err);
	}
	return 0;
}

struct loaded {
	struct bpf_object *obj;
	struct bpf_program *prog;
	__u32 xdp_flags;
	bool xconnect;
};

/* Check the attach/testrun options, open, configure and load the object. */
static int load_object(struct cfg *cfg, struct loaded *l)
{
	static char objbuf[PATH_MAX];
	struct bpf_program *other;
	struct bpf_map *ports;
	int rc, err;

	memset(l, 0, sizeof(*l));
	if (!cfg->mode)
		return bad_input("--mode is required (xconnect | router)");
	if (strcmp(cfg->mode, "xconnect") && strcmp(cfg->mode, "router"))
		return bad_input("--mode: '%s' is not one of xconnect, router",
				 cfg->mode);
	l->xconnect = strcmp(cfg->mode, "xconnect") == 0;
	rc = resolve_ifaces(cfg, l->xconnect ? 2 : 1, l->xconnect ? 2 : MAX_IFACES);
	if (rc)
		return rc;
	if (strcmp(cfg->attach, "native") == 0)
		l->xdp_flags = XDP_FLAGS_DRV_MODE;
	else if (strcmp(cfg->attach, "generic") == 0)
		l->xdp_flags = XDP_FLAGS_SKB_MODE;
	else
		return bad_input("--attach: '%s' is not one of native, generic",
				 cfg->attach);
	if (strcmp(cfg->fib, "full") && strcmp(cfg->fib, "direct"))
		return bad_input("--fib: '%s' is not one of full, direct", cfg->fib);
	if (!cfg->obj) {
		err = default_obj_path(objbuf, sizeof(objbuf));
		if (err)
			return runtime_err("readlink(/proc/self/exe)", NULL, err);
		cfg->obj = objbuf;
	}

	l->obj = bpf_object__open_file(cfg->obj, NULL);
	if (!l->obj) {
		err = -errno;
		fprintf(stderr, "fb-xdp: bpf_object__open_file(%s): %s\n", cfg->obj,
			strerror(-err));
		return EXIT_RUNTIME;
	}
	l->prog = bpf_object__find_program_by_name(
		l->obj, l->xconnect ? FB_XDP_PROG_XCONNECT : FB_XDP_PROG_ROUTER);
	other = bpf_object__find_program_by_name(
		l->obj, l->xconnect ? FB_XDP_PROG_ROUTER : FB_XDP_PROG_XCONNECT);
	ports = bpf_object__find_map_by_name(l->obj, FB_XDP_MAP_PORTS);
	if (!l->prog || !ports) {
		fprintf(stderr, "fb-xdp: %s lacks program or map for mode %s\n",
			cfg->obj, cfg->mode);
		rc = EXIT_RUNTIME;
		goto out_close;
	}
	if (other)
		bpf_program__set_autoload(other, false);
	err = set_rodata_u32(l->obj, "fib_flags",
			     strcmp(cfg->fib, "direct") == 0 ? BPF_FIB_LOOKUP_DIRECT : 0);
	if (err) {
		rc = runtime_err("set .rodata fib_flags", NULL, err);
		goto out_close;
	}
	err = bpf_object__load(l->obj);
	if (err) {
		rc = runtime_err("bpf_object__load", cfg->obj, err);
		goto out_close;
	}
	rc = fill_ports(bpf_map__fd(ports), cfg, l->xconnect);
	if (rc)
		goto out_close;
	return 0;

out_close:
	bpf_object__close(l->obj);
	l->obj = NULL;
	return rc;
}

static int do_attach(struct cfg *cfg)
{
	struct loaded l;
	int attached, rc, err, prog_fd;

	rc = load_object(cfg, &l);
	if (rc)
		return rc;
	prog_fd = bpf_program__fd(l.prog);
	for (attached = 0; attached < cfg->n_ifs; attached++) {
		const struct iface *ifc = &cfg->ifs[attached];

		err = bpf_xdp_attach((int)ifc->index, prog_fd,
				     l.xdp_flags | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		if (err) {
			struct attached a;

			if ((err == -EBUSY || err == -EEXIST) &&
			    query_attached(ifc, &a) == 0 && a.prog_id)
				fprintf(stderr,
					"fb-xdp: bpf_xdp_attach on %s: XDP program %s (id %u) "
					"is already attached; run 'fb-xdp detach --ifaces %s'\n",
					ifc->name, a.info.name, a.prog_id, ifc->name);
			else
				runtime_err("bpf_xdp_attach", ifc->name, err);
			rc = EXIT_RUNTIME;
			goto out_detach;
		}
	}
	/* The netlink attachments hold the program, which holds its maps. */
	rc = print_info(cfg, "attach");
	if (rc)
		goto out_detach;
	goto out_close;

out_detach:
	while (attached-- > 0) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = prog_fd);

		bpf_xdp_detach((int)cfg->ifs[attached].index,
			       l.xdp_flags | XDP_FLAGS_REPLACE, &o);
	}
out_close:
	bpf_object__close(l.obj);
	return rc;
}

/* ---- testrun ------------------------------------------------------------- */

static const char *xdp_action_name(__u32 action)
{
	static const char *const names[] = {"XDP_ABORTED", "XDP_DROP", "XDP_PASS",
					    "XDP_TX", "XDP_REDIRECT"};

	return action < sizeof(names) / sizeof(names[0]) ? names[action] : "unknown";
}

static int parse_hex(const char *hex, unsigned char *out, size_t max, size_t *len)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int byte;

		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return -1;
		out[i] = (unsigned char)byte;
	}
	*len = n / 2;
	return 0;
}

static int parse_count(const char *opt, const char *text, long max, long *out)
{
	char *end = NULL;

	errno = 0;
	*out = strtol(text, &end, 10);
	if (errno || !end || *end || *out < 1 || *out > max)
		return bad_input("--%s: '%s' is not a number 1..%ld", opt, text, max);
	return 0;
}

static int do_testrun(struct cfg *cfg)
{
	unsigned char in[1514], out[1514 + 256];
	long repeat, calls;
	double total_ns = 0;
	struct xdp_md md;
	struct loaded l;
	size_t len = 0;
	int rc, err, stats_fd;
	__u32 retval = 0, out_len = 0;

	if (!cfg->frame || parse_hex(cfg->frame, in, sizeof(in), &len) || len < 14)
		return bad_input("--frame: give the frame as hex, 14..1514 bytes");
	rc = parse_count("repeat", cfg->repeat, 100000000, &repeat);
	if (!rc)
		rc = parse_count("calls", cfg->calls, 1000000, &calls);
	if (rc)
		return rc;
	rc = load_object(cfg, &l);
	if (rc)
		return rc;

	for (long c = 0; c < calls; c++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = (__u32)len,
			    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &md,
			    .ctx_size_in = sizeof(md), .repeat = (int)repeat);

		memset(&md, 0, sizeof(md));
		md.data_end = (__u32)len;
		md.ingress_ifindex = cfg->ifs[0].index;
		err = bpf_prog_test_run_opts(bpf_program__fd(l.prog), &o);
		if (err) {
			rc = runtime_err("bpf_prog_test_run_opts", cfg->ifs[0].name, err);
			goto out;
		}
		total_ns += o.duration;
		retval = o.retval;
		out_len = o.data_size_out;
	}
	printf("{\"command\":\"testrun\",\"prog_name\":");
	json_str(bpf_program__name(l.prog));
	printf(",\"ingress\":");
	json_str(cfg->ifs[0].name);
	printf(",\"repeat\":%ld,\"calls\":%ld,\"retval\":%u,\"action\":\"%s\","
	       "\"duration_ns\":%.2f,\"frame_out\":\"", repeat, calls, retval,
	       xdp_action_name(retval), total_ns / (double)calls);
	for (__u32 i = 0; i < out_len && i < sizeof(out); i++)
		printf("%02x", out[i]);
	printf("\",\"counters\":{");
	stats_fd = bpf_object__find_map_fd_by_name(l.obj, FB_XDP_MAP_STATS);
	{
		int ncpus = libbpf_num_possible_cpus();
		struct fb_xdp_count *vals = ncpus > 0 ? calloc((size_t)ncpus, sizeof(*vals)) : NULL;
		bool first = true;

		for (__u32 r = 0; vals && r < FB_XDP_N_REASONS; r++) {
			__u64 pk = 0;

			if (bpf_map_lookup_elem(stats_fd, &r, vals))
				continue;
			for (int c = 0; c < ncpus; c++)
				pk += vals[c].packets;
			if (pk) {
				printf("%s\"%s\":%llu", first ? "" : ",", reason_names[r],
				       (unsigned long long)pk);
				first = false;
			}
		}
		free(vals);
	}
	printf("}}\n");
	rc = 0;
out:
	bpf_object__close(l.obj);
	return rc;
}

/* ---- detach -------------------------------------------------------------- */

/* Detach the program described by a, if fb-xdp loaded it (or --force). */
static int detach_one(const struct cfg *cfg, const struct iface *ifc,
		      const struct attached *a)
{
	int fd, err;

	if (!a->flags) {
		fprintf(stderr, "fb-xdp: detach on %s: attach mode %s not handled\n",
			ifc->name, attach_mode_name(a->mode));
		return EXIT_RUNTIME;
	}
	if (!is_ours(a) && !cfg->force) {
		fprintf(stderr,
			"fb-xdp: detach on %s: program %s (id %u) was not loaded by "
			"fb-xdp; use --force to detach it anyway\n",
			ifc->name, a->info.name, a->prog_id);
		return EXIT_RUNTIME;
	}
	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0)
		return runtime_err("bpf_prog_get_fd_by_id", ifc->name, fd);
	{
		LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = fd);

		/* REPLACE: only if it is still the program we looked at. */
		err = bpf_xdp_detach((int)ifc->index, a->flags | XDP_FLAGS_REPLACE, &o);
	}
	close(fd);
	return err ? runtime_err("bpf_xdp_detach", ifc->name, err) : 0;
}

static int do_detach(struct cfg *cfg)
{
	int rc = resolve_ifaces(cfg, 1, MAX_IFACES);
	struct attached a;

	if (rc)
		return rc;
	printf("{\"command\":\"detach\",\"ifaces\":[");
	for (int i = 0; i < cfg->n_ifs && !rc; i++) {
		const struct iface *ifc = &cfg->ifs[i];
		char names[64] = "";
		int detached = 0;

		/* up to two passes: an interface may hold a native and a generic program */
		for (int pass = 0; pass < 2 && !rc; pass++) {
			rc = query_attached(ifc, &a);
			if (rc || !a.prog_id)
				break;
			rc = detach_one(cfg, ifc, &a);
			if (!rc) {
				detached++;
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 detached > 1 ? "," : "", a.info.name);
			}
		}
		printf("%s{\"ifname\":", i ? "," : "");
		json_str(ifc->name);
		printf(",\"detached\":%d,\"prog_names\":", detached);
		json_str(names);
		printf("}");
	}
	printf("]}\n");
	return rc;
}

/* ---- stats --------------------------------------------------------------- */

static int do_stats(struct cfg *cfg)
{
	struct fb_xdp_count *vals = NULL, sum[FB_XDP_N_REASONS];
	const struct iface *ifc = NULL;
	int rc, map_fd = -1, ncpus;
	__u64 *cpu_packets = NULL;
	struct attached a;

	rc = resolve_ifaces(cfg, 1, MAX_IFACES);
	if (rc)
		return rc;
	for (int i = 0; i < cfg->n_ifs; i++) {
		rc = query_attached(&cfg->ifs[i], &a);
		if (rc)
			return rc;
		if (a.prog_id && is_ours(&a)) {
			ifc = &cfg->ifs[i];
			break;
		}
	}
	if (!ifc) {
		fprintf(stderr, "fb-xdp: stats: no fb-xdp program attached to %s\n",
			cfg->ifaces);
		return EXIT_RUNTIME;
	}
	map_fd = prog_map_fd(&a, FB_XDP_MAP_STATS);
	if (map_fd < 0)
		return runtime_err("find map " FB_XDP_MAP_STATS, ifc->name, map_fd);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		rc = runtime_err("libbpf_num_possible_cpus", NULL, ncpus);
		goto out;
	}
	vals = calloc((size_t)ncpus, sizeof(*vals));
	cpu_packets = calloc((size_t)ncpus, sizeof(*cpu_packets));
	if (!vals || !cpu_packets) {
		rc = runtime_err("calloc", NULL, -ENOMEM);
		goto out;
	}
	memset(sum, 0, sizeof(sum));
	for (__u32 r = 0; r < FB_XDP_N_REASONS; r++) {
		int err = bpf_map_lookup_elem(map_fd, &r, vals);

		if (err) {
			rc = runtime_err("bpf_map_lookup_elem(" FB_XDP_MAP_STATS ")",
					 ifc->name, err);
			goto out;
		}
		for (int c = 0; c < ncpus; c++) {
			sum[r].packets += vals[c].packets;
			sum[r].bytes += vals[c].bytes;
			cpu_packets[c] += vals[c].packets;
		}
	}
	printf("{\"command\":\"stats\",\"prog_id\":%u,\"prog_name\":", a.prog_id);
	json_str(a.info.name);
	printf(",\"cpus\":%d,\"counters\":{", ncpus);
	for (int r = 0; r < FB_XDP_N_REASONS; r++)
		printf("%s\"%s\":{\"packets\":%llu,\"bytes\":%llu}", r ? "," : "",
		       reason_names[r], (unsigned long long)sum[r].packets,
		       (unsigned long long)sum[r].bytes);
	printf("},\"cpu_packets\":[");
	for (int c = 0; c < ncpus; c++)
		printf("%s%llu", c ? "," : "", (unsigned long long)cpu_packets[c]);
	printf("]}\n");
	rc = 0;
out:
	free(cpu_packets);
	free(vals);
	close(map_fd);
	return rc;
}

/* ---- info / probe -------------------------------------------------------- */

static int do_info(struct cfg *cfg)
{
	int rc = resolve_ifaces(cfg, 1, MAX_IFACES);

	return rc ? rc : print_info(cfg, "info");
}

static int do_probe(void)
{
	struct {
		const char *name;
		int ok;
	} f[] = {
		{"prog_xdp", libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_XDP, NULL)},
		{"map_devmap_hash",
		 libbpf_probe_bpf_map_type(BPF_MAP_TYPE_DEVMAP_HASH, NULL)},
		{"map_percpu_array",
		 libbpf_probe_bpf_map_type(BPF_MAP_TYPE_PERCPU_ARRAY, NULL)},
		{"helper_redirect_map",
		 libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, BPF_FUNC_redirect_map, NULL)},
		{"helper_fib_lookup",
		 libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, BPF_FUNC_fib_lookup, NULL)},
	};
	bool all = true;

	printf("{\"command\":\"probe\",");
	print_env();
	printf(",\"features\":{");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		printf("%s\"%s\":%s", i ? "," : "", f[i].name,
		       f[i].ok == 1 ? "true" : "false");
		if (f[i].ok != 1) {
			all = false;
			fprintf(stderr, "fb-xdp: probe: %s not supported%s\n", f[i].name,
				f[i].ok < 0 ? " (probe failed: are you root?)" : "");
		}
	}
	printf("},\"ok\":%s}\n", all ? "true" : "false");
	return all ? 0 : EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
	struct cfg cfg;
	int rc = parse_args(argc, argv, &cfg);

	if (rc)
		return rc;
	libbpf_set_print(cfg.verbose ? libbpf_print_verbose : libbpf_print);
	if (strcmp(cfg.cmd, "attach") == 0)
		rc = do_attach(&cfg);
	else if (strcmp(cfg.cmd, "detach") == 0)
		rc = do_detach(&cfg);
	else if (strcmp(cfg.cmd, "stats") == 0)
		rc = do_stats(&cfg);
	else if (strcmp(cfg.cmd, "info") == 0)
		rc = do_info(&cfg);
	else if (strcmp(cfg.cmd, "probe") == 0)
		rc = do_probe();
	else if (strcmp(cfg.cmd, "testrun") == 0)
		rc = do_testrun(&cfg);
	else
		rc = bad_input("unknown command '%s' (attach, detach, stats, info, probe, testrun)",
			       cfg.cmd);
	fflush(stdout);
	return rc;
}
