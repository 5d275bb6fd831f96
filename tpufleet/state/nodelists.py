"""The input files of `import k8s` (and of the exports' `--mapping`): a Kubernetes node list, read from a file or
standard input through the bounded reader, and the mapping file.

The bytes are read and checked here (size cap, strict UTF-8) and handed to the core's decoders
(`tpufleet.integrations.k8s`: `decode_node_list` for kubectl's JSON, `parse_nodes`, and `k8s_mapping.parse_mapping` for
documents).
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.integrations.k8s import (
    SPLIT_THE_LIST,
    K8sMapping,
    LabelKeys,
    Node,
    decode_node_list,
    parse_nodes,
)
from tpufleet.integrations.k8s_mapping import parse_mapping
from tpufleet.jsontext import decode_utf8
from tpufleet.state.inputfiles import load_yaml, parse_yaml, read_file_or_stdin, size_text

__all__ = ["MAX_NODE_LIST_BYTES", "MAX_YAML_NODE_LIST_BYTES", "read_mapping", "read_node_list"]

# A GKE cluster holds 15,000 nodes (65,000 at most) and kubectl's indented JSON of a TPU node is 4-8 KB (labels,
# conditions, images): 128 MiB is room for 15,000 such nodes. The typed reader peaks at 2-3x a kubectl list's
# size (the plain decoder: 4-6x, and 27x for empty objects); the worst measured is 7x (900 MiB), for nodes of 64
# tiny conditions each. A larger list is imported in parts (a node missing from a list says nothing).
MAX_NODE_LIST_BYTES = 128 * MiB
MAX_YAML_NODE_LIST_BYTES = 16 * MiB  # YAML parses at 1-3 s a MiB into plain objects: bounded tighter than JSON
_UTF8_CHECK_PIECE = MiB
_JSON_OBJECT = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*\{")


def read_node_list(source: str, keys: LabelKeys) -> tuple[list[Node], str]:
    """The nodes of the JSON (or YAML) node list in FILE, or on stdin for "-", read through the bounded reader;
    and the name it is given in messages."""
    data, name = read_file_or_stdin(source, "node list", MAX_NODE_LIST_BYTES, SPLIT_THE_LIST)
    _check_utf8(data, name)
    if _JSON_OBJECT.match(data):  # JSON, as kubectl prints it: read typed, without a copy as text
        return decode_node_list(data, name, keys), name
    if len(data) > MAX_YAML_NODE_LIST_BYTES:  # YAML, as `export node-labels` writes by default
        raise BadStateFile(
            name,
            "",
            NO_VALUE,
            f"YAML larger than {size_text(MAX_YAML_NODE_LIST_BYTES)}: give kubectl's JSON (-o json) instead",
        )
    return parse_nodes(parse_yaml(decode_utf8(data, name), name), name, keys), name


def _check_utf8(data: bytes, name: str) -> None:
    """Strict UTF-8, checked a piece at a time: decoding it whole would hold a text copy of up to 4x its size."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(data), _UTF8_CHECK_PIECE):
            end = start + _UTF8_CHECK_PIECE
            decoder.decode(view[start:end], final=end >= len(data))
    except UnicodeDecodeError:
        decode_utf8(data, name)  # raises, naming the offset of the first bad byte
        raise


def read_mapping(path: Path | None) -> K8sMapping:
    """The mapping file (YAML or JSON) at `path`, or the default mapping without one."""
    if path is None:
        return K8sMapping()
    return parse_mapping(load_yaml(path, "mapping file"), str(path))
