"""The names the generated C and the derived IR agree on: the stubs call what `adgen build`
defines under these prefixes, and diagnostics read them back."""

KERNEL_PREFIX = "__adgen_kernel_"  # the stub of NAME calls KERNEL_PREFIX + NAME, which `adgen build` defines
BY_ADDRESS_PREFIX = "__adgen_by_address_"  # wraps an annotated function passing structs by value
CXX_ENTRY_PREFIX = "__adgen_c_"  # the C-linkage function a derived function declared in C++ (inline) calls
MEMBER_PREFIX = "__adgen_member_"  # wraps an annotated C++ member function: its object the first parameter

# The symbols of the statics a Rust program's wrappers define, each holding the program's address of
# a function a derivative may be given a pointer to (frontend/rust_wrappers.addresses, ir_ad/dispatch.py).
PROGRAMS_ADDRESS = "adgen.user.addr."
