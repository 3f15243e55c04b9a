/* SPDX-License-Identifier: MIT */
#include "fg_memif.h"

/* libmemif's own header, for the RX queue's ring and position: it is built
 * from the same source in the same build, so the layout always matches */
#define HAVE_MEMFD_CREATE 1
#include <memif_private.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int fg_mif_rx_pending(memif_conn_handle_t conn)
{
	memif_connection_t *c = conn;
	memif_queue_t *q;
	uint16_t cur, last;

	if (!c || !c->control_channel || !c->rx_queues || !c->rx_queues_num)
		return 1; /* let rx_burst say what is wrong */
	q = &c->rx_queues[0];
	if (c->args.is_master) {
		cur = q->last_head;
		last = __atomic_load_n(&q->ring->head, __ATOMIC_ACQUIRE);
	} else {
		cur = q->last_tail;
		last = __atomic_load_n(&q->ring->tail, __ATOMIC_ACQUIRE);
	}
	return cur != last;
}

const char *fg_mif_role(const struct fg_mif_if *i)
{
	return i->master ? "master" : "slave";
}

int fg_mif_log2_ring(uint64_t ring_size)
{
	int l;

	for (l = 1; l <= FG_MIF_MAX_LOG2_RING; l++)
		if (ring_size == 1ull << l)
			return l;
	return -1;
}

uint64_t fg_mif_region_bytes(uint32_t ring_size, uint32_t buffer_size)
{
	uint64_t rings = 2 * (sizeof(memif_ring_t) + sizeof(memif_desc_t) * (uint64_t)ring_size);

	return rings + 2ull * ring_size * buffer_size;
}

static int is_abstract(const char *path)
{
	return path[0] == '@';
}

/* ---- fds libmemif hands over ------------------------------------------ */

static struct fg_mif_fd *fd_find(struct fg_mif_ctl *c, int fd)
{
	int k;

	for (k = 0; k < c->nfds; k++)
		if (c->fds[k].fd == fd)
			return &c->fds[k];
	return NULL;
}

/* libmemif's memif_control_fd_update_t: start, change or stop watching fd.
 * The event data of a dropped fd is freed here (libmemif never frees it). */
static int on_fd_update(memif_fd_event_t fde, void *ctx)
{
	struct fg_mif_ctl *c = ctx;
	struct epoll_event ev;
	struct fg_mif_fd *f = fd_find(c, fde.fd);

	if (fde.type & MEMIF_FD_EVENT_DEL) {
		if (!f)
			return 0; /* an interrupt fd: never watched */
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, fde.fd, NULL);
		free(f->fdata);
		*f = c->fds[--c->nfds];
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	if (fde.type & MEMIF_FD_EVENT_READ)
		ev.events |= EPOLLIN;
	if (fde.type & MEMIF_FD_EVENT_WRITE)
		ev.events |= EPOLLOUT;
	ev.data.ptr = fde.private_ctx;
	if (fde.type & MEMIF_FD_EVENT_MOD) {
		if (!f)
			return -1;
		if (fde.private_ctx && fde.private_ctx != f->fdata) {
			free(f->fdata);
			f->fdata = fde.private_ctx;
		}
		ev.data.ptr = f->fdata;
		return epoll_ctl(c->epfd, EPOLL_CTL_MOD, fde.fd, &ev) ? -1 : 0;
	}
	if (f) {
		/* the number of an fd libmemif closed without telling (its
		 * listener's error path frees the event data and closes the
		 * accepted fd): the old entry is stale, its data already freed */
		f->fdata = fde.private_ctx;
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, fde.fd, NULL);
		return epoll_ctl(c->epfd, EPOLL_CTL_ADD, fde.fd, &ev) ? -1 : 0;
	}
	if (c->nfds >= FG_MIF_MAX_FDS)
		return -1;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fde.fd, &ev))
		return -1;
	c->fds[c->nfds].fd = fde.fd;
	c->fds[c->nfds].fdata = fde.private_ctx;
	c->nfds++;
	return 0;
}

/* ---- connection callbacks --------------------------------------------- */

static int on_connect(memif_conn_handle_t conn, void *ctx)
{
	struct fg_mif_if *i = ctx;
	memif_details_t md;
	char buf[2048];

	/* the rings' size: a slave's own, a master's from the peer */
	memset(&md, 0, sizeof(md));
	i->ring_rx = i->ring_tx = 0;
	if (memif_get_details(conn, &md, buf, sizeof(buf)) == MEMIF_ERR_SUCCESS) {
		if (md.rx_queues_num && md.rx_queues)
			i->ring_rx = md.rx_queues[0].ring_size;
		if (md.tx_queues_num && md.tx_queues)
			i->ring_tx = md.tx_queues[0].ring_size;
	}
	i->up = 1;
	i->ups++;
	i->why[0] = 0;
	if (i->on_up)
		i->on_up(i);
	return 0;
}

/* Also called for a handshake that failed and at memif_delete(). */
static int on_disconnect(memif_conn_handle_t conn, void *ctx)
{
	struct fg_mif_if *i = ctx;
	memif_details_t md;
	char buf[2048];
	int was_up = i->up;

	if (i->closing)
		return 0;
	memset(&md, 0, sizeof(md));
	if (memif_get_details(conn, &md, buf, sizeof(buf)) == MEMIF_ERR_SUCCESS && md.error &&
	    md.error[0])
		snprintf(i->why, sizeof(i->why), "the peer disconnected: \"%s\"", (char *)md.error);
	else
		snprintf(i->why, sizeof(i->why), "the peer closed the control connection%s",
			 was_up ? "" : " during the handshake");
	i->up = 0;
	if (was_up) {
		i->downs++;
		if (i->on_down)
			i->on_down(i);
	}
	return 0;
}

/* ---- sockets ---------------------------------------------------------- */

/* A master's socket path: free, or a stale socket file nobody listens on
 * (removed); refused when a process listens there or it is not a socket. */
static int check_path(const struct fg_mif_if *i, char *err, size_t errlen)
{
	struct sockaddr_un a;
	struct stat st;
	char dir[sizeof(i->path)];
	int fd, rc;

	if (is_abstract(i->path))
		return 0;
	snprintf(dir, sizeof(dir), "%s", i->path);
	if (stat(dirname(dir), &st) || !S_ISDIR(st.st_mode)) {
		errf(err, errlen, "memif %s: socket %s: directory %s does not exist", i->label,
		     i->path, dir);
		return -ENOENT;
	}
	if (lstat(i->path, &st)) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		errf(err, errlen, "memif %s: socket %s: stat: %s", i->label, i->path, strerror(-rc));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		errf(err, errlen, "memif %s: socket %s exists and is not a socket: remove it or "
		     "choose another path", i->label, i->path);
		return -EEXIST;
	}
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", i->path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		errf(err, errlen, "memif %s: socket(AF_UNIX): %s", i->label, strerror(-rc));
		return rc;
	}
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a)) ? -errno : 0;
	close(fd);
	if (rc == -ECONNREFUSED) {
		/* a socket file nobody listens on: left by a killed process */
		if (unlink(i->path) && errno != ENOENT) {
			rc = -errno;
			errf(err, errlen, "memif %s: socket %s is stale and cannot be removed: %s",
			     i->label, i->path, strerror(-rc));
			return rc;
		}
		return 0;
	}
	errf(err, errlen, "memif %s: socket %s is in use: another process listens on it; stop "
	     "it or choose another path", i->label, i->path);
	return -EADDRINUSE;
}

/* A slave's shared memory, tried before libmemif creates it (it does not
 * check its own memfd/mmap calls). */
static int probe_region(const struct fg_mif_if *i, char *err, size_t errlen)
{
	uint64_t bytes = fg_mif_region_bytes(1u << i->log2_ring, i->buffer_size);
	int fd = memfd_create("fwdbench memif probe", MFD_CLOEXEC), rc = 0;
	void *m;

	if (fd < 0) {
		rc = -errno;
		errf(err, errlen, "memif %s: memfd_create: %s", i->label, strerror(-rc));
		return rc;
	}
	if (ftruncate(fd, (off_t)bytes)) {
		rc = -errno;
	} else {
		m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			rc = -errno;
		else
			munmap(m, bytes);
	}
	close(fd);
	if (rc)
		errf(err, errlen, "memif %s: the shared memory of ring size %u x buffer size %u "
		     "(%llu bytes) is refused: %s; use a smaller ring_size or buffer_size",
		     i->label, 1u << i->log2_ring, i->buffer_size, (unsigned long long)bytes,
		     strerror(-rc));
	return rc;
}

static int sock_get(struct fg_mif_ctl *c, struct fg_mif_if *i, struct fg_mif_sock **out,
		    char *err, size_t errlen)
{
	memif_socket_args_t sa;
	struct fg_mif_sock *s;
	int k, rc;

	for (k = 0; k < c->nsocks; k++) {
		s = &c->socks[k];
		/* one socket per path and role: both ends of a pair may be here */
		if (!strcmp(s->path, i->path) && s->master == i->master) {
			*out = s;
			return 0;
		}
	}
	if (c->nsocks >= FG_MIF_MAX_IF) {
		errf(err, errlen, "memif %s: too many sockets", i->label);
		return -E2BIG;
	}
	if (i->master && (rc = check_path(i, err, errlen)))
		return rc;
	memset(&sa, 0, sizeof(sa));
	snprintf(sa.path, sizeof(sa.path), "%s", i->path);
	snprintf(sa.app_name, sizeof(sa.app_name), "%s", c->app);
	sa.on_control_fd_update = on_fd_update;
	if (!i->master && c->retry_ms) {
		sa.connection_request_timer.it_value.tv_nsec = (long)c->retry_ms * 1000000L;
		sa.connection_request_timer.it_interval = sa.connection_request_timer.it_value;
		while (sa.connection_request_timer.it_interval.tv_nsec >= 1000000000L) {
			sa.connection_request_timer.it_interval.tv_nsec -= 1000000000L;
			sa.connection_request_timer.it_interval.tv_sec++;
		}
		sa.connection_request_timer.it_value = sa.connection_request_timer.it_interval;
	}
	s = &c->socks[c->nsocks];
	memset(s, 0, sizeof(*s));
	rc = memif_create_socket(&s->h, &sa, c);
	if (rc != MEMIF_ERR_SUCCESS) {
		errf(err, errlen, "memif %s: memif_create_socket(%s): %s", i->label, i->path,
		     memif_strerror(rc));
		return -EINVAL;
	}
	snprintf(s->path, sizeof(s->path), "%s", i->path);
	s->master = i->master;
	if (i->ext)
		memif_register_external_region(s->h, i->ext->add, i->ext->get_addr, i->ext->del,
					       i->ext->buffer_offset);
	c->nsocks++;
	*out = s;
	return 0;
}

int fg_mif_ctl_init(struct fg_mif_ctl *c, const char *app, uint32_t retry_ms, char *err,
		    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->app = app;
	c->retry_ms = retry_ms;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0) {
		int rc = -errno;

		errf(err, errlen, "memif: epoll_create1: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

int fg_mif_add(struct fg_mif_ctl *c, struct fg_mif_if *i, char *err, size_t errlen)
{
	memif_conn_args_t a;
	struct fg_mif_sock *s;
	int k, rc;

	if (c->nifs >= FG_MIF_MAX_IF) {
		errf(err, errlen, "memif %s: at most %d memif interfaces", i->label, FG_MIF_MAX_IF);
		return -E2BIG;
	}
	for (k = 0; k < c->nifs; k++) {
		if (!strcmp(c->ifs[k]->path, i->path) && c->ifs[k]->id == i->id &&
		    c->ifs[k]->master == i->master) {
			errf(err, errlen, "memif %s: interface id %u on %s is %s too", i->label, i->id,
			     i->path, c->ifs[k]->label);
			return -EEXIST;
		}
	}
	if (!i->master && (rc = probe_region(i, err, errlen)))
		return rc;
	if ((rc = sock_get(c, i, &s, err, errlen)))
		return rc;
	memset(&a, 0, sizeof(a));
	a.socket = s->h;
	a.is_master = (uint8_t)(i->master != 0);
	a.interface_id = i->id;
	a.num_s2m_rings = 1;
	a.num_m2s_rings = 1;
	a.log2_ring_size = i->log2_ring;
	a.buffer_size = i->buffer_size;
	a.mode = MEMIF_INTERFACE_MODE_ETHERNET;
	snprintf((char *)a.interface_name, sizeof(a.interface_name), "%.31s", i->label);
	i->ctl = c;
	rc = memif_create(&i->conn, &a, on_connect, on_disconnect, NULL, i);
	if (rc != MEMIF_ERR_SUCCESS) {
		errf(err, errlen, "memif %s: memif_create(%s, id %u, %s): %s", i->label, i->path,
		     i->id, fg_mif_role(i), memif_strerror(rc));
		i->conn = NULL;
		return -EINVAL;
	}
	if (i->master && !is_abstract(i->path))
		s->bound = 1;
	c->ifs[c->nifs++] = i;
	return 0;
}

/* Forget fds libmemif closed without dropping them (its listener's error
 * path: it freed their event data too), before their numbers come back. */
static void drop_closed(struct fg_mif_ctl *c)
{
	int k;

	for (k = 0; k < c->nfds;) {
		if (fcntl(c->fds[k].fd, F_GETFD) < 0 && errno == EBADF)
			c->fds[k] = c->fds[--c->nfds];
		else
			k++;
	}
}

void fg_mif_del(struct fg_mif_ctl *c, struct fg_mif_if *i)
{
	int k;

	i->closing = 1;
	if (i->conn)
		memif_delete(&i->conn);
	i->up = 0;
	for (k = 0; k < c->nifs; k++)
		if (c->ifs[k] == i)
			c->ifs[k] = c->ifs[--c->nifs];
}

int fg_mif_poll(struct fg_mif_ctl *c, int timeout_ms)
{
	struct epoll_event ev;
	memif_fd_event_type_t t = 0;
	int n = epoll_wait(c->epfd, &ev, 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (!n)
		return 0;
	if (ev.events & EPOLLIN)
		t |= MEMIF_FD_EVENT_READ;
	if (ev.events & EPOLLOUT)
		t |= MEMIF_FD_EVENT_WRITE;
	if (ev.events & (EPOLLERR | EPOLLHUP))
		t |= MEMIF_FD_EVENT_ERROR | MEMIF_FD_EVENT_READ;
	if (c->lock)
		c->lock(c->lock_arg, 1);
	memif_control_fd_handler(ev.data.ptr, t);
	if (c->lock)
		c->lock(c->lock_arg, 0);
	drop_closed(c);
	return 1;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Why a slave's master is not there: no file, or nobody listens. */
static void slave_probe(const struct fg_mif_if *i, char *out, size_t n)
{
	struct sockaddr_un a;
	struct stat st;
	int fd;

	if (i->why[0]) {
		snprintf(out, n, "%s", i->why);
		return;
	}
	if (!is_abstract(i->path) && stat(i->path, &st)) {
		snprintf(out, n, "no socket file at %s (no master started there)", i->path);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", i->path);
	if (is_abstract(i->path))
		a.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)))
		snprintf(out, n, "connect(%s): %s", i->path, strerror(errno));
	else
		snprintf(out, n, "a master listens on %s but did not accept interface id %u "
			 "(another id, or the id is taken)", i->path, i->id);
	if (fd >= 0)
		close(fd);
}

int fg_mif_wait_up(struct fg_mif_ctl *c, double timeout_s, volatile sig_atomic_t *stop,
		   char *err, size_t errlen)
{
	double end = mono_s() + timeout_s;
	char why[200];
	int k;

	for (;;) {
		struct fg_mif_if *down = NULL;

		for (k = 0; k < c->nifs && !down; k++)
			if (!c->ifs[k]->up)
				down = c->ifs[k];
		if (!down)
			return 0;
		if (stop && *stop) {
			errf(err, errlen, "memif %s: interrupted while waiting for the peer",
			     down->label);
			return -EINTR;
		}
		if (mono_s() >= end) {
			if (down->master)
				errf(err, errlen, "memif %s: no peer connected within %g s: this side is "
				     "the master and listens on %s for interface id %u; start the slave "
				     "there%s%s", down->label, timeout_s, down->path, down->id,
				     down->why[0] ? "; last attempt: " : "", down->why);
			else {
				slave_probe(down, why, sizeof(why));
				errf(err, errlen, "memif %s: no master answered within %g s: this side "
				     "is the slave and connects to %s as interface id %u: %s",
				     down->label, timeout_s, down->path, down->id, why);
			}
			return -ETIMEDOUT;
		}
		fg_mif_poll(c, 10);
	}
}

memif_ring_t *fg_mif_slave_ring(struct fg_mif_if *i, int s2m)
{
	memif_details_t md;
	memif_region_details_t rd;
	memif_queue_details_t qd;
	char buf[2048];
	memif_ring_t *r;
	size_t ring_bytes;

	memset(&md, 0, sizeof(md));
	if (i->master || !i->up ||
	    memif_get_details(i->conn, &md, buf, sizeof(buf)) != MEMIF_ERR_SUCCESS ||
	    md.regions_num < 1 || !md.regions || md.tx_queues_num < 1 || md.rx_queues_num < 1)
		return NULL;
	/* libmemif packs these after the strings, unaligned: copied out */
	memcpy(&rd, md.regions, sizeof(rd));
	memcpy(&qd, s2m ? md.tx_queues : md.rx_queues, sizeof(qd));
	ring_bytes = sizeof(memif_ring_t) + sizeof(memif_desc_t) * (size_t)qd.ring_size;
	/* libmemif's slave layout: S2M ring 0 first, the M2S rings after all S2M rings */
	r = (memif_ring_t *)((uint8_t *)rd.addr +
			     (s2m ? 0 : (size_t)md.tx_queues_num * ring_bytes));
	if (r->cookie != MEMIF_COOKIE)
		return NULL;
	return r;
}

void fg_mif_stop_retry(struct fg_mif_ctl *c)
{
	struct itimerspec off;
	int k;

	memset(&off, 0, sizeof(off));
	for (k = 0; k < c->nsocks; k++)
		if (!c->socks[k].master)
			memif_set_connection_request_timer(c->socks[k].h, off);
}

void fg_mif_ctl_fini(struct fg_mif_ctl *c)
{
	int k;

	while (c->nifs)
		fg_mif_del(c, c->ifs[0]);
	for (k = 0; k < c->nsocks; k++) {
		struct fg_mif_sock *s = &c->socks[k];
		/* libmemif neither closes the listener nor removes its file */
		int lfd = memif_get_listener_fd(s->h);

		memif_delete_socket(&s->h);
		if (lfd >= 0)
			close(lfd);
		if (s->bound)
			unlink(s->path);
	}
	c->nsocks = 0;
	/* what libmemif never dropped (a slave socket's timer fd) */
	drop_closed(c);
	for (k = 0; k < c->nfds; k++) {
		close(c->fds[k].fd);
		free(c->fds[k].fdata);
	}
	c->nfds = 0;
	if (c->epfd >= 0)
		close(c->epfd);
	c->epfd = -1;
}
