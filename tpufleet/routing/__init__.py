"""Routing tables for a slice: healthy dimension-order routing, fault-tolerant variants, deadlock check, load.

Arrays are destination-major: ``P[t, s]`` is the output port (0..5 = +x,-x,+y,-y,+z,-z) that chip ``s`` uses
for packets to chip ``t``; -1 on the diagonal (deliver), -2 where ``s`` cannot reach ``t``. ``L[t, s]`` is the
hop count of that route. Exports transpose to the usual per-chip view ``port[s, t]``.
"""
