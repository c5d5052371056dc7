"""Bars comparing strategies, each with its value printed on it (`Axes.bar_label`); a bar may
be a stack of named parts ("first launch" = upload + launch). On a log-scaled axis the values are
dots, not bars: a bar's length there depends on where the axis starts, and misleads."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from labkit.plot import _axes
from labkit.plot.theme import colors_for, style
from labkit.measure.stats import Stats, fmt_value

__all__ = ["bars"]

# A part of a stack gets its value written inside when it is at least this share of the axis.
_INSIDE_LABEL = 0.08


def _median(value) -> float:
    return value.median if isinstance(value, Stats) else float(value)


def bars(values: Mapping[str, object], ax=None, ylabel: str = "µs", log: bool = False,
         title: str = "Comparison", provenance: str | None = None):
    """Bars comparing strategies, the value printed on each.

    Parameters
    ----------
    values : dict of str to float, Stats or dict
        Label -> value; a Stats shows its median with a whisker up to its p95; a dict of
        part -> value (numbers or Stats, drawn by their medians) is one stacked bar, its parts
        bottom-up in the dict's order, each part named in the legend and its total printed on
        top: ``{"first launch": {"upload": 40.0, "launch": 12.0}, "steady launch": 9.0}``.
    ax : matplotlib Axes, optional
    ylabel : str
        Axis label with its unit, e.g. "time per update (µs)".
    log : bool
        Log-scaled value axis, where each value is a dot (a bar's length on a log axis says
        nothing); a linear one, ratios included, starts at 0. Stacks need a linear axis.
    title : str
    provenance : str, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not values:
        raise ValueError("bars got no values; pass {label: number or Stats}")
    labels = list(values)
    stacks = {label: v for label, v in values.items() if isinstance(v, Mapping)}
    for label, parts in stacks.items():
        if not parts:
            raise ValueError(f"the stacked bar {label!r} has no parts; pass "
                             "{part: number or Stats}")
    if log and stacks:
        raise ValueError("stacked bars need a linear axis (log=False): on a log axis a part's "
                         "length is not its share")
    plain = [label for label in labels if label not in stacks]
    part_names = list(dict.fromkeys(p for parts in stacks.values() for p in parts))
    palette = dict(zip(plain + part_names, colors_for(plain + part_names)))
    x = {label: i for i, label in enumerate(labels)}
    heights = {label: _median(values[label]) for label in plain}
    upper = {label: values[label].p95 - values[label].median
             if isinstance(values[label], Stats) else 0.0 for label in plain}
    totals = {label: sum(_median(v) for v in parts.values()) for label, parts in stacks.items()}
    whiskers = any(isinstance(values[label], Stats) for label in plain) and \
        _axes.visible_spread(list(heights.values()),
                             [0.0] * len(plain), list(upper.values()))
    with style():
        ax = _axes.new_axes(ax, (max(4.5, 1.2 * len(labels) + 2), 4.5))
        if plain and log:
            _dots(ax, [x[label] for label in plain], [heights[label] for label in plain],
                  [upper[label] for label in plain] if whiskers else None,
                  [palette[label] for label in plain])
        elif plain:
            container = ax.bar([x[label] for label in plain], [heights[label] for label in plain],
                               color=[palette[label] for label in plain],
                               yerr=[np.zeros(len(plain)), [upper[label] for label in plain]]
                               if whiskers else None, capsize=4)
            ax.bar_label(container, fmt=fmt_value, padding=3, fontsize=9)
        parts_drawn = _draw_stacks(ax, stacks, x, palette, part_names)
        long_labels = any(len(label) > 10 for label in labels)
        ax.set_xticks(range(len(labels)), labels, rotation=20 if long_labels else 0,
                      ha="right" if long_labels else "center")
        top = max([heights[label] + upper[label] for label in plain] + list(totals.values()))
        if log:
            ax.set_yscale("log")
            # room above the tallest bar for its value: a tenth of the log range, as the
            # linear case gets 15 %
            low = min(heights[label] for label in plain) if plain else top
            if top > 0 and low > 0:
                span = max(top / low, 10.0)
                ax.set_ylim(low / span ** 0.12, top * span ** 0.15, auto=None)
            ax.set_xlim(-0.6, len(labels) - 0.4)
            _axes.tidy_log_axis(ax.yaxis)
        else:
            ax.set_ylim(0, top * 1.15 or 1.0)
            for container, _label in parts_drawn:
                _label_inside(ax, container)
        ax.set_ylabel(ylabel)
        if whiskers:
            note = _axes.WHISKER_NOTE.replace("bar:", "dot:") if log else _axes.WHISKER_NOTE
            ax.set_xlabel(note, fontsize=8, color="#555555")
        if parts_drawn:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), title="stacked parts")
        return _axes.finish(ax, title, provenance, grid_axis="y")


def _draw_stacks(ax, stacks: Mapping[str, Mapping], x: Mapping[str, int],
                 palette: Mapping[str, str], part_names: list[str]) -> list:
    """Draw each stacked bar, part by part, its total above it; the containers drawn, one per
    part name (its legend entry)."""
    if not stacks:
        return []
    bottoms = {label: 0.0 for label in stacks}
    drawn = []
    for part in part_names:
        owners = [label for label, parts in stacks.items() if part in parts]
        sizes = [_median(stacks[label][part]) for label in owners]
        container = ax.bar([x[label] for label in owners], sizes,
                           bottom=[bottoms[label] for label in owners], color=palette[part],
                           label=part, edgecolor="white", linewidth=0.8)
        drawn.append((container, part))
        for label, size in zip(owners, sizes):
            bottoms[label] += size
    # the total on top of each stack: label the last part drawn on each bar
    top_parts = {label: list(parts)[-1] for label, parts in stacks.items()}
    for container, part in drawn:
        owners = [label for label, parts in stacks.items() if part in parts]
        texts = [fmt_value(bottoms[label]) if top_parts[label] == part else ""
                 for label in owners]
        ax.bar_label(container, labels=texts, padding=3, fontsize=9)
    return drawn


def _label_inside(ax, container) -> None:
    """Each part's own value inside it, where the part is tall enough to hold it."""
    lo, hi = ax.get_ylim()
    texts = [fmt_value(p.get_height()) if p.get_height() >= _INSIDE_LABEL * (hi - lo) else ""
             for p in container.patches]
    ax.bar_label(container, labels=texts, label_type="center", fontsize=8, color="white")


def _dots(ax, xs, values, upper, colors) -> None:
    """One dot per value (a whisker up to its p95 where given), the value printed to its right."""
    for i, (x, v, c) in enumerate(zip(xs, values, colors)):
        if upper is not None and upper[i] > 0:
            ax.errorbar([x], [v], yerr=[[0.0], [upper[i]]], color=c, capsize=4, linewidth=1.2)
        ax.plot([x], [v], marker="o", markersize=9, color=c, linestyle="none")
        ax.annotate(fmt_value(v), (x, v), textcoords="offset points", xytext=(8, 0),
                    va="center", fontsize=9)
