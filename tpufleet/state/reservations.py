"""The input file of `import reservation`: the JSON of `gcloud compute reservations sub-blocks list
--format=json` (and `blocks list`), read from a file or standard input through the bounded reader.

The bytes are read and checked here (size cap, strict UTF-8, JSON depth and numbers) and the document handed to
the core's decoder, `tpufleet.integrations.reservation_document.decode_reservation`.
"""

from __future__ import annotations

from tpufleet.constants import MiB
from tpufleet.integrations.reservation_document import ReservationInput, decode_reservation
from tpufleet.state.inputfiles import decode_utf8, load_json, read_file_or_stdin

__all__ = ["MAX_RESERVATION_BYTES", "read_reservation"]

# gcloud's indented JSON of a sub-block is about 1.3 KB (1.8 KB with announced maintenance): 64 MiB holds the
# 65,536 items the decoder accepts with room to spare; a 16-superpod reservation (2,304 sub-blocks) is ~3 MiB.
MAX_RESERVATION_BYTES = 64 * MiB


def read_reservation(source: str) -> tuple[ReservationInput, str]:
    """The sub-blocks (and blocks) in FILE, or on stdin for "-", read through the bounded reader; and the name
    the input is given in messages."""
    data, name = read_file_or_stdin(source, "reservation list", MAX_RESERVATION_BYTES, "import it block by block")
    return decode_reservation(load_json(decode_utf8(data, name), name), name), name
