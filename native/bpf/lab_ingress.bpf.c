// SPDX-License-Identifier: GPL-2.0
/*
 * The lab's DUT ingress queue for kernel data planes. Attached to a DUT
 * veth, it hands every frame to the DUT CPU's cpumap queue, whose kthread
 * builds the skbs and runs the kernel stack there. The queue plays a NIC's
 * RX ring: thousands of frames instead of veth's fixed 256, so a few
 * milliseconds in which the hypervisor runs something else on the DUT's
 * vCPU no longer overflow it (docs/lab.md, "DUT ingress").
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

const volatile __u32 cfg_cpu;  /* the DUT CPU: key of its cpumap entry */

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1);   /* set to the CPU count at load */
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} lab_cpus SEC(".maps");

SEC("xdp")
int lab_ingress(struct xdp_md *ctx)
{
	/* XDP_PASS if the entry is missing: never lose a frame to a setup slip */
	return bpf_redirect_map(&lab_cpus, cfg_cpu, XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
