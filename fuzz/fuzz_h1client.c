/* fuzz_h1client.c — libFuzzer target for the HTTP/1.1 client's answer
 * parser (src/lib/net/h1client.c: the status line, headers, Content-Length,
 * chunked bodies, 1xx answers): the input's first byte picks how the rest
 * is cut into reads (1 to 64 bytes, or whole) and whether the server then
 * closes; the bytes are parsed whole and in those pieces, which must give
 * the same outcome and the same body, within what was read. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/net/h1client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (data[0] & 63) + 1;
    int eof = data[0] >> 7 & 1;
    size_t max = data[0] & 64 ? 64 : 1 << 20;       /* a small limit, or a roomy one */
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    long st1, st2;
    char *b1, *b2;
    size_t l1, l2;
    int r1 = pflex_h1_parse_answer(in, len, 0, eof, max, &st1, &b1, &l1);
    int r2 = pflex_h1_parse_answer(in, len, piece, eof, max, &st2, &b2, &l2);
    if (r1 < -4 || r2 < -4 || r1 > 1 || r2 > 1)
        abort();                /* a body past the bytes read, or no such outcome */
    /* a whole answer may stop short of the bytes after it; cut into
     * pieces, the parse stops where the answer ends: the same either way */
    if (r1 != r2 && r1 != -4 && r2 != -4)
        abort();
    if (r1 == 1 && r2 == 1) {
        if (st1 != st2 || l1 != l2 || memcmp(b1, b2, l1) || st1 < 200 || st1 > 599 || l1 > len || l1 > max)
            abort();
    }
    free(b1);
    free(b2);
    return 0;
}
