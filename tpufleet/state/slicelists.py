"""The input file of `import slices` (and `drift --slices`): the JSON of `kubectl get slices -o json`, or YAML (a List,
or the Slice objects `export slices` writes), read from a file or standard input through the bounded reader.

The bytes are read and checked here (size cap, strict UTF-8, JSON depth and numbers) and the document handed to
the core's decoder, `tpufleet.integrations.gke_slice_list.decode_slice_list`.
"""

from __future__ import annotations

import re
from typing import Any

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.integrations.gke_slice_list import SliceListInput, decode_slice_list
from tpufleet.state.inputfiles import decode_utf8, load_json, parse_yaml, read_file_or_stdin, size_text

__all__ = ["MAX_SLICE_LIST_BYTES", "MAX_YAML_SLICE_LIST_BYTES", "read_slice_list"]

# kubectl's indented JSON of a Slice is about 1 KB (1.5 KB with managed fields): 64 MiB holds the 65,536 Slices
# the decoder accepts; a superpod of 144 partitions holds at most 144 Slices.
MAX_SLICE_LIST_BYTES = 64 * MiB
MAX_YAML_SLICE_LIST_BYTES = 16 * MiB  # YAML parses at 1-3 s a MiB into plain objects: bounded tighter than JSON
_JSON_START = re.compile(r"\ufeff?[ \t\r\n]*[{\[]")


def read_slice_list(source: str) -> tuple[SliceListInput, str]:
    """The Slices in FILE, or on stdin for "-", read through the bounded reader; and the name the input is given
    in messages. kubectl's JSON, or YAML: `kubectl get slices -o yaml` (a List), or a stream of Slice objects
    (`---` between them) as `export slices` writes them and `kubectl apply -f` reads them."""
    data, name = read_file_or_stdin(source, "Slice list", MAX_SLICE_LIST_BYTES, "import it in parts")
    text = decode_utf8(data, name)
    if _JSON_START.match(text):
        return decode_slice_list(_as_list([load_json(text, name)], name), name), name
    if len(data) > MAX_YAML_SLICE_LIST_BYTES:
        too_big = f"YAML larger than {size_text(MAX_YAML_SLICE_LIST_BYTES)}: give kubectl's JSON (-o json) instead"
        raise BadStateFile(name, "", NO_VALUE, too_big)
    return decode_slice_list(_as_list(parse_yaml(text, name, stream=True), name), name), name


def _as_list(documents: list[Any], name: str) -> Any:
    """One document as it is (a `List` with `items`, or anything else, for the decoder to name), a Slice alone as
    the List of it; a stream of Slice objects (`---` between them; empty documents are nothing) as the List of
    them. A stream of no document is bad input: no list at all, not an empty one."""
    if len(documents) == 1:
        return _listed(documents) if _is_slice(documents[0]) else documents[0]
    docs = [d for d in documents if d is not None]
    if not docs:  # comments or `---` only
        raise BadStateFile(name, "", NO_VALUE, "no YAML document in it (no Slices is a List with `items: []`)")
    return docs[0] if len(docs) == 1 and not _is_slice(docs[0]) else _listed(docs)


def _is_slice(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "Slice"


def _listed(docs: list[Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": docs}
