"""A fault analysis of a twisted slice makes the tables of several orders from the same group offsets: they are
kept for the last shape up to a full TPU7x superpod, since making them again costs more (time and the
temporaries' memory) than keeping them."""

from tpufleet.routing import dor
from tpufleet.shapes import parse_shape


def test_a_pod_scale_twisted_slices_offsets_are_made_once() -> None:
    shape = parse_shape("12x12x24", twisted=True)  # 3,456 chips: above the 2,048 they were kept to
    first = dor.group_offsets(shape)
    assert dor.group_offsets(shape) is first
    assert first.shape == (shape.chips, shape.chips) and not first.flags.writeable
    dor.group_offsets(parse_shape("4x4x8", twisted=True))  # another shape replaces them: one shape is kept
    assert dor.group_offsets(shape) is not first
