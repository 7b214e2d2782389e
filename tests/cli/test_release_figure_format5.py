"""Picture format 5: a log scale of many decades is labelled at a few round values.

Format 4 labelled every round value (1, 2, 3, 5 per decade) of a log colour bar or 1-D axis: a public clipping range
of 640 log units (``--clip 640 --transform log``, allowed) gave 2 224 overlapping labels, an unreadable colour bar and
about a minute of drawing. Format 5 keeps format 4's ticks wherever they were at most 16 (so that a release made by the
previous privgp still verifies with ``--strict``: the same pixels), and thins them beyond.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from privgp.cli import release_figure
from privgp.cli.release_figure import MOST_LOG_TICKS, THRESHOLD_GAP, _nice_log_ticks, draw
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

from .picture_cases import cases, context, front, pixels_sha256

LOG10_MIN, LOG10_MAX = -280.0, 300.0   # the response range a log map may have (MIN_LOG_RESPONSE, MAX_RESPONSE)


@given(st.floats(LOG10_MIN, LOG10_MAX), st.floats(1e-6, LOG10_MAX - LOG10_MIN))
def test_format_5_ticks_are_few_round_and_inside(log_lo, width):
    lo, hi = 10.0 ** log_lo, 10.0 ** min(log_lo + width, LOG10_MAX)
    old, new = _nice_log_ticks(lo, hi, 4), _nice_log_ticks(lo, hi, 5)
    assert len(new) <= MOST_LOG_TICKS
    assert all(lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9) for t in new) and new == sorted(new)
    assert set(new) <= set(old) or all(math.log10(t) == round(math.log10(t)) for t in new)   # round values
    if len(old) <= MOST_LOG_TICKS:
        assert new == old   # the same picture as format 4 wherever format 4 was readable
    if len(old) >= 2:
        assert len(new) >= 2   # a scale format 4 labelled keeps at least two labels (red team 18g: 8.1 to 9.9 had none)


@given(st.floats(-5.0, 5.0), st.floats(0.03, 0.5))
@example(math.log10(9.0) - 0.1 / math.log(10.0), 0.2 / math.log(10.0))   # the red team's 8.14 to 9.95
@example(math.log10(8.15), math.log10(9.99 / 8.15))
def test_a_narrow_scale_format_4_labelled_keeps_labels(log_lo, width):
    """Red team 18g: --threshold 9 --clip 0.1 (8.1 to 9.9) had 18 round values in format 4 and none at the coarser
    ones: format 5 labelled the threshold only."""
    lo, hi = 10.0 ** log_lo, 10.0 ** (log_lo + width)
    old, new = _nice_log_ticks(lo, hi, 4), _nice_log_ticks(lo, hi, 5)
    assert (len(new) >= 2 or len(old) < 2) and len(new) <= MOST_LOG_TICKS and set(new) <= set(old)


def test_a_scale_of_many_decades_is_labelled_at_powers_of_ten():
    lo, hi = 50.0 * math.exp(-640.0), 50.0 * math.exp(640.0)   # hi / lo overflows a double
    assert len(_nice_log_ticks(lo, hi, 4)) == 2223
    assert _nice_log_ticks(lo, hi, 5) == [10.0 ** e for e in range(-250, 251, 50)]
    assert _nice_log_ticks(6.0, 9.0, 5) == [6.0, 7.0, 8.0]   # format 4: 31 ticks 6.0, 6.1, ..., 9.0
    assert len(_nice_log_ticks(6.0, 9.0, 4)) == 31
    lo, hi = 9.0 * math.exp(-0.1), 9.0 * math.exp(0.1)   # --threshold 9 --clip 0.1: 18 ticks 8.2, ..., 9.9 in format 4
    assert len(_nice_log_ticks(lo, hi, 4)) == 18
    assert [round(t, 1) for t in _nice_log_ticks(lo, hi, 5)] == [8.2, 8.4, 8.6, 8.8, 9.0, 9.2, 9.4, 9.6, 9.8]


def test_format_5_draws_every_readable_case_as_format_4():
    for name, (field, ctx) in cases().items():
        assert pixels_sha256(draw(field, ctx, 5).png) == pixels_sha256(draw(field, ctx, 4).png), name


def _colour_bar_ticks(monkeypatch, field, ctx, fmt):
    kept = []
    monkeypatch.setattr(release_figure._Figures, "close", staticmethod(kept.append))
    draw(field, ctx, fmt)
    axes = [a for ax in kept[0].axes for a in (ax, *ax.child_axes)]   # the colour bar is an inset of the map
    bar = [ax for ax in axes if ax.get_ylabel().startswith("released")][0]
    return list(bar.get_yticks()), [t.get_text() for t in bar.get_yticklabels()]


def test_a_wide_clipping_range_gets_a_readable_colour_bar(monkeypatch):
    box = Box((850.0, 500.0), (1000.0, 590.0))
    field = front(box)
    field = dataclasses.replace(field, values=np.clip(field.values / 0.6, -1.0, 1.0))   # the colour span is 1
    ctx = dataclasses.replace(context(box, ("x", "y")), response_map=ResponseMap(50.0, 640.0, "log"))
    ticks, labels = _colour_bar_ticks(monkeypatch, field, ctx, 5)
    assert len(ticks) <= MOST_LOG_TICKS + 1 and "$50k (threshold)" in labels, labels
    gap = 2 * 640.0 / THRESHOLD_GAP
    assert all(t == 50.0 or abs(math.log(t / 50.0)) > gap for t in ticks), labels   # no label over the threshold's
    assert "$1e+250k" in labels and "$1e-250k" in labels, labels


def test_a_log_scale_too_narrow_for_round_values_is_labelled_and_told_apart(monkeypatch):
    """Red team 18g F1: --transform log --threshold 1 --clip 1e-9 had no round value in its range: the axis read
    "1 (threshold)" alone (format 4 too); linear ticks there read "1", "1", "1" at short_number's 1e-9."""
    field, _ = cases()["oned"]
    box = Box((0.0,), (10.0,))
    ctx = dataclasses.replace(context(box), response_map=ResponseMap(1.0, 1e-9, "log"))
    ticks, labels = _colour_bar_ticks(monkeypatch, field, ctx, 5)
    assert len(ticks) >= 3 and len(set(labels)) == len(labels) and "$1k (threshold)" in labels, labels
    old_ticks, _ = _colour_bar_ticks(monkeypatch, field, ctx, 4)
    assert old_ticks == [1.0]   # what format 4 drew, and verify still redraws for its releases
