#ifndef BY_VALUE_H
#define BY_VALUE_H
typedef struct { double gamma; int m; } wishart;
struct range { double lo, hi; };
#endif
