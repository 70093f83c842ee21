#include <stdio.h>

/* Printing, in a file of its own: it does not include spring.h, so editing that header does
 * not rebuild it. */
void report(const char *what, double value, double check)
{
    printf("%-24s %12.6f   finite differences %12.6f\n", what, value, check);
}
