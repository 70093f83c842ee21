"""An error inside a library's code (a C++ library header here) stands at the user's line that
reached it, with a note at the library's line (specs/errors.md): the user can act on their own
line, not on `basic_string.h`."""

from __future__ import annotations

ROUNDTRIP = r"""
#include <string>
// @diff(roundtrip_grad: (active) -> active)
double roundtrip(double x)
{
    std::string s = std::to_string(x);
    return std::stod(s) * x;
}
"""


def test_an_error_in_a_library_header_stands_at_the_users_line(adgen, tmp_path):
    src = tmp_path / "roundtrip.cpp"
    src.write_text(ROUNDTRIP)
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    first = result.err.splitlines()[0]
    assert first.startswith(f"{src}:6:") and ": error: cannot differentiate" in first, result.err
    assert "note: in the library's code here, which this line reaches" in result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()
