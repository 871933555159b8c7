#ifndef RING_H
#define RING_H
#include <stddef.h>

/* A fixed-size ring buffer of ints: the oldest value is dropped when it is full. */
typedef struct {
    int *data;
    size_t size;
    size_t start;
    size_t count;
} Ring;

Ring *ring_new(size_t size);
void ring_free(Ring *ring);
int ring_push(Ring *ring, int value);
int ring_get(const Ring *ring, size_t index, int *out);
size_t ring_count(const Ring *ring);
#endif
