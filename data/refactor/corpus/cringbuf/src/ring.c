#include <stdlib.h>
#include "ring.h"

Ring *ring_new(size_t size) {
    Ring *ring = malloc(sizeof(Ring));
    if (ring == NULL) {
        return NULL;
    }
    ring->data = calloc(size, sizeof(int));
    if (ring->data == NULL) {
        free(ring);
        return (NULL);
    }
    ring->size = size;
    ring->start = 0;
    ring->count = 0;
    return (ring);
}

void ring_free(Ring *ring) {
    if (ring == NULL) {
        return;
    }
    free(ring->data);
    free(ring);
}

/* Returns 1 when a value was dropped to make room. */
int ring_push(Ring *ring, int value) {
    size_t end = (ring->start + ring->count) % ring->size;
    ring->data[end] = value;
    if (ring->count < ring->size) {
        ring->count += 1;
        return (0);
    }
    ring->start = (ring->start + 1) % ring->size;
    return (1);
}

int ring_get(const Ring *ring, size_t index, int *out) {
    if (out == NULL || index >= ring->count) {
        return (-1);
    }
    *out = ring->data[(ring->start + index) % ring->size];
    return (0);
}

size_t ring_count(const Ring *ring) {
    return (ring->count);
}
