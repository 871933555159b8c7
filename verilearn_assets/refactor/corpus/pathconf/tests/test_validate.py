from pathconf.validate import check, complete, is_scalar, missing


def test_missing_and_complete():
    assert missing({"a": "1"}, ["a", "b"]) == ["b"]
    assert complete({"a": "1"}, ["a"])
    assert not complete({}, ["a"])


def test_check():
    assert check({"a": "1"}, ["a"]) is None
    assert check({}, ["a", "b"]) == "missing 2"


def test_scalar():
    assert is_scalar("x") and is_scalar(1)
    assert not is_scalar(1.5)
