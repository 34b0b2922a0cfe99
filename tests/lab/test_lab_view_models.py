"""The lab's view models (lab/_views.py) and the functions that build them return typed records
that the templates read as attributes; a page whose fields are its template's variables
(``LabPage``) is also the mapping of them that ``page(request, template, **model)`` passes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from ragmeter.lab import _charts, _views
from ragmeter.lab._data_question import _window
from ragmeter.lab._data_slider import slider_context
from ragmeter.lab._render import render


def lab_page(**more: Any) -> _views.LabPage:
    fields: dict[str, Any] = {
        "experiments": ["e"],
        "methods": ["bm25"],
        "chunkings": ["tokens:300:0"],
        "baselines": [_views.BaselineChoice(1, "1 · baseline (bm25, tokens:300:0)")],
        "params": {
            "experiment": "e",
            "method": "bm25",
            "chunking": "tokens:300:0",
            "cut": "k",
            "k": 4,
            "baseline": "none",
            "metric": "R",
        },
        "form_k": 4,
        "form_budget": 1200,
        "cutoff": None,
        "metric": "R",
        "metrics": [("R", "Recall")],
        "sorts": {"id": "question id"},
        "shows": {"all": "all questions"},
        "run": None,
        "base_run": None,
    }
    fields.update(more)
    return _views.LabPage(**fields)


def test_a_page_model_is_the_mapping_of_its_template_variables() -> None:
    page = lab_page(notes=["a note"])
    names = [f.name for f in dataclasses.fields(page)]
    assert list(page) == names and len(page) == len(names)
    assert dict(page)["notes"] == ["a note"] and page["view"] is None
    assert {**page}["experiments"] == ["e"]
    with pytest.raises(KeyError):
        page["nope"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.notes = []  # type: ignore[misc]


def test_the_lab_template_renders_a_page_model() -> None:
    html = render("lab.html", title="Lab", error=None, query={}, **lab_page())
    assert '<option value="e" selected>e</option>' in html
    assert "1 · baseline (bm25, tokens:300:0)" in html
    k_field = '<input type="number" name="k" id="lab-k" data-cut="k" min="1" max="10000" value="4"'
    assert k_field in html


def test_a_document_window_marks_its_spans() -> None:
    text = "x" * 400 + "EVIDENCE" + "y" * 400
    w = _window(text, [(400, 408, 2, 0)])
    assert isinstance(w, _views.Window)
    assert (w.start, w.end, w.before, w.after) == (120, 688, True, True)
    assert [p.text for p in w.pieces if p.grade] == ["EVIDENCE"]
    assert "".join(p.text for p in w.full) == text
    shown = _views.DocumentShown("d", [], w)
    gone = _views.DocumentShown("d", [], None, ["its own text"])
    assert not shown.missing and gone.missing


def test_the_slider_model_is_typed_and_its_chart_comes_from_charts() -> None:
    s = slider_context(k=3)
    assert isinstance(s, _views.SliderPage)
    assert s.first == s.curve["rows"][0] and s.metrics == s.curve["metrics"]
    assert s.spec == _charts.rank_curve_spec(s.curve["rows"], s.metrics, k=3, depth=10)
    html = render("slider.html", title="The slider", error=None, s=s)
    spec = html.split('id="slider-spec">')[1].split("</script>")[0]
    assert json.loads(spec) == s.spec
