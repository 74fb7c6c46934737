/* jscan.h — a JSON reader that walks a document in place (internal): no
 * tree, no allocation, each value converted only when the caller asks for
 * it, the rest checked and skipped.  For answers of a known shape read
 * thousands of times a period (an agent's GET /v1/status: a tree of a
 * hundred values, each allocated, cost more than the request itself).
 *
 * The whole of RFC 8259 is checked, as jansson's json_loadb checks it:
 * strings in valid UTF-8 without control characters, escapes and surrogate
 * pairs, \u0000 refused, numbers by the grammar and finite, nothing after
 * the document but white space.  Nesting deeper than PFLEX_JSCAN_DEPTH is
 * refused.  Unlike jansson, an integer past 64 bits is a number like any
 * other (converted to double), and a duplicate key is the caller's to see
 * (each occurrence comes in turn).
 *
 * The caller walks it: pflex_jscan_peek says what comes next, a container
 * is entered and its members (pflex_jscan_key) or elements
 * (pflex_jscan_item) taken one by one, each value read (number, string) or
 * skipped.  Every call after the first failure fails too; s->err says
 * what went wrong and s->at where (a byte offset). */
#ifndef PFLEX_JSCAN_H
#define PFLEX_JSCAN_H

#include <stddef.h>
#include <stdint.h>

#define PFLEX_JSCAN_DEPTH 64

enum pflex_jtype {
    PFLEX_J_NONE,       /* nothing (a failure, or the end of a container or document) */
    PFLEX_J_OBJECT,
    PFLEX_J_ARRAY,
    PFLEX_J_STRING,
    PFLEX_J_NUMBER,
    PFLEX_J_TRUE,
    PFLEX_J_FALSE,
    PFLEX_J_NULL,
};

struct pflex_jscan {
    const char *p, *start, *end;
    unsigned depth;
    uint64_t first;             /* bit d: container d has given nothing yet */
    const char *err;            /* NULL: no failure */
    size_t at;                  /* the failure's byte offset */
};

void pflex_jscan_init(struct pflex_jscan *s, const char *buf, size_t len);
/* What the next value is (white space skipped); PFLEX_J_NONE on a failure
 * or when the input is not a value there. */
enum pflex_jtype pflex_jscan_peek(struct pflex_jscan *s);
/* Enter the object or array that comes next: 0, or -1 (not one, too deep). */
int pflex_jscan_enter(struct pflex_jscan *s, enum pflex_jtype type);
/* In an object entered: 1 with the next member's key in key (unescaped,
 * NUL-terminated, cut at a character's boundary to fit size; *cut set
 * when it was, cut may be NULL) and its value next; 0 at the object's end
 * (left); -1 on a failure. */
int pflex_jscan_key(struct pflex_jscan *s, char *key, size_t size, int *cut);
/* In an array entered: 1 when an element follows (its value next), 0 at
 * the array's end (left), -1 on a failure. */
int pflex_jscan_item(struct pflex_jscan *s);
/* The number that comes next, and whether it was written as an integer
 * (no fraction, no exponent): 0, or -1 (not a number, or not finite). */
int pflex_jscan_number(struct pflex_jscan *s, double *v, int *is_int);
/* The string that comes next, as pflex_jscan_key writes keys: its length
 * unescaped (before any cut), or -1. */
long pflex_jscan_string(struct pflex_jscan *s, char *buf, size_t size, int *cut);
/* The string that comes next, checked but not copied: *raw and *n its
 * bytes between the quotes in the input, *escaped 1 when they hold an
 * escape (pflex_jscan_unescape gives its text then).  0, or -1. */
int pflex_jscan_string_span(struct pflex_jscan *s, const char **raw, size_t *n, int *escaped);
/* pflex_jscan_key, the key as pflex_jscan_string_span gives a string. */
int pflex_jscan_key_span(struct pflex_jscan *s, const char **raw, size_t *n, int *escaped);
/* The text of a span from pflex_jscan_string_span or _key_span (checked
 * then: the quote before raw is the input's) into out (room for n + 1
 * bytes, NUL-terminated; the text is never longer than its bytes): its
 * length. */
size_t pflex_jscan_unescape(const char *raw, size_t n, char *out);
/* Skip the value that comes next, whatever it holds (checked all the
 * same): 0, or -1. */
int pflex_jscan_skip(struct pflex_jscan *s);
/* Nothing but white space left: 0, or -1. */
int pflex_jscan_end(struct pflex_jscan *s);

#endif
