"""The minimum vertex cut that decides what reverse mode stores (ir_ad/reverse/plan/mincut.py)."""

import pytest

from adgen.ir_ad.reverse.plan.mincut import INF, NoCut, min_vertex_cut


def test_stores_the_cheapest_separating_nodes():
    # a (root, 8 B) -> b (16 B) -> c (8 B, needed): store a or c, not b
    cut = min_vertex_cut({"a": 8, "b": 16, "c": 8}, {("a", "b"), ("b", "c")}, {"a"}, {"c"})
    assert cut == {"c"}  # of equal cuts, the one nearest the needed value


def test_one_root_feeding_many_needed_values_is_stored_once():
    nodes = {"r": 8, "x": 8, "y": 8, "z": 8}
    edges = {("r", "x"), ("r", "y"), ("r", "z")}
    assert min_vertex_cut(nodes, edges, {"r"}, {"x", "y", "z"}) == {"r"}


def test_a_needed_value_recomputable_without_roots_needs_nothing():
    assert min_vertex_cut({"c": 8}, set(), set(), {"c"}) == set()


def test_never_stored_nodes_are_cut_around():
    nodes = {"a": 8, "b": INF, "c": 8}
    assert min_vertex_cut(nodes, {("a", "b"), ("b", "c")}, {"a"}, {"c"}) == {"c"}
    nodes = {"a": 8, "b": 4, "c": INF}
    assert min_vertex_cut(nodes, {("a", "b"), ("b", "c")}, {"a"}, {"c"}) == {"b"}


def test_no_finite_cut_names_the_needed_value():
    nodes = {"a": INF, "b": INF, "c": INF}
    with pytest.raises(NoCut) as caught:
        min_vertex_cut(nodes, {("a", "b"), ("b", "c")}, {"a"}, {"c"})
    assert caught.value.node == "c"
