#include <stdio.h>
#include "text.h"

/* "1,2,3" into buf; returns the length written (0 when buf is NULL). */
size_t ring_format(const Ring *ring, char *buf, size_t cap) {
    if (buf == NULL || cap == 0) {
        return (0);
    }
    size_t used = 0;
    int value;
    buf[0] = '\0';
    for (size_t i = 0; i < ring_count(ring); i += 1) {
        ring_get(ring, i, &value);
        int n = snprintf(buf + used, cap - used, i == 0 ? "%d" : ",%d", value);
        if (n < 0 || (size_t)n >= cap - used) {
            break;
        }
        used += (size_t)n;
    }
    return (used);
}

int count_char(const char *text, char c) {
    int n = 0;
    if (text == NULL) {
        return (0);
    }
    for (const char *p = text; *p != '\0'; p += 1) {
        if (*p == c) {
            n += 1;
        }
    }
    return (n);
}
