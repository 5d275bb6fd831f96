"""Print the README's table of the generations from the shipped profiles: ``python -m tpufleet.cli.generations_table``.

The table (one column per shipped generation, every figure with its source or **A** for an assumption) is
rendered by `tpufleet.generations_markdown.markdown_table` from the profiles `tpufleet.state.generations` reads; README.md
holds it between the markers ``<!-- generations-table:start -->`` and ``<!-- generations-table:end -->``, and a
test holds the two equal (paste this output there after changing a profile).
"""

from __future__ import annotations


def render() -> str:
    """The table of the shipped generations (tpu-v4, tpu-v5p, tpu7x), as README.md holds it."""
    from tpufleet.generations_markdown import markdown_table
    from tpufleet.state.generations import names, shipped

    return markdown_table([shipped(name) for name in names()])


def main() -> None:
    print(render())


if __name__ == "__main__":
    main()
