// SPDX-License-Identifier: GPL-2.0
/*
 * fb-ingress: attach or detach the lab's DUT ingress queue (bpf/lab_ingress)
 * on one interface of the current network namespace.
 *
 *   fb-ingress attach IFNAME CPU QSIZE   prints {"prog_id":..,"map_id":..,"kthread_pid":..}
 *   fb-ingress detach IFNAME
 *
 * The program is attached in driver mode through netlink, so it stays on the
 * interface after this process exits and goes away with the interface.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lab_ingress.skel.h"

static int usage(void)
{
	fprintf(stderr, "usage: fb-ingress attach IFNAME CPU QSIZE | fb-ingress detach IFNAME\n");
	return 2;
}

static int parse_u32(const char *s, const char *what, unsigned long max, __u32 *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > max) {
		fprintf(stderr, "fb-ingress: %s '%s' must be an integer 0..%lu\n", what, s, max);
		return -1;
	}
	*out = (__u32)v;
	return 0;
}

/* the cpumap kthread of entry `cpu` of map `map_id` is named cpumap/<cpu>/map:<id> */
static long kthread_pid(__u32 cpu, __u32 map_id)
{
	char want[32], path[300], comm[32];
	struct dirent *d;
	long found = -1;
	DIR *proc = opendir("/proc");

	if (!proc)
		return -1;
	snprintf(want, sizeof(want), "cpumap/%u/map:%u", cpu, map_id);
	while (found < 0 && (d = readdir(proc))) {
		FILE *f;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strcmp(comm, want))
				found = strtol(d->d_name, NULL, 10);
		}
		fclose(f);
	}
	closedir(proc);
	return found;
}

static int do_attach(const char *ifname, __u32 cpu, __u32 qsize)
{
	struct bpf_cpumap_val val = { .qsize = qsize };
	struct bpf_prog_info pinfo = {};
	struct bpf_map_info minfo = {};
	__u32 plen = sizeof(pinfo), mlen = sizeof(minfo);
	struct lab_ingress *skel;
	int ifindex = (int)if_nametoindex(ifname), rc;

	if (!ifindex) {
		fprintf(stderr, "fb-ingress: no interface %s in this netns\n", ifname);
		return 1;
	}
	skel = lab_ingress__open();
	if (!skel) {
		fprintf(stderr, "fb-ingress: open: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->cfg_cpu = cpu;
	/* a cpumap may not have more entries than the kernel has CPUs */
	rc = libbpf_num_possible_cpus();
	if (rc > 0 && cpu >= (__u32)rc) {
		fprintf(stderr, "fb-ingress: CPU %u: this machine has CPUs 0..%d\n", cpu, rc - 1);
		rc = -EINVAL;
		goto out;
	}
	if (rc > 0)
		bpf_map__set_max_entries(skel->maps.lab_cpus, (__u32)rc);
	rc = lab_ingress__load(skel);
	if (rc) {
		fprintf(stderr, "fb-ingress: load: %s\n", strerror(-rc));
		goto out;
	}
	rc = bpf_map_update_elem(bpf_map__fd(skel->maps.lab_cpus), &cpu, &val, 0);
	if (rc) {
		rc = -errno;
		fprintf(stderr, "fb-ingress: cpumap entry for CPU %u, qsize %u: %s\n",
			cpu, qsize, strerror(-rc));
		goto out;
	}
	rc = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.lab_ingress),
			    XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (rc) {
		fprintf(stderr, "fb-ingress: attach to %s: %s\n", ifname, strerror(-rc));
		goto out;
	}
	bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.lab_ingress), &pinfo, &plen);
	bpf_obj_get_info_by_fd(bpf_map__fd(skel->maps.lab_cpus), &minfo, &mlen);
	printf("{\"prog_id\": %u, \"map_id\": %u, \"kthread_pid\": %ld}\n",
	       pinfo.id, minfo.id, kthread_pid(cpu, minfo.id));
out:
	lab_ingress__destroy(skel);  /* the attachment holds the program and map */
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	__u32 cpu, qsize;
	int ifindex;

	if (argc == 5 && !strcmp(argv[1], "attach")) {
		if (parse_u32(argv[3], "CPU", 1023, &cpu) ||
		    parse_u32(argv[4], "QSIZE", 16384, &qsize))
			return 2;
		return do_attach(argv[2], cpu, qsize);
	}
	if (argc == 3 && !strcmp(argv[1], "detach")) {
		ifindex = (int)if_nametoindex(argv[2]);
		if (!ifindex) {
			fprintf(stderr, "fb-ingress: no interface %s in this netns\n", argv[2]);
			return 1;
		}
		if (bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL)) {
			fprintf(stderr, "fb-ingress: detach from %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		return 0;
	}
	return usage();
}
