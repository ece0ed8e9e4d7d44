"""Issue 19 from Python: pyarrow tables and record batches, polars frames, Parquet /
Arrow / compressed CSV files, multi-column keys, normalisation and hashing give the
same answers as lists and CSV files, with the CLI's errors."""

from __future__ import annotations

import gzip
import pathlib
from typing import Any, List

import pytest

import privset

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
feather = pytest.importorskip("pyarrow.feather")

N1, N2, OVERLAP = 40, 30, 12


def people() -> "tuple[List[str], List[str], List[int], int]":
    p1 = [f"user{i}@example.com" for i in range(N1)]
    p2 = [f"user{i if j < OVERLAP else N1 + j}@example.com" for j, i in enumerate(range(N2))]
    spend = [(j * 7919) % 1000 for j in range(N2)]
    return p1, p2, spend, sum(spend[:OVERLAP])


def fast() -> Any:
    return dict(he_modulus_bits=1024)


def pair(a: Any, b: Any) -> Any:
    """Runs two parties against each other in this process."""
    from privset._party import run_local

    return run_local(a, b, timeout=60, cpu_price=0.01, network_price=0.08, progress=None)


def write_all(tmp: pathlib.Path, table: Any, name: str) -> List[pathlib.Path]:
    """``table`` as CSV, gzip CSV, Parquet, Arrow IPC file and stream."""
    import pyarrow.csv as pacsv

    paths = []
    csv = tmp / f"{name}.csv"
    pacsv.write_csv(table, csv)
    paths.append(csv)
    gz = tmp / f"{name}.csv.gz"
    gz.write_bytes(gzip.compress(csv.read_bytes()))
    paths.append(gz)
    pq.write_table(table, tmp / f"{name}.parquet")
    paths.append(tmp / f"{name}.parquet")
    feather.write_feather(table, tmp / f"{name}.arrow")
    paths.append(tmp / f"{name}.arrow")
    with pa.ipc.new_stream(tmp / f"{name}.arrows", table.schema) as w:
        w.write_table(table)
    paths.append(tmp / f"{name}.arrows")
    return paths


def test_pyarrow_tables_batches_and_files_give_the_same_answer(tmp_path: pathlib.Path) -> None:
    p1, p2, spend, total = people()
    t1 = pa.table({"email": p1})
    t2 = pa.table({"id": p2, "spend": pa.array(spend, pa.int32())})
    want = privset.local.pi_sum(p1, p2, spend, **fast())
    assert (want.cardinality, list(want.sums)) == (OVERLAP, [total])
    inputs = [(t1, t2), (t1.to_batches()[0], t2.to_batches()[0])]
    inputs += list(zip(write_all(tmp_path, t1, "p1"), write_all(tmp_path, t2, "p2")))
    for a, b in inputs:
        p1_party = privset.PiSum.p1(a, id_column="email", he_modulus_bits=1024)
        p2_party = privset.PiSum.p2(b, id_column="id", value_columns="spend", he_modulus_bits=1024)
        assert len(p1_party) == N1 and len(p2_party) == N2
        r1, r2 = pair(p1_party, p2_party)
        assert r1.cardinality == OVERLAP, type(a).__name__
        assert list(r2.sums) == [total], type(b).__name__
        # PSI from the same inputs: the receiver learns the intersection as text.
        receiver = privset.Psi.receiver(a, id_column="email")
        sender = privset.Psi.sender(b, id_column="id")
        r, _ = pair(receiver, sender)
        assert sorted(r.intersection) == sorted(p1[:OVERLAP])


def test_polars_frames(tmp_path: pathlib.Path) -> None:
    pl = pytest.importorskip("polars")
    p1, p2, spend, total = people()
    a = pl.DataFrame({"email": p1})
    b = pl.DataFrame({"id": p2, "spend": spend})
    r1, r2 = pair(
        privset.PiSum.p1(a, id_column="email", he_modulus_bits=1024),
        privset.PiSum.p2(b, id_column="id", value_columns=["spend"], he_modulus_bits=1024),
    )
    assert (r1.cardinality, list(r2.sums)) == (OVERLAP, [total])
    # polars writes Parquet with zstd by default.
    a.write_parquet(tmp_path / "a.parquet")
    b.write_parquet(tmp_path / "b.parquet")
    res = privset.local.psi(tmp_path / "a.parquet", b.rename({"id": "email"}), id_column="email")
    assert sorted(res.intersection) == sorted(p1[:OVERLAP])


def test_multi_column_keys_normalisation_and_hashing() -> None:
    a = pa.table(
        {
            "first": ["Ann", " Bo ", "Cy"],
            "last": ["Lee", "Kim", "Ng"],
            "email": [" Ann@Example.com", "bo@kim.org", "cy@ng.net"],
            "phone": ["020 7946 0958", "(020) 7946-0959", "020 7946 0000"],
        }
    )
    b = pa.table(
        {
            "last": ["LEE", "kim", "Doe"],
            "first": ["ann", "BO", "Di"],
            "email": ["ann@example.COM ", "BO@KIM.ORG", "di@doe.com"],
            "phone": ["+44 20 7946 0958", "0044 20 7946 0959", "+44 20 7946 1111"],
        }
    )
    cols = ["first", "last"]
    assert privset.local.psi_card(a, b, id_column=cols).cardinality == 0
    res = privset.local.psi(a, b, id_column=cols, normalize="lower")
    # A key of several columns comes back as a tuple of its (normalised) cells.
    assert sorted(res.intersection) == [("ann", "lee"), ("bo", "kim")]
    assert privset.local.psi_card(a, b, id_column="email").cardinality == 0
    assert privset.local.psi_card(a, b, id_column="email", normalize="email").cardinality == 2
    assert privset.local.psi_card(a, b, id_column="phone").cardinality == 0
    res = privset.local.psi(a, b, id_column="phone", normalize="phone-e164", phone_region="GB")
    assert sorted(res.intersection) == ["+442079460958", "+442079460959"]
    res = privset.local.psi(a, b, id_column=cols, normalize=["lower", "lower"], hash_ids="sha256")
    assert res.cardinality == 2
    assert all(len(x) == 64 for x in res.intersection)
    # In-memory lists: the caller's own objects come back, hashing or not.
    res = privset.local.psi(["Ann@X.org ", "b@y.org"], ["ann@x.org"], normalize="email", hash_ids="sha256")
    assert res.intersection == ["Ann@X.org "]
    # pandas frames with several id columns: the caller's rows as tuples.
    pytest.importorskip("pandas")
    res = privset.local.psi(a.to_pandas(), b.to_pandas(), id_column=cols, normalize="lower")
    assert sorted(res.intersection) == sorted([("Ann", "Lee"), (" Bo ", "Kim")])


def test_arrow_errors_name_the_row_and_column(tmp_path: pathlib.Path) -> None:
    t = pa.table({"id": ["a", None, "c"], "v": ["1", "2", "3"], "n": pa.array([1, -2, 3], pa.int64())})
    with pytest.raises(privset.InputError, match=r'no column named "email" \(columns: id, v, n\)'):
        privset.Psi.receiver(t, id_column="email")
    with pytest.raises(privset.InputError, match=r'row 2, column "id": missing identifier \(null\)') as e:
        privset.Psi.receiver(t, id_column="id")
    assert e.value.line == 2
    with pytest.raises(privset.InputError, match=r'column "v" has type Utf8; a value column must be integers'):
        privset.PiSum.p2(t, id_column="n", value_columns="v")
    with pytest.raises(privset.InputError, match=r'row 2: value "-2" in column "n"'):
        privset.PiSum.p2(pa.table({"id": ["a", "b"], "n": [1, -2]}), id_column="id", value_columns="n")
    pq.write_table(t, tmp_path / "t.parquet")
    with pytest.raises(privset.InputError, match=r'column "v" has type Utf8'):
        privset.PiSum.p2(tmp_path / "t.parquet", id_column="id", value_columns="v")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1garbagePAR1")
    with pytest.raises(privset.InputError, match="not a readable Parquet file"):
        privset.Psi.receiver(tmp_path / "bad.parquet", id_column="id")
    with pytest.raises(privset.ConfigurationError, match="normalize"):
        privset.Psi.receiver(["a"], normalize="upper")
    with pytest.raises(privset.InputError, match=r"line 2: a national number"):
        privset.Psi.receiver(["020 7946 0958"], normalize="phone-e164")
