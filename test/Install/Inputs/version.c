/* A C program using only hla's installed headers (capi-header.test). */
#include "hla-c/Compiler.h"

#include <stdio.h>

int main(void) {
  printf("%s\n", hlaCompilerVersion());
  return 0;
}
