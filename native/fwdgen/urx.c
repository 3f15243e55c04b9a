/* SPDX-License-Identifier: MIT */
#include "urx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int fg_urx_init(struct fg_urx *u, struct fg_run *r, const struct fg_rxops *mine,
		char *err, size_t errlen)
{
	int i;

	memset(u, 0, sizeof(*u));
	u->phase = FG_PHASE_NONE;
	for (i = 0; i < r->nstreams; i++) {
		struct fg_stream_rt *s = r->streams[i];

		if (s->rxo != mine)
			continue;
		if (fg_seq_init(&u->seq[i], s->capacity, 1)) {
			fg_errf(err, errlen, "%s: no memory for the sequence bitmap of stream %d",
				mine->name, s->ss->id);
			return -ENOMEM;
		}
		u->have_seq[i] = 1;
	}
	return 0;
}

void fg_urx_frame(struct fg_urx *u, struct fg_run *r, const struct fg_rxops *mine, int port,
		  const uint8_t *buf, uint32_t len, uint32_t rx_ns)
{
	struct fg_rxinfo ri;
	struct fg_stream_rt *s;

	if (!fg_pkt_parse(buf, len, &ri) || ri.magic != r->magic ||
	    ri.stream >= (uint32_t)r->nstreams)
		return;
	s = r->streams[ri.stream];
	if (s->rx_port != port || s->rxo != mine || !u->have_seq[ri.stream] ||
	    ri.phase != __atomic_load_n(&u->phase, __ATOMIC_ACQUIRE))
		return;
	fg_seq_rx(&u->seq[ri.stream], ri.seq, len, rx_ns - ri.ts);
	__atomic_store_n(&u->live[ri.stream], u->seq[ri.stream].packets, __ATOMIC_RELAXED);
}

int fg_urx_collect(struct fg_urx *u, int stream, struct fg_rx_final *o)
{
	struct fg_seq *q = &u->seq[stream];

	memset(o, 0, sizeof(*o));
	o->lat = calloc(1, sizeof(*o->lat));
	if (!o->lat)
		return -ENOMEM;
	if (!u->have_seq[stream])
		return 0;
	o->packets = q->packets;
	o->bytes = q->bytes;
	o->duplicated = q->duplicated;
	o->reordered = q->reordered;
	o->out_of_range = q->out_of_range;
	o->jitter16 = q->jitter16;
	memcpy(o->lat, q->lat, sizeof(*o->lat));
	return 0;
}

void fg_urx_free(struct fg_urx *u)
{
	int i;

	for (i = 0; i < FG_MAX_STREAMS; i++)
		if (u->have_seq[i])
			fg_seq_free(&u->seq[i]);
	memset(u->have_seq, 0, sizeof(u->have_seq));
}
