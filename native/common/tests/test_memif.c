/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the memif control plane (fg_memif.c) over libmemif: a
 * master and a slave in this process, connected through a socket in a
 * private directory; frames both ways; the socket-file rules (in use,
 * stale, not a socket, no directory); the connect timeout's message; a
 * disconnect; and nothing left behind (socket files, fds).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fg_memif.h"

static int failures, checks;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		checks++;                                                   \
		if (!(cond)) {                                              \
			failures++;                                         \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
		}                                                           \
	} while (0)

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static int downs_seen;

static void on_up(struct fg_mif_if *i)
{
	memif_set_rx_mode(i->conn, MEMIF_RX_MODE_POLLING, 0);
	if (!i->master) /* the slave gives the master its empty buffers */
		memif_refill_queue(i->conn, 0, 1u << i->log2_ring, 0);
}

static void on_down(struct fg_mif_if *i)
{
	(void)i;
	downs_seen++;
}

static void init_if(struct fg_mif_if *i, const char *label, const char *path, uint32_t id,
		    int master)
{
	memset(i, 0, sizeof(*i));
	snprintf(i->label, sizeof(i->label), "%s", label);
	snprintf(i->path, sizeof(i->path), "%s", path);
	i->id = id;
	i->master = master;
	i->log2_ring = 8;
	i->buffer_size = 2048;
	i->on_up = on_up;
	i->on_down = on_down;
}

/* Send n frames of len bytes from a to b; returns how many b received
 * with the right bytes. */
static int send_frames(struct fg_mif_ctl *c, struct fg_mif_if *a, struct fg_mif_if *b, int n,
		       uint16_t len)
{
	memif_buffer_t tx[64], rx[64];
	uint16_t got = 0, sent = 0, k;
	int ok = 0, spins;

	CHECK(!fg_mif_rx_pending(b->conn), "nothing pending before TX");
	CHECK(memif_buffer_alloc(a->conn, 0, tx, (uint16_t)n, &got, len) == MEMIF_ERR_SUCCESS &&
	      got == n, "alloc %d frames: got %u", n, got);
	for (k = 0; k < got; k++) {
		memset(tx[k].data, 0xa0 + k, len);
		tx[k].len = len;
	}
	CHECK(memif_tx_burst(a->conn, 0, tx, got, &sent) == MEMIF_ERR_SUCCESS && sent == got,
	      "tx %u of %u", sent, got);
	CHECK(fg_mif_rx_pending(b->conn), "frames pending after TX");
	for (spins = 0; spins < 1000 && ok < n; spins++) {
		uint16_t r = 0;

		memif_rx_burst(b->conn, 0, rx, 64, &r);
		for (k = 0; k < r; k++) {
			const uint8_t *d = rx[k].data;

			ok += rx[k].len == len && d[0] == (uint8_t)(0xa0 + ok) &&
			      d[len - 1] == (uint8_t)(0xa0 + ok);
		}
		if (r)
			memif_refill_queue(b->conn, 0, r, 0);
		fg_mif_poll(c, 0);
	}
	CHECK(!fg_mif_rx_pending(b->conn), "nothing pending after RX");
	return ok;
}

static void test_pair(const char *dir)
{
	struct fg_mif_ctl c;
	struct fg_mif_if m, s;
	char path[108], err[512] = "";
	struct stat st;
	int fds = count_fds(), rc;

	snprintf(path, sizeof(path), "%s/pair.sock", dir);
	CHECK(fg_mif_ctl_init(&c, "test", 10, err, sizeof(err)) == 0, "ctl init: %s", err);
	init_if(&m, "master", path, 3, 1);
	init_if(&s, "slave", path, 3, 0);
	CHECK(fg_mif_add(&c, &m, err, sizeof(err)) == 0, "add master: %s", err);
	CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode), "the master's socket file exists");
	CHECK(fg_mif_add(&c, &s, err, sizeof(err)) == 0, "add slave: %s", err);
	rc = fg_mif_wait_up(&c, 5, NULL, err, sizeof(err));
	CHECK(rc == 0 && m.up && s.up && m.ups == 1 && s.ups == 1, "both up: %s", err);
	CHECK(send_frames(&c, &m, &s, 60, 60) == 60, "master -> slave, 60 B");
	CHECK(send_frames(&c, &s, &m, 33, 1514) == 33, "slave -> master, 1514 B");
	CHECK(send_frames(&c, &m, &s, 5, 2048) == 5, "a whole buffer");
	/* the slave's S2M ring in its region, as a zero-copy slave reads it */
	{
		memif_ring_t *r = fg_mif_slave_ring(&s, 1);

		CHECK(r && r->cookie == MEMIF_COOKIE && r->tail == 33, "slave S2M ring, tail %u",
		      r ? r->tail : 0);
		CHECK(!fg_mif_slave_ring(&m, 1), "a master has no slave ring");
	}
	/* the slave goes: the master sees it */
	downs_seen = 0;
	fg_mif_del(&c, &s);
	for (int k = 0; k < 100 && m.up; k++)
		fg_mif_poll(&c, 10);
	CHECK(!m.up && m.downs == 1 && downs_seen == 1 && m.why[0], "master saw the slave go: %s",
	      m.why);
	fg_mif_ctl_fini(&c);
	CHECK(stat(path, &st) && errno == ENOENT, "the socket file is removed");
	CHECK(count_fds() == fds, "no fd left: %d before, %d after", fds, count_fds());
}

static void test_socket_files(const char *dir)
{
	struct fg_mif_ctl c, c2;
	struct fg_mif_if a, b, st, f, nd;
	char path[108], err[512] = "";
	struct sockaddr_un un;
	int fd, rc;

	CHECK(fg_mif_ctl_init(&c, "test", 10, err, sizeof(err)) == 0, "ctl init");
	CHECK(fg_mif_ctl_init(&c2, "test", 10, err, sizeof(err)) == 0, "ctl2 init");
	/* in use: another master listens there */
	snprintf(path, sizeof(path), "%s/busy.sock", dir);
	init_if(&a, "a", path, 0, 1);
	init_if(&b, "b", path, 0, 1);
	CHECK(fg_mif_add(&c, &a, err, sizeof(err)) == 0, "first master: %s", err);
	rc = fg_mif_add(&c2, &b, err, sizeof(err));
	CHECK(rc == -EADDRINUSE && strstr(err, "is in use"), "in use: %d %s", rc, err);
	/* the same interface twice in one process */
	rc = fg_mif_add(&c, &b, err, sizeof(err));
	CHECK(rc == -EEXIST && strstr(err, "interface id 0"), "same id twice: %s", err);
	/* a stale socket file (nobody listens): removed, then bound */
	snprintf(path, sizeof(path), "%s/stale.sock", dir);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", path);
	CHECK(bind(fd, (struct sockaddr *)&un, sizeof(un)) == 0, "stale socket bound");
	close(fd);
	init_if(&st, "st", path, 0, 1);
	CHECK(fg_mif_add(&c2, &st, err, sizeof(err)) == 0, "stale file replaced: %s", err);
	/* not a socket */
	snprintf(path, sizeof(path), "%s/file", dir);
	fclose(fopen(path, "w"));
	init_if(&f, "f", path, 1, 1);
	rc = fg_mif_add(&c2, &f, err, sizeof(err));
	CHECK(rc == -EEXIST && strstr(err, "is not a socket"), "not a socket: %s", err);
	unlink(path);
	/* no directory */
	snprintf(path, sizeof(path), "%s/nodir/x.sock", dir);
	init_if(&nd, "nd", path, 1, 1);
	rc = fg_mif_add(&c2, &nd, err, sizeof(err));
	CHECK(rc == -ENOENT && strstr(err, "does not exist"), "no directory: %s", err);
	fg_mif_ctl_fini(&c);
	fg_mif_ctl_fini(&c2);
}

static void test_timeouts(const char *dir)
{
	struct fg_mif_ctl c;
	struct fg_mif_if s, m;
	char path[108], err[512] = "";
	int rc;

	CHECK(fg_mif_ctl_init(&c, "test", 10, err, sizeof(err)) == 0, "ctl init");
	snprintf(path, sizeof(path), "%s/none.sock", dir);
	init_if(&s, "lonely slave", path, 0, 0);
	CHECK(fg_mif_add(&c, &s, err, sizeof(err)) == 0, "slave without master: %s", err);
	rc = fg_mif_wait_up(&c, 0.05, NULL, err, sizeof(err));
	CHECK(rc == -ETIMEDOUT && strstr(err, "lonely slave") && strstr(err, "is the slave") &&
	      strstr(err, "no socket file at"), "slave timeout: %s", err);
	fg_mif_ctl_fini(&c);
	CHECK(fg_mif_ctl_init(&c, "test", 10, err, sizeof(err)) == 0, "ctl init");
	init_if(&m, "lonely master", path, 0, 1);
	CHECK(fg_mif_add(&c, &m, err, sizeof(err)) == 0, "master: %s", err);
	rc = fg_mif_wait_up(&c, 0.05, NULL, err, sizeof(err));
	CHECK(rc == -ETIMEDOUT && strstr(err, "is the master") && strstr(err, path),
	      "master timeout: %s", err);
	fg_mif_ctl_fini(&c);
	/* (a refused region: tests/test_fwdgen_memif.py, under prlimit) */
	CHECK(fg_mif_region_bytes(1024, 2048) ==
	      2 * (sizeof(memif_ring_t) + 16 * 1024) + 2ull * 1024 * 2048,
	      "region bytes %llu", (unsigned long long)fg_mif_region_bytes(1024, 2048));
}

int main(void)
{
	char dir[] = "/tmp/fg-memif-test-XXXXXX";

	CHECK(fg_mif_log2_ring(1024) == 10 && fg_mif_log2_ring(1000) < 0 &&
	      fg_mif_log2_ring(1 << 15) < 0 && fg_mif_log2_ring(2) == 1, "log2 ring");
	{
		memif_buffer_t b[3] = {{.flags = 0}, {.flags = MEMIF_BUFFER_FLAG_NEXT}, {.flags = 0}};

		CHECK(fg_mif_whole(b, 3) == 3 && fg_mif_whole(b, 2) == 1, "whole frames");
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_pair(dir);
	test_socket_files(dir);
	test_timeouts(dir);
	CHECK(rmdir(dir) == 0, "the test directory is empty: %s", strerror(errno));
	printf("test_memif: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
