#include <stdio.h>
#include <string.h>
#include "ring.h"
#include "stats.h"
#include "text.h"

static int passed = 0, failed = 0;
#define CHECK(cond) do { if (cond) { passed++; } else { failed++; \
    printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

int main(void) {
    Ring *ring = ring_new(3);
    CHECK(ring != NULL);
    CHECK(ring_count(ring) == 0);
    int best = 0;
    CHECK(ring_max(ring, &best) == -1);
    CHECK(ring_push(ring, 4) == 0);
    CHECK(ring_push(ring, 9) == 0);
    CHECK(ring_push(ring, 2) == 0);
    CHECK(ring_push(ring, 7) == 1);
    CHECK(ring_count(ring) == 3);
    int v = 0;
    CHECK(ring_get(ring, 0, &v) == 0 && v == 9);
    CHECK(ring_get(ring, 3, &v) == -1);
    CHECK(ring_get(ring, 0, NULL) == -1);
    CHECK(ring_sum(ring) == 18);
    CHECK(ring_max(ring, &best) == 0 && best == 9);
    CHECK(ring_above(ring, 5) == 2);
    char buf[32];
    CHECK(ring_format(ring, buf, sizeof buf) == 5 && strcmp(buf, "9,2,7") == 0);
    CHECK(ring_format(ring, NULL, 4) == 0);
    CHECK(count_char("a,b,,c", ',') == 3);
    CHECK(count_char(NULL, ',') == 0);
    ring_free(ring);
    ring_free(NULL);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
