"""Inputs: every malformed input raises InputError naming the line, with the CLI's
message, before anything is sent; settings are checked up front."""

from __future__ import annotations

import pathlib
import subprocess
from typing import List

import pytest

import privset
from helpers import privset_binary


@pytest.mark.parametrize(
    "values, line, fragment",
    [
        ([1, -2, 3], 3, 'value "-2" in column "value" is not a non-negative integer'),
        ([1, 2, 1.5], 4, 'value "1.5" in column "value" is not a non-negative integer'),
        (["7", "x", 3], 3, 'value "x" in column "value" is not a non-negative integer'),
        ([None, 2, 3], 2, 'value "None"'),
        ([1, 2**32, 3], 3, "exceeds the bound 4294967295"),
    ],
)
def test_bad_values_name_the_line(values: List[object], line: int, fragment: str) -> None:
    with pytest.raises(privset.InputError) as e:
        privset.PiSum.p2(["a", "b", "c"], values)
    assert e.value.line == line
    assert f"line {line}: " in str(e.value) and fragment in str(e.value)
    assert isinstance(e.value, ValueError) and e.value.exit_code == 2


def test_bad_identifiers_name_the_line() -> None:
    with pytest.raises(privset.InputError, match=r"^line 3: empty identifier$") as e:
        privset.Psi.receiver(["a", "   ", "c"])
    assert e.value.line == 3
    with pytest.raises(privset.InputError, match=r"line 4: identifier of type float"):
        privset.Psi.sender(["a", "b", 1.5])
    with pytest.raises(privset.InputError, match=r"line 2: identifier of type NoneType"):
        privset.PiSum.p1([None])


def test_lengths_and_types_are_checked() -> None:
    with pytest.raises(privset.InputError, match='value column "value" has 2 entries for 3 identifiers'):
        privset.PiSum.p2(["a", "b", "c"], [1, 2])
    with pytest.raises(privset.ConfigurationError, match="not a single str"):
        privset.Psi.receiver("abc")
    with pytest.raises(privset.ConfigurationError, match="must be iterable"):
        privset.Psi.receiver(42)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: privset.PiSum.p1(["a"], group="curve448"), 'group must be one of ristretto255, p256, p256-compressed, x25519, not "curve448"'),
        (lambda: privset.PiSum.p1(["a"], duplicates="last"), "duplicates must be 'error', 'sum' or 'first'"),
        (lambda: privset.PiSum.p2(["a"], [1], he_modulus_bits=1000), "Paillier modulus_bits must be >= 1024"),
        (lambda: privset.PiSum.p2(["a"]), "P2 needs at least one value column"),
        (lambda: privset.Psi.receiver(["a"], mqrpmt="poprf"), "--mqrpmt poprf sends the permuted list"),
        (lambda: privset.PrivateId.receiver(["a"], mqrpmt="poprf", last_message="list"), "private-id runs its distributional PSU on the cwPRF mqRPMT"),
        (lambda: privset.PsiCardSum.sender(["a"]), "the sender needs exactly one value column"),
        (lambda: privset.Psi.receiver(["a"]).run(timeout=1), "give exactly one of listen=, peer= or exchange_dir="),
        (lambda: privset.Psi.receiver(["a"]).run(peer="127.0.0.1:9"), "TCP links use mutual TLS"),
        (lambda: privset.Psi.receiver(["a"]).run(exchange_dir="x", insecure_no_tls=True), "an exchange directory has no TLS"),
        (lambda: privset.Psi.receiver(["a"]).run(peer="127.0.0.1:9", insecure_no_tls=True, timeout=-1), "timeout must be a positive"),
    ],
)
def test_settings_are_checked_before_anything_is_sent(make, message: str) -> None:
    with pytest.raises((privset.ConfigurationError, privset.InputError)) as e:
        make()
    assert message in str(e.value)


def test_csv_files_are_read_as_the_cli_reads_them(tmp_path: pathlib.Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("email,spend\n a@x ,5\nb@x,7\nc@x,11\n")
    r = privset.local.pi_sum(["a@x", "c@x", "d@x"], good, id_column="email", value_columns="spend", he_modulus_bits=1024)
    assert (r.cardinality, r.sum) == (2, 16)
    union = privset.local.psu(good, ["z@x"], id_column="email").union
    assert sorted(union) == ["a@x", "b@x", "c@x", "z@x"]


@pytest.mark.parametrize(
    "content, line",
    [
        ("id,spend\na,1\nb,-2\n", 3),
        ("id,spend\na,1\nb,2\na,3\n", 4),
        ("id,spend\na,1.5\n", 2),
        ("id,spend\na,4294967296\n", 2),
        ("id,spend\na,1\n  ,2\n", 3),
        # The line an editor shows, whatever the line endings.
        ("id,spend\r\na,1\r\nb,-2\r\n", 3),
        ("id,spend\ra,1\rb,-2\r", 3),
        ('id,spend\n"a\nb",1\nc,-2\n', 4),
        ("id,spend\r\na,1\r\nb\r\n", 3),
    ],
)
def test_csv_errors_carry_the_cli_message(tmp_path: pathlib.Path, content: str, line: int) -> None:
    path = tmp_path / "p2.csv"
    path.write_bytes(content.encode())
    with pytest.raises(privset.InputError) as e:
        privset.PiSum.p2(path, id_column="id", value_columns=["spend"])
    assert e.value.line == line and f"line {line}" in str(e.value)
    # The privset binary prints the same message for the same file (exit code 2).
    cli = subprocess.run(
        [
            privset_binary(), "pi-sum", "--role", "p2", "--peer", "127.0.0.1:9", "--insecure-no-tls",
            "--input", str(path), "--id-column", "id", "--value-column", "spend",
            "--output", str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert cli.returncode == e.value.exit_code == 2
    assert cli.stderr.strip() == f"privset: {e.value}"


def test_csv_column_errors(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p1.csv"
    path.write_text("email\na\n")
    with pytest.raises(privset.InputError, match=r'no column named "mail" \(columns: email\)'):
        privset.Psi.receiver(path, id_column="mail")
    with pytest.raises(privset.InputError, match="cannot read"):
        privset.Psi.receiver(tmp_path / "missing.csv", id_column="email")
    with pytest.raises(privset.ConfigurationError, match="needs id_column"):
        privset.Psi.receiver(path)


def test_a_huge_value_is_quoted_as_written(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "p2.csv"
    path.write_bytes(b"id,spend\r\na," + b"12345" * 9 + b"\r\n")
    with pytest.raises(privset.InputError) as e:
        privset.PiSum.p2(path, id_column="id", value_columns=["spend"])
    assert e.value.line == 2
    assert f"value {'12345' * 8}... in column" in str(e.value)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: privset.PiSum.p1(["a"], threshold=-1), "threshold must be between 0 and 2^64-1, got -1"),
        (lambda: privset.PiSum.p1(["a"], max_peer_items=2**64), "max_peer_items must be between 0 and 2^64-1, got 18446744073709551616"),
        (lambda: privset.PiSum.p1(["a"], he_modulus_bits=-3072), "he_modulus_bits must be between 0 and 2^32-1, got -3072"),
        (lambda: privset.PiSum.p2(["a"], [1], value_bound=-5), "value_bound must be between 0 and 2^64-1, got -5"),
        (lambda: privset.PiSum.p2(["a"], [1], sum_bound=-1), "sum_bound must be between 0 and 2^128-1, got -1"),
        (lambda: privset.PsiCardSum.sender(["a"], [1], value_bound=10**50), "value_bound must be between 0 and 2^64-1, got 1000"),
        (lambda: privset.Psi.receiver(["a"], max_peer_items=-1), "max_peer_items must be between 0 and 2^64-1, got -1"),
        (lambda: privset.PiSum.p1(["a"], threshold="5"), "threshold must be an integer, got '5'"),
    ],
)
def test_out_of_range_integers_are_configuration_errors(make, message: str) -> None:
    with pytest.raises(privset.ConfigurationError) as e:
        make()
    assert message in str(e.value)
    assert e.value.exit_code == 2
