/* SPDX-License-Identifier: MIT */
/*
 * The memif control plane over libmemif (FD.io VPP's reference library),
 * shared by fwdgen's memif backend, its drop sink and vfwd's memif ports.
 *
 * One fg_mif_ctl per process: an epoll over the control fds of every memif
 * socket (libmemif hands them over through its fd-update callback; their
 * event data is freed here when libmemif drops them), the socket files (a
 * master's path is checked before it binds: in use, stale, not a socket;
 * and removed at the end), the wait for every peer to connect, and why a
 * peer went away. Data paths (rx/tx bursts) stay with the callers; a
 * caller whose data runs in other threads passes a lock callback, held
 * around every control event, since a disconnect frees the rings.
 */
#ifndef FWDBENCH_FG_MEMIF_H
#define FWDBENCH_FG_MEMIF_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <memif.h>      /* the memif protocol: rings, descriptors */
#include <libmemif.h>

#define FG_MIF_MAX_IF 16
#define FG_MIF_MAX_FDS 64
#define FG_MIF_MAX_LOG2_RING 14   /* libmemif's largest ring: 2^14 slots */
#define FG_MIF_MIN_BUFFER 128     /* smallest buffer we accept [bytes] */

struct fg_mif_ctl;

/* External region (zero copy): libmemif's callbacks, for a slave whose
 * buffers are the caller's own memory. */
struct fg_mif_ext {
	memif_add_external_region_t *add;
	memif_get_external_region_addr_t *get_addr;
	memif_del_external_region_t *del;
	memif_get_external_buffer_offset_t *buffer_offset;
};

struct fg_mif_if {
	/* set by the caller before fg_mif_add() */
	char label[64];           /* for messages, e.g. "spec.ports[0] (tg0)" */
	char path[108];           /* socket path; "@name" for an abstract socket */
	uint32_t id;              /* interface id on that socket */
	int master;               /* 1: listens (and maps the peer's memory) */
	uint8_t log2_ring;        /* slave: ring size 2^log2_ring slots */
	uint16_t buffer_size;     /* slave: bytes per buffer */
	const struct fg_mif_ext *ext;   /* slave: buffers in the caller's memory */
	void *user;
	void (*on_up)(struct fg_mif_if *i);    /* in the control thread, locked */
	void (*on_down)(struct fg_mif_if *i);  /* before libmemif frees the rings */
	/* state */
	memif_conn_handle_t conn;
	struct fg_mif_ctl *ctl;
	int up;                   /* connected */
	uint32_t ring_rx, ring_tx; /* slots of our queue 0 rings, from the handshake */
	unsigned ups, downs;      /* connections made and ended */
	int closing;
	char why[160];            /* why the last connection ended */
};

struct fg_mif_sock {
	memif_socket_handle_t h;
	char path[108];
	int master, bound;        /* bound: we created the socket file */
};

struct fg_mif_fd {
	int fd;
	void *fdata;              /* libmemif's event data, passed back to it */
};

struct fg_mif_ctl {
	int epfd;
	const char *app;          /* app name the peer sees (<= 31 chars) */
	uint32_t retry_ms;        /* slaves: connection request period */
	struct fg_mif_sock socks[FG_MIF_MAX_IF];
	int nsocks;
	struct fg_mif_if *ifs[FG_MIF_MAX_IF];
	int nifs;
	struct fg_mif_fd fds[FG_MIF_MAX_FDS];
	int nfds;
	void (*lock)(void *arg, int on);   /* held around every control event */
	void *lock_arg;
};

/* 0 or -errno (err says which call). retry_ms: how often a slave asks a
 * master that is not there yet. */
int fg_mif_ctl_init(struct fg_mif_ctl *c, const char *app, uint32_t retry_ms, char *err,
		    size_t errlen);
/* Create interface i (and its socket, shared by every interface of the same
 * path and role). A master checks its path first. 0 or -errno. */
int fg_mif_add(struct fg_mif_ctl *c, struct fg_mif_if *i, char *err, size_t errlen);
/* Delete interface i (its connection ends, on_down not called). */
void fg_mif_del(struct fg_mif_ctl *c, struct fg_mif_if *i);
/* Handle at most one control event, waiting up to timeout_ms. 1 if one was
 * handled, 0 if none, -errno. */
int fg_mif_poll(struct fg_mif_ctl *c, int timeout_ms);
/* Run the control loop until every interface is up, `timeout_s` passes or
 * *stop is set. 0, or -ETIMEDOUT/-EINTR with err naming the interface, the
 * socket, the side we play and what the peer did. */
int fg_mif_wait_up(struct fg_mif_ctl *c, double timeout_s, volatile sig_atomic_t *stop,
		   char *err, size_t errlen);
/* Slaves stop asking: for a process whose peers must not come back (a
 * trial), once every interface is up; the timer's events would otherwise
 * take the data locks 1000/retry_ms times a second. */
void fg_mif_stop_retry(struct fg_mif_ctl *c);
/* Delete every interface and socket, close their fds, remove the socket
 * files this process bound. */
void fg_mif_ctl_fini(struct fg_mif_ctl *c);

/* Segments b[0..n) that make whole frames: a chain (MEMIF_BUFFER_FLAG_NEXT)
 * cut by the end of an rx burst is left for the next one. */
static inline uint16_t fg_mif_whole(const memif_buffer_t *b, uint16_t n)
{
	while (n && (b[n - 1].flags & MEMIF_BUFFER_FLAG_NEXT))
		n--;
	return n;
}

/* Frames wait on the interface's RX ring (queue 0). libmemif's rx_burst
 * reads the queue's eventfd on every call, a syscall even in polling mode
 * (about 60 % of fwdgen's polling loop by perf): callers look first. */
int fg_mif_rx_pending(memif_conn_handle_t conn);

/* "master"/"slave" */
const char *fg_mif_role(const struct fg_mif_if *i);
/* log2 of a power of two in 2..2^14, or -1 */
int fg_mif_log2_ring(uint64_t ring_size);
/* Bytes of the shared memory a slave creates: rings and buffers of one
 * S2M and one M2S ring (libmemif's layout). */
uint64_t fg_mif_region_bytes(uint32_t ring_size, uint32_t buffer_size);
/* The ring of a slave's queue from the memif protocol's layout (region 0:
 * S2M rings, then M2S rings); NULL before the connection is up. Lets a
 * zero-copy slave see how far the master consumed its TX ring. */
memif_ring_t *fg_mif_slave_ring(struct fg_mif_if *i, int s2m);

#endif
