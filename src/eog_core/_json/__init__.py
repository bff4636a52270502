"""JSON for eog_core: hostile reading (:mod:`._read`: task files, request bodies, a gym's
answers) and writing that cannot fail to encode or split a line (:mod:`._write`: records,
wire answers, request bodies, the report's data). The verifier engine and the model view
keep their own ``json.dumps`` calls: they must write exactly what upstream writes.
"""

from eog_core._json._read import (
    MAX_DEPTH,
    JsonInputError,
    check_depth,
    decode_json,
    loads_bytes,
    loads_untrusted,
    may_hold_lone_surrogates,
    nesting_depth,
    repair_text,
    repair_tree,
    unsendable,
)
from eog_core._json._write import (
    dumps_compact,
    dumps_compact_bytes,
    dumps_default,
    dumps_line,
    dumps_utf8,
)

__all__ = [
    "MAX_DEPTH",
    "JsonInputError",
    "check_depth",
    "decode_json",
    "dumps_compact",
    "dumps_compact_bytes",
    "dumps_default",
    "dumps_line",
    "dumps_utf8",
    "loads_bytes",
    "loads_untrusted",
    "may_hold_lone_surrogates",
    "nesting_depth",
    "repair_text",
    "repair_tree",
    "unsendable",
]
