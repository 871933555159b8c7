#ifndef STATS_H
#define STATS_H
#include "ring.h"

long ring_sum(const Ring *ring);
int ring_max(const Ring *ring, int *out);
int ring_above(const Ring *ring, int threshold);
#endif
