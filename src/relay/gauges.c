/*
 * gauges.c — what /metrics reads of the relay at scrape time.
 */
#include "relay/relay.h"

void cof_relay_gauges(cof_relay *r, int64_t by_status[4])
{
	for (int i = 0; i < 4; i++)
		by_status[i] = 0;
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	for (rsession *s = r->sessions; s; s = s->next)
		if ((unsigned)s->status < 4)
			by_status[s->status]++;
	pthread_mutex_unlock(&r->mu);
}
