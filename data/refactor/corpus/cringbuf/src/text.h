#ifndef TEXT_H
#define TEXT_H
#include <stddef.h>
#include "ring.h"

size_t ring_format(const Ring *ring, char *buf, size_t cap);
int count_char(const char *text, char c);
#endif
