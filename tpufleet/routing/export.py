"""Table exports: .npz (the state's own format; deflated up to COMPRESS_LIMIT chips), JSON for small slices,
and an ibroute-style dump.

All three use the per-chip view ``port[s, t]``: the output port chip s uses for destination t.
Port numbers: 0..5 = +x, -x, +y, -y, +z, -z; -1 = this chip; -2 = unroutable.
"""

from __future__ import annotations

import io
import json
from typing import Any

from tpufleet.errors import BadInput
from tpufleet.routing.analysis import RouteTables, datelines
from tpufleet.topology import PORTS

JSON_LIMIT = 1024
FORMAT_VERSION = 3  # 2: meta carries the VC layout (`vc_layout`, `wild_layers`); 3: with VCs per dimension
# Above this many chips the tables are deflated at level 1: on 16x16x16 (67 MB of tables) numpy's default level
# takes 0.6-1.3 s, most of a `routes` run, level 1 about a third of that for files 2x larger (2-5 MB); storing
# them plain would mean writing and syncing 67 MB. `np.load` reads every level alike. The hop counts (half the
# bytes) are deflated in a second thread meanwhile.
COMPRESS_LIMIT = 1024
FAST_LEVEL = 1


def npz_bytes(rt: RouteTables, meta: dict[str, Any]) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    arrays = {
        "port": np.asarray(rt.P.T, dtype=np.int8),  # the transposed view is written as is (Fortran order)
        "hops": np.asarray(rt.L.T, dtype=np.int16),
        "wild": (rt.wild.T if rt.wild is not None else np.zeros(rt.P.shape, dtype=bool)),
        "dest_order": (rt.dest_class if rt.dest_class is not None else np.zeros(rt.n, dtype=np.int64)).astype(np.int8),
        "orders": np.array(rt.orders, dtype=np.int8),
        "datelines": datelines(rt.shape),
        "neighbors": rt.nbr.astype(np.int32),
        "meta": np.array(json.dumps({"format_version": FORMAT_VERSION, **meta})),
    }
    if rt.n <= COMPRESS_LIMIT:
        np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
        return buf.getvalue()
    return _deflated_zip(arrays, FAST_LEVEL)


def _deflated_zip(arrays: dict[str, Any], level: int) -> bytes:
    """`np.savez_compressed` at a chosen deflate level (the same zip of .npy members), the largest member
    deflated in a second thread: zlib lets go of the GIL for the whole buffer, so on two cores the port and
    wild tables are deflated while the hop counts are."""
    import threading
    import zlib

    import numpy as np

    members = [(f"{name}.npy".encode(), *_npy_parts(np.asanyarray(value))) for name, value in arrays.items()]
    packed: list[tuple[int, bytes]] = [(0, b"")] * len(members)

    def deflate(i: int) -> None:
        _, header, body = members[i]
        packer = zlib.compressobj(level, zlib.DEFLATED, -15)
        data = packer.compress(header) + packer.compress(body) + packer.flush()
        packed[i] = (zlib.crc32(body, zlib.crc32(header)), data)

    largest = max(range(len(members)), key=lambda i: members[i][2].nbytes)
    helper = threading.Thread(target=deflate, args=(largest,), name="npz-deflate")
    helper.start()
    for i in range(len(members)):
        if i != largest:
            deflate(i)
    helper.join()
    sizes = [len(header) + body.nbytes for _, header, body in members]
    return _zip([(name, sizes[i], *packed[i]) for i, (name, _, _) in enumerate(members)])


def _npy_parts(array: Any) -> tuple[bytes, memoryview]:
    """A .npy file as its header and its data, the data a view of the array's memory (no copy): C order, or
    Fortran order for the transposed tables, as `np.lib.format.write_array` lays them out."""
    import numpy as np

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(array))
    if array.flags.c_contiguous:
        data = array
    elif array.flags.f_contiguous:
        data = array.T
    else:
        data = np.ascontiguousarray(array)
    return header.getvalue(), memoryview(data).cast("B")


def _zip(members: list[tuple[bytes, int, int, bytes]]) -> bytes:
    """A zip archive of deflated members (name, size, CRC-32, deflated bytes), as `zipfile` reads it; every
    size and offset must fit 32 bits (the largest tables, 16.8 M pairs of int16, are 34 MB)."""
    import struct

    out = io.BytesIO()
    central = io.BytesIO()
    for name, size, crc, packed in members:
        offset = out.tell()
        if max(size, len(packed), offset) >= 0xFFFFFFFF:
            raise OverflowError("routing tables too large for a 32-bit zip")
        fields = (20, 0, 8, 0, 0x21, crc, len(packed), size, len(name), 0)  # deflated, dated 1980-01-01
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + name)
        out.write(packed)
        central.write(struct.pack("<IH", 0x02014B50, 20) + struct.pack("<HHHHHIIIHH", *fields))
        central.write(struct.pack("<HHHII", 0, 0, 0, 0, offset) + name)
    start, directory = out.tell(), central.getvalue()
    out.write(directory)
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), start, 0))
    return out.getvalue()


def json_text(rt: RouteTables, meta: dict[str, Any], chip_names: list[str]) -> str:
    if rt.n > JSON_LIMIT:
        raise BadInput(f"bad option --format json: {rt.n} chips is over the {JSON_LIMIT}-chip limit for JSON; use npz")
    doc = {
        "format_version": FORMAT_VERSION,
        **meta,
        "ports": list(PORTS),
        "chips": chip_names,
        "port": rt.P.T.tolist(),
        "wild": (rt.wild.T.astype(int).tolist() if rt.wild is not None else None),
        "dest_order": (rt.dest_class.tolist() if rt.dest_class is not None else None),
        "orders": [list(o) for o in rt.orders],
    }
    return json.dumps(doc, separators=(",", ":")) + "\n"


def ibroute_text(rt: RouteTables, chip_names: list[str], slice_name: str) -> str:
    """One block per chip like InfiniBand's `ibroute`: destination id (hex), output port, destination info.

    Port 0 is the chip itself (IB's switch port 0); ports 1-6 are +x, -x, +y, -y, +z, -z.
    Unroutable destinations are left out of a block and counted in its footer.
    """
    n = rt.n
    width = max(4, len(f"{n - 1:x}"))
    out = []
    port_t = rt.P.T
    for s in range(n):
        out.append(f"Unicast lids [0x0-0x{n - 1:x}] of switch chip {s} '{chip_names[s]}' (slice {slice_name}):")
        out.append("  Lid  Out   Destination")
        out.append("       Port     Info ")
        row = port_t[s]
        valid = 0
        for t in range(n):
            p = int(row[t])
            if p == -2:
                continue
            valid += 1
            if p == -1:
                out.append(f"0x{t:0{width}x} 000 : (this chip '{chip_names[t]}')")
            else:
                out.append(f"0x{t:0{width}x} {p + 1:03d} : (chip {t} '{chip_names[t]}' via {PORTS[p]})")
        out.append(f"{valid} valid lids dumped")
        out.append("")
    return "\n".join(out)
