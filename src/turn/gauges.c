/*
 * gauges.c — what /metrics reads of the turns at scrape time.
 */
#include "turn/turn.h"

void cof_turns_gauges(cof_turns *ts, int64_t *turns, int64_t *calls)
{
	*turns = *calls = 0;
	if (!ts)
		return;
	pthread_mutex_lock(&ts->mu);
	for (cof_turn *t = ts->list; t; t = t->next) {
		*turns += !t->ended;
		*calls += t->ncalls;
	}
	pthread_mutex_unlock(&ts->mu);
}
