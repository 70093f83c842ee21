"""The IR package: LLVM IR text read into a model (`model`), and written (`builder`). The one
place in adgen that reads or edits IR text; every other stage works on the model."""

from adgen.ir_ad.ir.model import *  # noqa: F401,F403  the model's public names
from adgen.ir_ad.ir.model import _header, _strip_metadata  # noqa: F401
