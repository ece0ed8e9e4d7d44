"""Parties reaching each other as organisations do: two Python processes over mutual
TLS on loopback, a Python party with a CLI party, an exchange directory, and the
errors of a wrong certificate or mismatched settings."""

from __future__ import annotations

import json
import pathlib
import random
import subprocess
import threading
from typing import Any, Dict, List

import pytest

import privset
from conftest import sets, values_for
from helpers import finish, free_port, privset_binary, spawn_party


def tls_list(files: privset.TlsFiles) -> List[str]:
    return [str(files.ca), str(files.cert), str(files.key)]


def test_two_python_processes_over_mutual_tls(tmp_path: pathlib.Path, rng: random.Random) -> None:
    certs = privset.generate_certs(tmp_path / "certs", ["advertiser", "shop"])
    a, b = sets(rng, 120, 90, 40)
    values = values_for(rng, b)
    port = free_port()
    p1 = spawn_party(
        {
            "party": "PiSum.p1",
            "args": [a],
            "kwargs": {"he_modulus_bits": 1024},
            "run": {"listen": f"127.0.0.1:{port}", "tls": tls_list(certs["advertiser"]), "timeout": 60},
        }
    )
    p2 = privset.PiSum.p2(b, [values[w] for w in b], he_modulus_bits=1024)
    r2 = p2.run(peer=f"127.0.0.1:{port}", tls=certs["shop"], timeout=60)
    r1 = finish(p1)
    expected = sum(values[w] for w in set(a) & set(b))
    assert (r2.cardinality, r2.sum) == (40, expected)
    assert r1["cardinality"] == 40 and r1["sums"] is None
    assert r1["transport"] == r2.transport == "tcp+mtls"
    # Bytes on the wire, TLS included, seen from both ends (up to the closing records,
    # counted by whichever side is still measuring).
    assert abs(r1["bytes_sent"] - r2.bytes_received) < 100 and abs(r1["bytes_received"] - r2.bytes_sent) < 100


def test_psi_between_two_processes(tmp_path: pathlib.Path, rng: random.Random) -> None:
    certs = privset.generate_certs(tmp_path / "certs", ["r", "s"])
    y, x = sets(rng, 80, 60, 25)
    port = free_port()
    sender = spawn_party(
        {"party": "Psi.sender", "args": [x], "run": {"peer": f"127.0.0.1:{port}", "tls": tls_list(certs["s"])}}
    )
    r = privset.Psi.receiver(y).run(listen=f"127.0.0.1:{port}", tls=certs["r"], timeout=60)
    s = finish(sender)
    assert sorted(r.intersection) == sorted(set(x) & set(y))
    assert s["peer_items"] == 80 and "cardinality" not in s


def test_python_party_with_a_cli_party(tmp_path: pathlib.Path, rng: random.Random) -> None:
    """The bindings speak the CLI's protocol: a Python P1 and a `privset` P2."""
    certs = privset.generate_certs(tmp_path / "certs", ["p1", "p2"])
    a, b = sets(rng, 50, 50, 20)
    values = values_for(rng, b)
    csv = tmp_path / "p2.csv"
    csv.write_text("id,spend\n" + "".join(f"{w},{values[w]}\n" for w in b))
    port = free_port()
    cli = subprocess.Popen(
        [
            privset_binary(), "pi-sum", "--role", "p2", "--peer", f"127.0.0.1:{port}",
            *["--tls-ca", str(certs["p2"].ca), "--tls-cert", str(certs["p2"].cert), "--tls-key", str(certs["p2"].key)],
            "--input", str(csv), "--id-column", "id", "--value-column", "spend",
            "--he-modulus-bits", "1024", "--output", str(tmp_path / "p2.json"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    r1 = privset.PiSum.p1(a, he_modulus_bits=1024).run(listen=f"127.0.0.1:{port}", tls=certs["p1"], timeout=60)
    assert cli.wait(timeout=120) == 0, cli.stderr.read() if cli.stderr else ""
    r2 = json.loads((tmp_path / "p2.json").read_text())
    assert r1.cardinality == r2["cardinality"] == 20
    assert r2["sums"] == [sum(values[w] for w in set(a) & set(b))]
    # The CLI's RESULT.json and the Python result have the same fields.
    assert list(r1.to_dict()) == list(r2)


def test_exchange_directory_between_two_threads(tmp_path: pathlib.Path, rng: random.Random) -> None:
    y, x = sets(rng, 50, 40, 10)
    shared = tmp_path / "shared" / "run-0001"
    results: Dict[str, Any] = {}

    def sender() -> None:
        results["sender"] = privset.Psu.sender(x).run(
            exchange_dir=shared, state_dir=tmp_path / "sender-state", poll_interval=0.02, timeout=60
        )

    t = threading.Thread(target=sender)
    t.start()
    r = privset.Psu.receiver(y).run(
        exchange_dir=shared, state_dir=tmp_path / "receiver-state", poll_interval=0.02, timeout=60
    )
    t.join(timeout=60)
    assert sorted(r.union) == sorted(set(x) | set(y))
    assert r.transport == results["sender"].transport == "exchange-dir"
    assert sorted(p.name for p in shared.iterdir())[0] == "0000-receiver.msg"
    # The resume seeds are removed once the run succeeded.
    assert not list((tmp_path / "receiver-state").iterdir())


def test_plaintext_needs_the_flag_on_both_sides(rng: random.Random) -> None:
    y, x = sets(rng, 10, 10, 4)
    port = free_port()
    sender = spawn_party(
        {"party": "PsiCard.sender", "args": [x], "run": {"peer": f"127.0.0.1:{port}", "insecure_no_tls": True}}
    )
    r = privset.PsiCard.receiver(y).run(listen=f"127.0.0.1:{port}", insecure_no_tls=True, timeout=60)
    finish(sender)
    assert r.cardinality == 4 and r.transport == "tcp-plaintext"


def test_certificate_from_another_ca_is_a_transport_error(tmp_path: pathlib.Path) -> None:
    ours = privset.generate_certs(tmp_path / "ours", ["p1", "p2"])
    evil = privset.generate_certs(tmp_path / "evil", ["p2"])
    port = free_port()
    # The impostor trusts the real CA but presents a certificate from its own CA.
    impostor = [str(ours["p2"].ca), str(evil["p2"].cert), str(evil["p2"].key)]
    p2 = spawn_party(
        {"party": "Psi.sender", "args": [["a"]], "run": {"peer": f"127.0.0.1:{port}", "tls": impostor, "timeout": 20}}
    )
    with pytest.raises(privset.TransportError) as e:
        privset.Psi.receiver(["a"]).run(listen=f"127.0.0.1:{port}", tls=ours["p1"], timeout=20)
    assert "certificate" in str(e.value).lower() and e.value.exit_code == 4
    assert finish(p2)["error"] == "TransportError"


def test_peer_name_refuses_another_certificate_from_the_same_ca(tmp_path: pathlib.Path) -> None:
    certs = privset.generate_certs(tmp_path / "certs", ["p1", "p2", "rival"])
    port = free_port()
    rival = certs["rival"]
    impostor = [str(rival.ca), str(rival.cert), str(rival.key)]
    p2 = spawn_party(
        {"party": "Psi.sender", "args": [["a"]], "run": {"peer": f"127.0.0.1:{port}", "tls": impostor, "timeout": 20}}
    )
    with pytest.raises(privset.TransportError) as e:
        privset.Psi.receiver(["a"]).run(listen=f"127.0.0.1:{port}", tls=certs["p1"], peer_name="p2", timeout=20)
    assert "rival" in str(e.value) and "p2" in str(e.value) and e.value.exit_code == 4
    finish(p2)
    # The named peer runs.
    port = free_port()
    p2 = spawn_party(
        {
            "party": "Psi.sender",
            "args": [["a", "b"]],
            "run": {
                "peer": f"127.0.0.1:{port}",
                "tls": [str(certs["p2"].ca), str(certs["p2"].cert), str(certs["p2"].key)],
                "peer_name": "p1",
                "timeout": 20,
            },
        }
    )
    r = privset.Psi.receiver(["a"]).run(listen=f"127.0.0.1:{port}", tls=certs["p1"], peer_name="p2", timeout=20)
    assert r.intersection == ["a"]
    finish(p2)


def test_exchange_directory_link_keys_signed_by_certificates(tmp_path: pathlib.Path) -> None:
    """tls= over an exchange directory signs each party's link key and checks the peer's:
    the named peer runs; another organisation's certificate from the same CA is refused
    when peer_name names the peer."""
    certs = privset.generate_certs(tmp_path / "certs", ["p1", "p2", "rival"])
    shared = tmp_path / "signed"
    p2 = spawn_party(
        {
            "party": "Psi.sender",
            "args": [["a", "b"]],
            "run": {
                "exchange_dir": str(shared),
                "state_dir": str(tmp_path / "p2-state"),
                "tls": [str(certs["p2"].ca), str(certs["p2"].cert), str(certs["p2"].key)],
                "peer_name": "p1",
                "poll_interval": 0.02,
                "timeout": 30,
            },
        }
    )
    r = privset.Psi.receiver(["a", "c"]).run(
        exchange_dir=shared, state_dir=tmp_path / "p1-state", tls=certs["p1"], peer_name="p2",
        poll_interval=0.02, timeout=30,
    )
    assert r.intersection == ["a"] and r.transport == "exchange-dir"
    finish(p2)
    assert (shared / "receiver.pem").read_bytes() == pathlib.Path(certs["p1"].cert).read_bytes()
    rival_dir = tmp_path / "rival"
    rival = threading.Thread(
        target=lambda: pytest.raises(
            privset.TransportError,
            privset.Psi.sender(["a"]).run,
            exchange_dir=rival_dir, state_dir=tmp_path / "rival-state", tls=certs["rival"],
            poll_interval=0.02, timeout=5,
        )
    )
    rival.start()
    with pytest.raises(privset.TransportError) as e:
        privset.Psi.receiver(["a"]).run(
            exchange_dir=rival_dir, state_dir=tmp_path / "p1-state-2", tls=certs["p1"], peer_name="p2",
            poll_interval=0.02, timeout=30,
        )
    rival.join(timeout=60)
    assert "rival" in str(e.value) and '"p2"' in str(e.value), e.value


def test_unreadable_certificate_files_are_named(tmp_path: pathlib.Path) -> None:
    files = privset.TlsFiles(tmp_path / "ca.pem", tmp_path / "me.pem", tmp_path / "me.key")
    with pytest.raises(privset.TransportError, match="ca.pem"):
        privset.Psi.receiver(["a"]).run(listen="127.0.0.1:0", tls=files, timeout=5)


@pytest.mark.parametrize("setting", [{"group": "p256"}, {"last_message": "gcs"}, {"mqrpmt": "poprf", "last_message": "list"}])
def test_mismatched_settings_stop_both_parties(tmp_path: pathlib.Path, setting: dict) -> None:
    shared = tmp_path / "shared"
    errors: Dict[str, BaseException] = {}

    def sender() -> None:
        try:
            privset.Psi.sender(["b"]).run(exchange_dir=shared, state_dir=tmp_path / "s", poll_interval=0.02, timeout=30)
        except privset.PrivsetError as e:
            errors["sender"] = e

    t = threading.Thread(target=sender)
    t.start()
    with pytest.raises(privset.PeerMisbehaved) as e:
        privset.Psi.receiver(["a", "b"], **setting).run(
            exchange_dir=shared, state_dir=tmp_path / "r", poll_interval=0.02, timeout=30
        )
    t.join(timeout=30)
    assert isinstance(errors["sender"], privset.PeerMisbehaved)
    assert "settings do not match" in str(e.value) + str(errors["sender"])


def test_mismatched_pi_sum_settings_between_processes(tmp_path: pathlib.Path) -> None:
    certs = privset.generate_certs(tmp_path / "certs", ["p1", "p2"])
    port = free_port()
    p1 = spawn_party(
        {
            "party": "PiSum.p1",
            "args": [["a", "b"]],
            "kwargs": {"values_he": "elgamal"},
            "run": {"listen": f"127.0.0.1:{port}", "tls": tls_list(certs["p1"]), "timeout": 30},
        }
    )
    with pytest.raises(privset.PeerMisbehaved, match="settings do not match") as e:
        privset.PiSum.p2(["a"], [1], he_modulus_bits=1024).run(peer=f"127.0.0.1:{port}", tls=certs["p2"], timeout=30)
    assert e.value.exit_code == 3
    assert finish(p1)["error"] == "PeerMisbehaved"
