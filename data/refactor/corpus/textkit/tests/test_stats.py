from textkit.stats import counts, describe, has_repeats, most_common, ratio


def test_counts():
    assert counts("a b a") == {"a": 2, "b": 1}


def test_most_common():
    assert most_common("b a b") == "b"
    assert most_common("", default="none") == "none"


def test_describe_and_repeats():
    assert describe("a b a") == "2 distinct words"
    assert has_repeats("a b a")
    assert not has_repeats("a b")


def test_ratio():
    assert ratio("a b a b", "a") == 0.5
    assert ratio("a", "z") is None
    assert ratio("", "a") is None
