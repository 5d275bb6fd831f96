"""The input file of `import slices` (and `drift --slices`): the JSON of `kubectl get slices -o json`, read from a
file or standard input through the bounded reader.

The bytes are read and checked here (size cap, strict UTF-8, JSON depth and numbers) and the document handed to
the core's decoder, `tpufleet.integrations.gke_slice_list.decode_slice_list`.
"""

from __future__ import annotations

from tpufleet.constants import MiB
from tpufleet.integrations.gke_slice_list import SliceListInput, decode_slice_list
from tpufleet.state.inputfiles import decode_utf8, load_json, read_file_or_stdin

__all__ = ["MAX_SLICE_LIST_BYTES", "read_slice_list"]

# kubectl's indented JSON of a Slice is about 1 KB (1.5 KB with managed fields): 64 MiB holds the 65,536 Slices
# the decoder accepts; a superpod of 144 partitions holds at most 144 Slices.
MAX_SLICE_LIST_BYTES = 64 * MiB


def read_slice_list(source: str) -> tuple[SliceListInput, str]:
    """The Slices in FILE, or on stdin for "-", read through the bounded reader; and the name the input is given
    in messages."""
    data, name = read_file_or_stdin(source, "Slice list", MAX_SLICE_LIST_BYTES, "import it in parts")
    return decode_slice_list(load_json(decode_utf8(data, name), name), name), name
