/* SPDX-License-Identifier: MIT */
#include "spec.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "fg_pkt.h"

struct perr {
	char *buf;
	size_t len;
};

static int fail(struct perr *e, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct perr *e, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(e->buf, e->len, "%s: ", path);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < e->len)
		vsnprintf(e->buf + n, e->len - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

const char *fg_backend_name(enum fg_backend b)
{
	switch (b) {
	case FG_BACKEND_XDP: return "xdp";
	case FG_BACKEND_AFPACKET: return "afpacket";
	case FG_BACKEND_AFXDP: return "afxdp";
	case FG_BACKEND_MEMIF: return "memif";
	default: return "auto";
	}
}

/* Reject keys not in the NULL-terminated list. */
static int only_keys(struct perr *e, const char *path, json_t *obj, const char *const *keys)
{
	const char *k;
	json_t *v;
	char p[128];

	if (!json_is_object(obj))
		return fail(e, path, "must be an object");
	json_object_foreach(obj, k, v) {
		const char *const *q;
		int ok = 0;

		for (q = keys; *q; q++)
			if (!strcmp(*q, k))
				ok = 1;
		if (!ok) {
			snprintf(p, sizeof(p), "%s.%s", path, k);
			return fail(e, p, "unknown field");
		}
	}
	return 0;
}

static int get_num(struct perr *e, const char *path, json_t *v, double lo, double hi, double *out)
{
	double d;

	if (!json_is_number(v))
		return fail(e, path, "must be a number");
	d = json_number_value(v);
	if (!isfinite(d) || d < lo)
		return fail(e, path, "%g is below %g", d, lo);
	if (d > hi)
		return fail(e, path, "%g is above %g", d, hi);
	*out = d;
	return 0;
}

static int get_int(struct perr *e, const char *path, json_t *v, long long lo, long long hi,
		   long long *out)
{
	long long i;

	if (!json_is_integer(v))
		return fail(e, path, "must be an integer");
	i = json_integer_value(v);
	if (i < lo)
		return fail(e, path, "%lld is below %lld", i, lo);
	if (i > hi)
		return fail(e, path, "%lld is above %lld", i, hi);
	*out = i;
	return 0;
}

static int get_str(struct perr *e, const char *path, json_t *v, char *out, size_t cap)
{
	if (!json_is_string(v))
		return fail(e, path, "must be a string");
	if (json_string_length(v) >= cap || json_string_length(v) == 0)
		return fail(e, path, "\"%s\" must be 1..%zu characters", json_string_value(v), cap - 1);
	strcpy(out, json_string_value(v));
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int get_mac(struct perr *e, const char *path, json_t *v, uint8_t mac[6])
{
	char s[32];

	if (get_str(e, path, v, s, sizeof(s)))
		return -1;
	if (parse_mac(s, mac))
		return fail(e, path, "\"%s\" is not a MAC address like 02:fb:00:00:00:01", s);
	return 0;
}

/* ports[i].memif: socket (required), id, role, ring_size, buffer_size,
 * connect_timeout_s */
static int parse_memif(struct perr *e, size_t i, json_t *o, struct fg_spec_memif *m)
{
	static const char *const keys[] = {"socket", "id", "role", "ring_size", "buffer_size",
					   "connect_timeout_s", NULL};
	char p[96], role[16];
	long long x;
	json_t *v;

	snprintf(p, sizeof(p), "spec.ports[%zu].memif", i);
	if (only_keys(e, p, o, keys))
		return -1;
	m->master = 1;
	m->ring_size = 1024;
	m->buffer_size = 2048;
	m->connect_timeout_s = 10;
	snprintf(p, sizeof(p), "spec.ports[%zu].memif.socket", i);
	if (!(v = json_object_get(o, "socket")))
		return fail(e, p, "is required (a UNIX socket path, or @name for an abstract one)");
	if (get_str(e, p, v, m->socket, sizeof(m->socket)))
		return -1;
	if ((v = json_object_get(o, "id"))) {
		snprintf(p, sizeof(p), "spec.ports[%zu].memif.id", i);
		if (get_int(e, p, v, 0, 0xffffffffLL, &x))
			return -1;
		m->id = (uint32_t)x;
	}
	if ((v = json_object_get(o, "role"))) {
		snprintf(p, sizeof(p), "spec.ports[%zu].memif.role", i);
		if (get_str(e, p, v, role, sizeof(role)))
			return -1;
		if (!strcmp(role, "slave"))
			m->master = 0;
		else if (strcmp(role, "master"))
			return fail(e, p, "\"%s\" is not master or slave", role);
	}
	if ((v = json_object_get(o, "ring_size"))) {
		snprintf(p, sizeof(p), "spec.ports[%zu].memif.ring_size", i);
		if (get_int(e, p, v, 2, 16384, &x))
			return -1;
		if (x & (x - 1))
			return fail(e, p, "%lld is not a power of two (libmemif's rings are 2..16384 "
				    "slots)", x);
		m->ring_size = (uint32_t)x;
	}
	if ((v = json_object_get(o, "buffer_size"))) {
		snprintf(p, sizeof(p), "spec.ports[%zu].memif.buffer_size", i);
		if (get_int(e, p, v, 128, 65535, &x))
			return -1;
		m->buffer_size = (uint32_t)x;
	}
	if ((v = json_object_get(o, "connect_timeout_s"))) {
		snprintf(p, sizeof(p), "spec.ports[%zu].memif.connect_timeout_s", i);
		if (get_num(e, p, v, 0.01, 3600, &m->connect_timeout_s))
			return -1;
	}
	return 0;
}

static int parse_ports(struct perr *e, json_t *arr, struct fg_spec *sp)
{
	static const char *const keys[] = {"ifname", "mac", "peer_mac", "backend",
					   "burst_period_us", "memif", NULL};
	char p[96];
	size_t i;
	json_t *o, *v;

	if (!json_is_array(arr) || json_array_size(arr) < 1)
		return fail(e, "spec.ports", "must be a non-empty array");
	if (json_array_size(arr) > FG_MAX_PORTS)
		return fail(e, "spec.ports", "at most %d ports", FG_MAX_PORTS);
	json_array_foreach(arr, i, o) {
		struct fg_spec_port *pt = &sp->ports[i];

		snprintf(p, sizeof(p), "spec.ports[%zu]", i);
		if (only_keys(e, p, o, keys))
			return -1;
		snprintf(p, sizeof(p), "spec.ports[%zu].ifname", i);
		if (!(v = json_object_get(o, "ifname")))
			return fail(e, p, "is required");
		if (get_str(e, p, v, pt->ifname, sizeof(pt->ifname)))
			return -1;
		if ((v = json_object_get(o, "mac"))) {
			snprintf(p, sizeof(p), "spec.ports[%zu].mac", i);
			if (get_mac(e, p, v, pt->mac))
				return -1;
			pt->has_mac = 1;
		}
		if ((v = json_object_get(o, "peer_mac"))) {
			snprintf(p, sizeof(p), "spec.ports[%zu].peer_mac", i);
			if (get_mac(e, p, v, pt->peer_mac))
				return -1;
			pt->has_peer_mac = 1;
		}
		pt->backend = FG_BACKEND_AUTO;
		if ((v = json_object_get(o, "backend"))) {
			char b[16];

			snprintf(p, sizeof(p), "spec.ports[%zu].backend", i);
			if (get_str(e, p, v, b, sizeof(b)))
				return -1;
			if (!strcmp(b, "xdp"))
				pt->backend = FG_BACKEND_XDP;
			else if (!strcmp(b, "afpacket"))
				pt->backend = FG_BACKEND_AFPACKET;
			else if (!strcmp(b, "afxdp"))
				pt->backend = FG_BACKEND_AFXDP;
			else if (!strcmp(b, "memif"))
				pt->backend = FG_BACKEND_MEMIF;
			else if (strcmp(b, "auto"))
				return fail(e, p, "\"%s\" is not one of auto, xdp, afxdp, afpacket, "
					    "memif", b);
		}
		if ((v = json_object_get(o, "memif"))) {
			snprintf(p, sizeof(p), "spec.ports[%zu].memif", i);
			if (pt->backend == FG_BACKEND_AUTO)
				pt->backend = FG_BACKEND_MEMIF;
			if (pt->backend != FG_BACKEND_MEMIF)
				return fail(e, p, "only a port with backend memif has memif settings "
					    "(backend is %s)", fg_backend_name(pt->backend));
			if (parse_memif(e, i, v, &pt->memif))
				return -1;
			pt->has_memif = 1;
		} else if (pt->backend == FG_BACKEND_MEMIF) {
			snprintf(p, sizeof(p), "spec.ports[%zu].memif", i);
			return fail(e, p, "is required with backend memif: "
				    "{\"socket\": \"/run/x/tg0.sock\", \"id\": 0, \"role\": \"master\"}");
		}
		if ((v = json_object_get(o, "burst_period_us"))) {
			double us;

			snprintf(p, sizeof(p), "spec.ports[%zu].burst_period_us", i);
			if (get_num(e, p, v, 1, 100000, &us))
				return -1;
			pt->burst_period_ns = (uint64_t)(us * 1000.0 + 0.5);
		}
	}
	sp->nports = (int)json_array_size(arr);
	return 0;
}

static int parse_streams(struct perr *e, json_t *arr, struct fg_spec *sp)
{
	static const char *const keys[] = {"id", "tx_port", "rx_port", "src", "dst",
					   "src_port", "dst_port", NULL};
	char p[96];
	long long x;
	size_t i, j;
	json_t *o, *v;

	if (!json_is_array(arr) || json_array_size(arr) < 1)
		return fail(e, "spec.streams", "must be a non-empty array");
	if (json_array_size(arr) > FG_MAX_LOAD_STREAMS)
		return fail(e, "spec.streams", "at most %d streams", FG_MAX_LOAD_STREAMS);
	json_array_foreach(arr, i, o) {
		struct fg_spec_stream *st = &sp->streams[i];
		static const char *const req[] = {"id", "tx_port", "rx_port", "src", "dst"};

		snprintf(p, sizeof(p), "spec.streams[%zu]", i);
		if (only_keys(e, p, o, keys))
			return -1;
		for (j = 0; j < sizeof(req) / sizeof(req[0]); j++) {
			if (!json_object_get(o, req[j])) {
				snprintf(p, sizeof(p), "spec.streams[%zu].%s", i, req[j]);
				return fail(e, p, "is required");
			}
		}
		snprintf(p, sizeof(p), "spec.streams[%zu].id", i);
		if (get_int(e, p, json_object_get(o, "id"), 0, 1 << 30, &x))
			return -1;
		st->id = (int)x;
		for (j = 0; j < i; j++)
			if (sp->streams[j].id == st->id)
				return fail(e, p, "%d is used by spec.streams[%zu] too", st->id, j);
		snprintf(p, sizeof(p), "spec.streams[%zu].tx_port", i);
		if (get_int(e, p, json_object_get(o, "tx_port"), 0, sp->nports - 1, &x))
			return -1;
		st->tx_port = (int)x;
		snprintf(p, sizeof(p), "spec.streams[%zu].rx_port", i);
		v = json_object_get(o, "rx_port");
		if (json_is_null(v)) {
			st->rx_port = -1; /* send only: nothing is counted */
		} else {
			if (get_int(e, p, v, 0, sp->nports - 1, &x))
				return -1;
			st->rx_port = (int)x;
		}
		if (!sp->ports[st->tx_port].has_peer_mac) {
			snprintf(p, sizeof(p), "spec.ports[%d].peer_mac", st->tx_port);
			return fail(e, p, "is required on a port that transmits (streams[%zu])", i);
		}
		snprintf(p, sizeof(p), "spec.streams[%zu].src", i);
		if (get_str(e, p, json_object_get(o, "src"), st->src, sizeof(st->src)))
			return -1;
		if (fg_parse_prefix(st->src, sp->ipv6, st->src_ip, &st->src_hosts))
			return fail(e, p, "\"%s\" is not an %s address or prefix", st->src,
				    sp->ipv6 ? "IPv6" : "IPv4");
		snprintf(p, sizeof(p), "spec.streams[%zu].dst", i);
		if (get_str(e, p, json_object_get(o, "dst"), st->dst, sizeof(st->dst)))
			return -1;
		if (fg_parse_prefix(st->dst, sp->ipv6, st->dst_ip, &st->dst_hosts))
			return fail(e, p, "\"%s\" is not an %s address or prefix", st->dst,
				    sp->ipv6 ? "IPv6" : "IPv4");
		st->src_port = st->dst_port = 1024;
		if ((v = json_object_get(o, "src_port"))) {
			snprintf(p, sizeof(p), "spec.streams[%zu].src_port", i);
			if (get_int(e, p, v, 1, 65535, &x))
				return -1;
			st->src_port = (uint32_t)x;
		}
		if ((v = json_object_get(o, "dst_port"))) {
			snprintf(p, sizeof(p), "spec.streams[%zu].dst_port", i);
			if (get_int(e, p, v, 1, 65535, &x))
				return -1;
			st->dst_port = (uint32_t)x;
		}
	}
	sp->nstreams = (int)json_array_size(arr);
	return 0;
}

static int parse_profile(struct perr *e, json_t *o, struct fg_spec *sp)
{
	static const char *const keys[] = {"l3", "frame_size", "flows", "vary", "port_pattern",
					   NULL};
	char s[32], p[64];
	long long x;
	size_t i;
	json_t *v;

	if (only_keys(e, "spec.profile", o, keys))
		return -1;
	sp->ipv6 = 0;
	if ((v = json_object_get(o, "l3"))) {
		if (get_str(e, "spec.profile.l3", v, s, sizeof(s)))
			return -1;
		if (!strcmp(s, "ipv6"))
			sp->ipv6 = 1;
		else if (strcmp(s, "ipv4"))
			return fail(e, "spec.profile.l3", "\"%s\" is not ipv4 or ipv6", s);
	}
	v = json_object_get(o, "frame_size");
	if (!v)
		return fail(e, "spec.profile.frame_size", "is required");
	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "imix"))
			return fail(e, "spec.profile.frame_size",
				    "\"%s\" is not a size in bytes or \"imix\"", json_string_value(v));
		sp->frame_size = 0;
	} else {
		long long lo = sp->ipv6 ? FG_MIN_FRAME_IP6 : FG_MIN_FRAME_IP4;

		if (get_int(e, "spec.profile.frame_size", v, 64, FG_MAX_FRAME, &x))
			return -1;
		if (x < lo)
			return fail(e, "spec.profile.frame_size",
				    "%lld is below %lld, the smallest IPv6 UDP frame with the "
				    "16 B fwdgen signature (incl. 4 B FCS)", x, lo);
		sp->frame_size = (uint32_t)x;
	}
	sp->flows = 1;
	if ((v = json_object_get(o, "flows"))) {
		if (get_int(e, "spec.profile.flows", v, 1, 1LL << 24, &x))
			return -1;
		sp->flows = (uint32_t)x;
	}
	sp->vary = FG_VARY_SRC_IP;
	if ((v = json_object_get(o, "vary"))) {
		json_t *it;

		if (!json_is_array(v))
			return fail(e, "spec.profile.vary", "must be an array of field names");
		sp->vary = 0;
		json_array_foreach(v, i, it) {
			snprintf(p, sizeof(p), "spec.profile.vary[%zu]", i);
			if (get_str(e, p, it, s, sizeof(s)))
				return -1;
			if (!strcmp(s, "src_ip"))
				sp->vary |= FG_VARY_SRC_IP;
			else if (!strcmp(s, "dst_ip"))
				sp->vary |= FG_VARY_DST_IP;
			else if (!strcmp(s, "src_port"))
				sp->vary |= FG_VARY_SRC_PORT;
			else if (!strcmp(s, "dst_port"))
				sp->vary |= FG_VARY_DST_PORT;
			else
				return fail(e, p, "\"%s\" is not one of src_ip, dst_ip, src_port, dst_port", s);
		}
	}
	sp->port_pattern = FG_PORTS_SEQUENTIAL;
	if ((v = json_object_get(o, "port_pattern"))) {
		if (get_str(e, "spec.profile.port_pattern", v, s, sizeof(s)))
			return -1;
		if (!strcmp(s, "rfc4814"))
			sp->port_pattern = FG_PORTS_RFC4814;
		else if (strcmp(s, "sequential"))
			return fail(e, "spec.profile.port_pattern", "\"%s\" is not sequential or rfc4814", s);
	}
	return 0;
}

static int parse_cpus(struct perr *e, json_t *o, struct fg_spec *sp)
{
	static const char *const keys[] = {"tx", "rx", NULL};
	static const char *const names[] = {"tx", "rx"};
	char p[64];
	long long x;
	size_t i;
	int k;
	json_t *arr, *it;

	if (only_keys(e, "spec.cpus", o, keys))
		return -1;
	for (k = 0; k < 2; k++) {
		int *out = k ? sp->rx_cpus : sp->tx_cpus, *n = k ? &sp->nrx_cpus : &sp->ntx_cpus;

		arr = json_object_get(o, names[k]);
		if (!arr)
			continue;
		snprintf(p, sizeof(p), "spec.cpus.%s", names[k]);
		if (!json_is_array(arr) || json_array_size(arr) > FG_MAX_CPUS)
			return fail(e, p, "must be an array of at most %d CPU numbers", FG_MAX_CPUS);
		json_array_foreach(arr, i, it) {
			snprintf(p, sizeof(p), "spec.cpus.%s[%zu]", names[k], i);
			if (get_int(e, p, it, 0, 4095, &x))
				return -1;
			out[i] = (int)x;
		}
		*n = (int)json_array_size(arr);
	}
	return 0;
}

int fg_spec_parse(const char *text, size_t len, struct fg_spec *sp, char *err, size_t errlen)
{
	static const char *const keys[] = {"ports", "streams", "profile", "load_pps",
					   "duration_s", "warmup_s", "drain_s", "latency",
					   "cpus", "samples", "pacer", NULL};
	struct perr e = {err, errlen};
	json_error_t je;
	json_t *root, *v;
	int rc = -1;
	int s;

	memset(sp, 0, sizeof(*sp));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "spec: invalid JSON at line %d column %d: %s", je.line,
			 je.column, je.text);
		return -1;
	}
	if (only_keys(&e, "spec", root, keys))
		goto out;
	if (!(v = json_object_get(root, "profile"))) {
		fail(&e, "spec.profile", "is required");
		goto out;
	}
	if (parse_profile(&e, v, sp))
		goto out;
	if (!(v = json_object_get(root, "ports"))) {
		fail(&e, "spec.ports", "is required");
		goto out;
	}
	if (parse_ports(&e, v, sp))
		goto out;
	if (!(v = json_object_get(root, "streams"))) {
		fail(&e, "spec.streams", "is required");
		goto out;
	}
	if (parse_streams(&e, v, sp))
		goto out;
	v = json_object_get(root, "load_pps");
	if (!v) {
		fail(&e, "spec.load_pps", "is required");
		goto out;
	}
	if (json_is_string(v) && !strcmp(json_string_value(v), "max")) {
		sp->load_pps = 0;
	} else if (get_num(&e, "spec.load_pps", v, 1, 1e9, &sp->load_pps)) {
		goto out;
	}
	if (!(v = json_object_get(root, "duration_s"))) {
		fail(&e, "spec.duration_s", "is required");
		goto out;
	}
	if (get_num(&e, "spec.duration_s", v, 0.001, 86400, &sp->duration_s))
		goto out;
	sp->warmup_s = 0;
	if ((v = json_object_get(root, "warmup_s")) &&
	    get_num(&e, "spec.warmup_s", v, 0, 3600, &sp->warmup_s))
		goto out;
	sp->drain_s = 0.2;
	if ((v = json_object_get(root, "drain_s")) &&
	    get_num(&e, "spec.drain_s", v, 0, 60, &sp->drain_s))
		goto out;
	if (sp->load_pps > 0 && sp->load_pps * sp->duration_s > 4.0e9) {
		fail(&e, "spec.duration_s", "%g s at %g pps is over 4e9 frames per stream",
		     sp->duration_s, sp->load_pps);
		goto out;
	}
	sp->latency_pps = 9000;
	if ((v = json_object_get(root, "latency")) && !json_is_null(v)) {
		static const char *const lkeys[] = {"enabled", "rate_pps", NULL};
		json_t *w;

		if (only_keys(&e, "spec.latency", v, lkeys))
			goto out;
		if ((w = json_object_get(v, "enabled"))) {
			if (!json_is_boolean(w)) {
				fail(&e, "spec.latency.enabled", "must be true or false");
				goto out;
			}
			sp->latency_enabled = json_is_true(w);
		}
		if ((w = json_object_get(v, "rate_pps")) &&
		    get_num(&e, "spec.latency.rate_pps", w, 1, 1e6, &sp->latency_pps))
			goto out;
	}
	if ((v = json_object_get(root, "cpus")) && parse_cpus(&e, v, sp))
		goto out;
	if ((v = json_object_get(root, "samples"))) {
		if (!json_is_boolean(v)) {
			fail(&e, "spec.samples", "must be true or false");
			goto out;
		}
		sp->samples = json_is_true(v);
	}
	if ((v = json_object_get(root, "pacer"))) {
		static const char *const pacers[] = {"auto", "kernel", "user"};
		char name[16];
		int k;

		if (get_str(&e, "spec.pacer", v, name, sizeof(name)))
			goto out;
		for (k = 0; k < 3 && strcmp(name, pacers[k]); k++)
			;
		if (k == 3) {
			fail(&e, "spec.pacer", "\"%s\" is not auto, kernel or user", name);
			goto out;
		}
		sp->pacer = (enum fg_pacer)k;
	}
	s = sp->nstreams * (sp->latency_enabled ? 2 : 1);
	if (s > FG_MAX_STREAMS) {
		fail(&e, "spec.streams", "%d streams with latency streams exceed %d", s, FG_MAX_STREAMS);
		goto out;
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}
