"""Virtual channels placed leg by leg: each dimension order's legs (its x, y and z hops) and its wild hops by
dimension start on VCs of their own, found by a bounded backtracking search, pure.

Why: per-destination dimension orders keep the most routes whole (`dimension_orders.all_orders`), but every order
needs two dateline VCs, and blocks per order (even overlapping ones, `cdg._packings`) do not fit the hardware's
3 VCs once three or four orders are in use. A VC is only a name for a buffer; what matters is that the channel
dependency graph is acyclic. Letting each (order, dimension) pick where its dateline pair starts (any VC that
leaves room for the second of the pair; a leg that never crosses a dateline needs one VC only), and each (order,
dimension) of wild hops its VC (plus j for the j-th hop of a chain with `RouteTables.wild_layers`), gives the
cycle search more room: with x and y OCS failures on 8x8x8, four orders fit 3 VCs this way, and no packing of
blocks does.

The search assigns one (order, dimension) at a time, most used first, lowest VC first, and checks the channel
graph of the hops whose VCs are already known after each step: a cycle among them stays whatever the rest get,
so that branch is cut. It gives up after LEG_CHECKS cycle checks (bounded work: `evaluate` then keeps what the
blocks give). On a full pod (16x16x16, order pairs with one OCS down) a check takes about 5 ms and a placement was
found in 23.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpufleet.constants import Int64Array
    from tpufleet.routing.cdg import Layout, _Hops

# Cycle checks (about 0.5 ms each on 8x8x8) before the search gives up: the fits found on 8x8x8, 4x4x8 and 4x8x8 with
# OCS failures took 14-37; a search that finds none costs all of them.
LEG_CHECKS = 100


def place(hops: _Hops, layout: Layout, vcs: int) -> tuple[Int64Array, Int64Array] | None:
    """(first VC of dimension-order hops, first VC of wild hops), each [class, dimension], within `vcs` VCs and
    deadlock-free; None if the search found none within LEG_CHECKS checks."""
    import numpy as np

    from tpufleet.routing.cdg import acyclic

    C = layout.classes
    var_in = np.where(hops.wild_in, 3 * C, 0) + hops.cls * 3 + hops.dim_in
    var_out = np.where(hops.wild_out, 3 * C, 0) + hops.cls * 3 + hops.dim_out
    top = np.zeros(6 * C, dtype=np.int64)  # the highest offset each variable is used with
    np.maximum.at(top, var_in, hops.off_in)
    np.maximum.at(top, var_out, hops.off_out)
    uses = np.bincount(np.concatenate([var_in, var_out]), minlength=6 * C)
    order = [int(v) for v in np.argsort(-uses, kind="stable") if uses[v]]
    value = np.full(6 * C, -1, dtype=np.int64)
    size = len(hops.cls) and int(max(hops.link_in.max(), hops.link_out.max())) + 1
    checks = 0

    def fits() -> bool:
        nonlocal checks
        checks += 1
        known = (value[var_in] >= 0) & (value[var_out] >= 0)
        vc_in = value[var_in[known]] + hops.off_in[known]
        vc_out = value[var_out[known]] + hops.off_out[known]
        return bool(acyclic(hops.link_in[known] * vcs + vc_in, hops.link_out[known] * vcs + vc_out, size * vcs))

    def assign(i: int) -> bool:
        if i == len(order):
            return True
        v = order[i]
        for vc in range(vcs - int(top[v])):
            if checks >= LEG_CHECKS:
                return False
            value[v] = vc
            if fits() and assign(i + 1):
                return True
        value[v] = -1
        return False

    if not order or not assign(0):
        return None
    return value[: 3 * C].reshape(C, 3), value[3 * C :].reshape(C, 3)


def blocks(layout: Layout, dor_first: Int64Array, wild_first: Int64Array, wild_vcs: int) -> dict[str, Any]:
    """The VC layout as reported (see `cdg._Packing.blocks`; `wild_vcs`: how many VCs wild hops use); a dimension
    no hop of an order uses is given the order's first VC, so every entry names a VC."""
    dor = dor_first.copy()
    wild = wild_first.copy()
    first = [int(row[row >= 0].min()) if (row >= 0).any() else 0 for row in dor]
    used_wild = wild[wild >= 0]
    first_wild = int(used_wild.min()) if used_wild.size else 0
    for c in range(layout.classes):
        dor[c][dor[c] < 0] = first[c]
        wild[c][wild[c] < 0] = first_wild
    return {
        "per_order": layout.per_class,
        "orders": layout.classes,
        "wild": wild_vcs,
        "order_first_vc": first,
        "first_wild_vc": first_wild,
        "leg_first_vc": dor.tolist(),
        "wild_vc": wild.tolist(),
    }
