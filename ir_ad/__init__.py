"""adgen's IR core: lowers C and stubs to LLVM bitcode, differentiates, optimizes, emits objects."""
