"""Typed reading: delimiters, NA tokens, booleans, datetimes, single columns, bad files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from verilearn_assets.core.ingest.catalog import ReadOptions
from verilearn_assets.core.ingest.read_table import TableReadError, read_typed, sniff_delimiter

OPTS = ReadOptions()
CAP = 10_000_000


def _read(tmp_path: Path, name: str, text: str, **kw: object) -> pd.DataFrame:
    path = tmp_path / name
    path.write_text(text)
    return read_typed(path, ReadOptions(**kw) if kw else OPTS, CAP)


def test_tab_separated_with_every_type(tmp_path: Path) -> None:
    df = _read(
        tmp_path,
        "t.tsv",
        "id\tname\tok\twhen\tscore\tzip\n"
        "1\tAnn\tyes\t2024-01-02\t1.5\t01234\n"
        '2\t"Bob, Jr"\tNo\tNA\tNA\t02345\n'
        "3\tCy\tY\t2024-03-04\t-2\t99999\n",
    )
    assert list(df.columns) == ["id", "name", "ok", "when", "score", "zip"]
    assert str(df["id"].dtype) == "int64" and list(df["id"]) == [1, 2, 3]
    assert list(df["name"]) == ["Ann", "Bob, Jr", "Cy"]
    assert df["ok"].dtype == bool and list(df["ok"]) == [True, False, True]
    assert pd.api.types.is_datetime64_any_dtype(df["when"])
    assert df["when"].isna().tolist() == [False, True, False]
    assert df["when"][2] == pd.Timestamp("2024-03-04")
    assert df["score"].dtype == "float64" and df["score"].isna().tolist() == [False, True, False]
    assert list(df["zip"]) == ["01234", "02345", "99999"]  # leading zeros: a code, not a number


def test_na_tokens_and_nullable_types(tmp_path: Path) -> None:
    df = _read(tmp_path, "na.csv", "n,b,s\n1,true,x\nnull,N/A,?\n-,false,None\n4,,y\n")
    assert str(df["n"].dtype) == "Int64" and df["n"].isna().tolist() == [False, True, True, False]
    assert str(df["b"].dtype) == "boolean"
    assert df["b"].tolist()[0] is True and df["b"].isna().sum() == 2
    assert df["s"].isna().tolist() == [False, True, True, False]


def test_custom_na_tokens_replace_the_defaults(tmp_path: Path) -> None:
    df = _read(tmp_path, "c.csv", "v\n1\n-999\nNA\n", na_tokens=["-999"])
    assert df["v"].isna().tolist() == [False, True, False]
    assert df["v"][2] == "NA"  # no longer a missing token: the column is text now


def test_datetime_formats(tmp_path: Path) -> None:
    df = _read(
        tmp_path,
        "d.csv",
        "iso,dmy,stamp\n2021-05-01,31/12/2020,2021-05-01 10:30:00\n"
        "2021-06-01,01/02/2021,2021-06-01T11:00:00\n",
    )
    for col in ("iso", "dmy", "stamp"):
        assert pd.api.types.is_datetime64_any_dtype(df[col]), col
    assert df["dmy"][0] == pd.Timestamp("2020-12-31")
    assert df["stamp"][1] == pd.Timestamp("2021-06-01 11:00:00")


def test_single_column_table(tmp_path: Path) -> None:
    df = _read(tmp_path, "one.csv", "value\n3\n4.5\n\n7\n")
    assert list(df.columns) == ["value"]
    assert df["value"].tolist() == [3.0, 4.5, 7.0]


def test_semicolon_pipe_and_quoted_delimiters() -> None:
    assert sniff_delimiter("a;b;c\n1;2;3\n", [",", "\t", ";", "|"]) == ";"
    assert sniff_delimiter("a|b\n1|2\n", [",", "\t", ";", "|"]) == "|"
    # commas only inside quotes: the real delimiter is the tab
    assert sniff_delimiter('a\tb\n"x,y,z"\t2\n', [",", "\t"]) == "\t"
    assert sniff_delimiter("value\n1\n2\n", [",", "\t"]) is None


def test_blank_and_repeated_headers_are_made_unique(tmp_path: Path) -> None:
    df = _read(tmp_path, "h.csv", "x,,x\n1,2,3\n")
    assert list(df.columns) == ["x", "column_2", "x_2"]


def test_ragged_rows_are_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n1,2\n3,4,5\n6,7\n")
    with pytest.raises(TableReadError, match=r"ragged\.csv: cannot parse"):
        read_typed(path, OPTS, CAP)


def test_empty_and_header_only_files(tmp_path: Path) -> None:
    with pytest.raises(TableReadError, match="empty file"):
        _read(tmp_path, "e.csv", "\n\n")
    with pytest.raises(TableReadError, match="no data rows"):
        _read(tmp_path, "h.csv", "a,b\n")


def test_size_caps_plain_and_gzip(tmp_path: Path) -> None:
    plain = tmp_path / "big.csv"
    plain.write_text("a\n" + "1\n" * 1000)
    with pytest.raises(TableReadError, match="exceeds the cap of 100 bytes"):
        read_typed(plain, OPTS, 100)
    packed = tmp_path / "bomb.csv.gz"
    packed.write_bytes(gzip.compress(b"a\n" + b"0\n" * 500_000))
    with pytest.raises(TableReadError, match="decompresses past the cap of 10000 bytes"):
        read_typed(packed, OPTS, 10_000)
    small = tmp_path / "small.csv.gz"
    small.write_bytes(gzip.compress(b"a;b\n1;x\n"))
    assert read_typed(small, OPTS, 10_000).shape == (1, 2)


def test_parquet_text_columns_are_typed(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pd.DataFrame(
        {
            "n": ["1", "2", "NA"],
            "f": [0.5, 1.5, None],
            "d": ["2020-01-01", "2020-02-01", "2020-03-01"],
        }
    ).to_parquet(path)
    df = read_typed(path, OPTS, CAP)
    assert str(df["n"].dtype) == "Int64"
    assert df["f"].dtype == "float64"
    assert pd.api.types.is_datetime64_any_dtype(df["d"])
