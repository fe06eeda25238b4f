"""What a matplotlib panel draws, read back so that a plot test checks the values it shows:
each labelled line's points, each labelled bar series' heights by tick label, and each filled
band's low and high edge per x."""

from __future__ import annotations

from collections import defaultdict


def lines(ax) -> dict[str, dict[float, float]]:
    """{label: {x: y}} of the panel's labelled lines (unlabelled ones, such as an error bar's,
    are matplotlib's `_child...` and left out)."""
    return {
        line.get_label(): {float(x): float(y) for x, y in zip(*line.get_data(), strict=True)}
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


def bars(ax) -> dict[str, dict[str, float]]:
    """{series label: {x tick label: bar height}}: a bar belongs to the tick nearest its centre
    (grouped bars sit within 0.4 of their group's tick)."""
    from matplotlib.container import BarContainer

    ticks = {
        round(tick): label.get_text()
        for tick, label in zip(ax.get_xticks(), ax.get_xticklabels(), strict=True)
    }
    return {
        container.get_label(): {
            ticks[round(bar.get_x() + bar.get_width() / 2)]: float(bar.get_height())
            for bar in container.patches
        }
        for container in ax.containers
        if isinstance(container, BarContainer)
    }


def bands(ax) -> list[tuple[dict[float, float], dict[float, float]]]:
    """Per filled band (fill_between), its low and its high edge ({x: y} each) from its outline."""
    from matplotlib.collections import PolyCollection

    found = []
    for collection in ax.collections:
        if not isinstance(collection, PolyCollection):
            continue
        edges: dict[float, list[float]] = defaultdict(list)
        for path in collection.get_paths():
            for x, y in path.vertices:
                edges[float(x)].append(float(y))
        found.append(
            ({x: min(ys) for x, ys in edges.items()}, {x: max(ys) for x, ys in edges.items()})
        )
    return found


def whiskers(ax) -> list[tuple[float, float, float]]:
    """(x, low, high) of every vertical error bar of the panel."""
    from matplotlib.collections import LineCollection

    return [
        (float(segment[0][0]), float(min(segment[:, 1])), float(max(segment[:, 1])))
        for collection in ax.collections
        if isinstance(collection, LineCollection)
        for segment in collection.get_segments()
    ]
