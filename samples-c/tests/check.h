/* A tiny test harness: CHECK counts, prints failures, and the summary line is the
 * "N passed, N failed" line CI reads. */
#ifndef KILN_SAMPLE_CHECK_H
#define KILN_SAMPLE_CHECK_H
#include <stdio.h>
#include <string.h>

static int checks_passed, checks_failed;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (cond) {                                                                        \
            checks_passed++;                                                               \
        } else {                                                                           \
            checks_failed++;                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, \
                    #cond, kiln_last_error_message());                                     \
        }                                                                                  \
    } while (0)

#define CHECK_STATUS(call, expected) CHECK((call) == (expected))
#define CHECK_MESSAGE(text) CHECK(strstr(kiln_last_error_message(), (text)) != NULL)

static int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, checks_passed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}
#endif
