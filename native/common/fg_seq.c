/* SPDX-License-Identifier: MIT */
#include "fg_seq.h"

#include <stdlib.h>
#include <string.h>

int fg_seq_init(struct fg_seq *s, uint32_t capacity, int with_latency)
{
	memset(s, 0, sizeof(*s));
	s->capacity = capacity;
	s->bitmap = calloc((size_t)capacity / 64 + 1, sizeof(uint64_t));
	if (!s->bitmap)
		return -1;
	if (with_latency) {
		s->lat = calloc(1, sizeof(*s->lat));
		if (!s->lat) {
			free(s->bitmap);
			s->bitmap = NULL;
			return -1;
		}
	}
	return 0;
}

void fg_seq_free(struct fg_seq *s)
{
	free(s->bitmap);
	free(s->lat);
	s->bitmap = NULL;
	s->lat = NULL;
}

uint64_t fg_jitter16_update(uint64_t j16, uint32_t prev_transit, uint32_t transit)
{
	int32_t d = (int32_t)(transit - prev_transit);
	uint64_t ad = d < 0 ? (uint64_t)(-(int64_t)d) : (uint64_t)d;

	return j16 + ad - ((j16 + 8) >> 4);
}

void fg_seq_rx(struct fg_seq *s, uint32_t seq, uint32_t len, uint32_t transit)
{
	uint64_t bit;

	if (seq >= s->capacity) {
		s->out_of_range++;
		return;
	}
	bit = 1ULL << (seq % 64);
	if (s->bitmap[seq / 64] & bit) {
		s->duplicated++;
		return;
	}
	s->bitmap[seq / 64] |= bit;
	s->packets++;
	s->bytes += len;
	if (seq < s->next_seq)
		s->reordered++;
	else
		s->next_seq = (uint64_t)seq + 1;
	if (s->have_prev)
		s->jitter16 = fg_jitter16_update(s->jitter16, s->prev_transit, transit);
	s->prev_transit = transit;
	s->have_prev = 1;
	if (s->lat)
		fg_hdr_record(s->lat, transit ? transit : 1, 1);
}
