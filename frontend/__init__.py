"""adgen's frontend: @diff annotations, C and Rust signatures, checks, the ABI, and the generated
header and stubs. It imports the common base only."""
