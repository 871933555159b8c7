#include <stddef.h>
#include "stats.h"

long ring_sum(const Ring *ring) {
    long sum = 0;
    int value;
    for (size_t i = 0; i < ring_count(ring); i += 1) {
        ring_get(ring, i, &value);
        sum += value;
    }
    return (sum);
}

int ring_max(const Ring *ring, int *out) {
    if (out == NULL || ring_count(ring) == 0) {
        return (-1);
    }
    int best;
    int value;
    ring_get(ring, 0, &best);
    for (size_t i = 1; i < ring_count(ring); i += 1) {
        ring_get(ring, i, &value);
        if (value > best) {
            best = value;
        }
    }
    *out = best;
    return (0);
}

int ring_above(const Ring *ring, int threshold) {
    int n = 0;
    int value;
    for (size_t i = 0; i < ring_count(ring); i += 1) {
        ring_get(ring, i, &value);
        if (value > threshold) {
            n += 1;
        }
    }
    return (n);
}
