from pathconf.validate import check, complete, first_invalid, is_scalar, missing, unknown_keys


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


def test_unknown_and_invalid():
    values = {"port": "80", "host": "", "mode": "x"}
    assert unknown_keys(values, ["port", "host"]) == ["mode"]
    checks = {"port": str.isdigit, "mode": lambda v: v in ("r", "w"), "user": str.isalpha}
    assert first_invalid(values, checks) == "mode"
    assert first_invalid({"port": "80"}, checks) is None
