"""pandas in and out: DataFrame columns and Series as inputs, result rows as data
frames with the CLI's --output-rows columns, line numbers of data frame rows."""

from __future__ import annotations

import random

import pytest

import privset
from conftest import FAST, sets

pd = pytest.importorskip("pandas")  # pandas is optional; the test command installs it


def frames(rng: random.Random):
    a, b = sets(rng, 80, 60, 30)
    exposures = pd.DataFrame({"email": a, "campaign": [rng.choice("xyz") for _ in a]})
    purchases = pd.DataFrame(
        {"email": b, "spend": [rng.randrange(500) for _ in b], "items": [rng.randrange(5) for _ in b]}
    )
    return exposures, purchases


def test_pi_sum_from_two_data_frames(rng: random.Random) -> None:
    exposures, purchases = frames(rng)
    joined = exposures.merge(purchases, on="email")
    r = privset.local.pi_sum(exposures, purchases, id_column="email", value_columns=["spend", "items"], **FAST)
    assert r.cardinality == len(joined)
    assert r.sums == (joined["spend"].sum(), joined["items"].sum())
    # Series work too, named after their columns in messages.
    r = privset.local.pi_sum(exposures["email"], purchases["email"], purchases["spend"], **FAST)
    assert r.sum == joined["spend"].sum()
    # Segments from a column.
    r = privset.local.pi_sum(
        exposures, purchases, id_column="email", value_columns="spend", segment_column="campaign", **FAST
    )
    want = joined.groupby("campaign").size().to_dict()
    assert {s.segment: s.cardinality for s in r.p1.segments} == want


def test_rows_come_back_as_data_frames(rng: random.Random) -> None:
    exposures, purchases = frames(rng)
    r = privset.local.psi(exposures, purchases, id_column="email")
    inter = r.receiver.to_frame()
    assert list(inter.columns) == ["email"]
    assert sorted(inter["email"]) == sorted(set(exposures["email"]) & set(purchases["email"]))
    # Join the intersection back onto the receiver's own data.
    assert len(inter.merge(exposures, on="email")) == r.cardinality

    u = privset.local.psu(exposures["email"], purchases["email"]).receiver.to_frame()
    assert len(u) == len(set(exposures["email"]) | set(purchases["email"]))

    shares = privset.local.psi_share(exposures["email"], purchases["email"])
    assert list(shares.receiver.to_frame().columns) == ["index", "share"]
    joined = shares.receiver.to_frame().merge(shares.sender.to_frame(), on="index")
    opened = sorted(privset.open_share(a, b).decode() for a, b in zip(joined["share_x"], joined["share_y"]))
    assert opened == sorted(set(exposures["email"]) & set(purchases["email"]))

    pid = privset.local.private_id(exposures, purchases, id_column="email")
    left, right = pid.receiver.to_frame(), pid.sender.to_frame()
    assert list(left.columns) == ["private_id", "email"]
    assert (left["private_id"] == right["private_id"]).all()  # aligned row by row
    both = left.dropna().merge(right.dropna(), on="private_id")
    assert (both["email_x"] == both["email_y"]).all() and len(both) == 30


def test_integer_identifiers_come_back_as_integers() -> None:
    mine = pd.DataFrame({"user_id": [101, 202, 303, 404]})
    theirs = pd.Series([202, 404, 505], name="user_id")
    r = privset.local.psi(mine["user_id"], theirs)
    assert sorted(r.intersection) == [202, 404]
    assert r.receiver.to_frame()["user_id"].dtype.kind == "i"


def test_data_frame_rows_are_named_by_their_line() -> None:
    """Row i of a data frame is line i + 2: its line in df.to_csv(index=False)."""
    df = pd.DataFrame({"email": ["a", "b", "c", "d"], "spend": [1, 2, -3, 4]})
    with pytest.raises(privset.InputError) as e:
        privset.PiSum.p2(df, id_column="email", value_columns="spend")
    assert e.value.line == 4 and 'line 4: value "-3" in column "spend"' in str(e.value)
    assert df.to_csv(index=False).splitlines()[e.value.line - 1] == "c,-3"
    # A float column (NaN for a missing value) is not a column of integers.
    df = pd.DataFrame({"email": ["a", "b"], "spend": [1, None]})
    with pytest.raises(privset.InputError, match='line 2: value "1.0"'):
        privset.PiSum.p2(df, id_column="email", value_columns="spend")


def test_missing_columns_are_named() -> None:
    df = pd.DataFrame({"email": ["a"], "spend": [1]})
    with pytest.raises(privset.ConfigurationError, match=r"no column named 'amount' \(columns: email, spend\)"):
        privset.PiSum.p2(df, id_column="email", value_columns="amount")
    with pytest.raises(privset.ConfigurationError, match="needs id_column"):
        privset.Psi.receiver(df)
