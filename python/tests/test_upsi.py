"""Unbalanced labeled PSI (Cong et al. 2021) through the Python API: the client's
matches and labels against the plaintext answer, labeled and unlabeled and on the
edges, a database changed, re-keyed, saved and reloaded between queries, refused when
corrupted or queried by too large a set, and interchangeable with the CLI's (a
CLI-built database answering in Python; a Python-built one served by the CLI to a
Python client over mutual TLS)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import pathlib
import random
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

import privset
from conftest import sets
from helpers import free_port, privset_binary


def answer(client: List[Any], labels: Dict[Any, Any]) -> Dict[Any, Optional[Tuple[Any, ...]]]:
    """The plaintext answer: each client item the server holds, with its label's cells."""
    return {x: (None if labels[x] is None else (labels[x],)) for x in dict.fromkeys(client) if x in labels}


def found(matches: List[privset.UpsiMatch]) -> Dict[Any, Optional[Tuple[Any, ...]]]:
    out = {m.item: m.label for m in matches}
    assert len(out) == len(matches), "an item matched twice"
    return out


def labeled_db(server: List[str], **kwargs: Any) -> Tuple[privset.UpsiDatabase, Dict[Any, Any]]:
    labels = {x: f"label of {x}" for x in server}
    return privset.UpsiDatabase.build(server, [labels[x] for x in server], **kwargs), labels


@pytest.mark.parametrize("n_client,n_server,overlap", [(50, 400, 20), (200, 1000, 200), (30, 30, 0)])
def test_labeled_matches_the_plaintext(rng: random.Random, n_client: int, n_server: int, overlap: int) -> None:
    client, server = sets(rng, n_client, n_server, overlap)
    db, labels = labeled_db(server)
    r = privset.local.upsi(db, client)
    assert found(r.matches) == answer(client, labels)
    assert len(r.matches) == overlap
    assert r.client.items == n_client and r.client.label_bytes == db.label_bytes
    assert r.client.to_dict()["matches"] == overlap and r.client.rows == overlap
    assert r.client.bundle_counts == db.bundle_counts and r.client.preset == db.preset
    assert r.server.client_items == n_client and r.server.items == n_server
    assert r.client.false_positive_log2 < -20
    # Matches keep the client's input order.
    assert [m.item for m in r.matches] == [x for x in client if x in labels]


def test_unlabeled_database(rng: random.Random) -> None:
    client, server = sets(rng, 40, 300, 15)
    db = privset.UpsiDatabase.build(server)
    assert db.label_bytes == 0
    r = privset.local.upsi(db, client)
    assert found(r.matches) == {x: None for x in set(client) & set(server)}
    assert list(r.client.to_frame().columns) == ["id"]


@pytest.mark.parametrize(
    "client,expected",
    [
        ([], {}),
        (["x1", "x2"], {}),
        (["s1"], {"s1": ("L1",)}),
        (["s0", "s1", "s2"], {"s0": ("L0",), "s1": ("L1",), "s2": ("L2",)}),
        (["s1", "s1", "nope", "s2", "s1"], {"s1": ("L1",), "s2": ("L2",)}),
    ],
    ids=["empty-client", "no-match", "one-item", "all-match", "duplicates-in-client"],
)
def test_edges(client: List[str], expected: Dict[str, Tuple[str]]) -> None:
    db = privset.UpsiDatabase.build(["s0", "s1", "s2"], ["L0", "L1", "L2"])
    r = privset.local.upsi(db, client)
    assert found(r.matches) == expected
    assert r.client.items == len(set(client))


def test_a_database_of_one_item() -> None:
    db = privset.UpsiDatabase.build(["only"], [b"\x00\xff"])
    assert len(db) == 1
    assert found(privset.local.upsi(db, ["only", "other"]).matches) == {"only": (b"\x00\xff",)}


def test_labels_of_1_and_1024_bytes(rng: random.Random) -> None:
    # One byte of label: a one-byte cell, stored as it is; an empty cell.
    tiny = privset.UpsiDatabase.build(["a", "b", "c"], ["x", "y", ""])
    assert tiny.label_bytes == 1 and tiny.info()["label_layout"] == "raw"
    assert found(privset.local.upsi(tiny, ["b", "c"]).matches) == {"b": ("y",), "c": ("",)}
    # Two cells do not fit a database of one-cell labels; nor does a trailing zero byte.
    with pytest.raises(privset.ConfigurationError, match="hold one column"):
        tiny.insert(["d"], [("p", "q")])
    with pytest.raises(privset.InputError, match="zero byte"):
        tiny.insert(["d"], [b"\x00"])
    # 1,024 bytes, the largest: random bytes (not UTF-8: handed back as bytes; the last
    # not zero, which would read as padding).
    big = {f"k{i}": bytes([0xFF]) + rng.randbytes(1020) + b"\x01" for i in range(20)}
    db = privset.UpsiDatabase.build(list(big), list(big.values()), label_bytes=1024)
    assert db.label_bytes == 1024
    client = ["k3", "k17", "none"]
    assert found(privset.local.upsi(db, client).matches) == {"k3": (big["k3"],), "k17": (big["k17"],)}
    with pytest.raises(privset.ConfigurationError, match="this database's labels hold 1024"):
        db.insert(["long"], [b"z" * 1025])


def test_several_label_columns_from_a_data_frame_and_to_frame() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"email": ["a@x", "b@x", "c@x"], "tier": ["gold", "", "bronze"], "n": [1, 2, 3]})
    db = privset.UpsiDatabase.build(frame, id_column="email", label_columns=["tier", "n"])
    r = privset.local.upsi(db, ["c@x", "b@x", "z@x"])
    assert found(r.matches) == {"c@x": ("bronze", "3"), "b@x": ("", "2")}
    out = r.client.to_frame()
    assert list(out.columns) == ["id", "label_1", "label_2"]
    assert out.values.tolist() == [["c@x", "bronze", "3"], ["b@x", "", "2"]]
    # Labels as tuples of cells are the same labels.
    same = privset.UpsiDatabase.build(["a@x", "b@x", "c@x"], [("gold", "1"), ("", 2), ("bronze", 3)])
    assert found(privset.local.upsi(same, ["c@x", "b@x"]).matches) == found(r.matches)


def test_insert_remove_and_rotate_then_query(rng: random.Random) -> None:
    client, server = sets(rng, 30, 200, 10)
    db, labels = labeled_db(server, label_bytes=64)
    server_party = privset.Upsi.server(db)
    query = privset.Upsi.client(client)

    def ask() -> Dict[Any, Any]:
        mine, _ = privset.local.run_pair(query, server_party)
        return found(mine.matches)

    assert ask() == answer(client, labels)
    added = [x for x in client if x not in labels][:5]
    db.insert(added, [f"new {x}" for x in added])
    labels.update({x: f"new {x}" for x in added})
    gone = [x for x in client if x in labels][:3]
    assert db.remove([*gone, "never-there"]) == 3
    for x in gone:
        del labels[x]
    # A replaced label.
    kept = next(x for x in client if x in labels)
    db.insert([kept], ["replaced"])
    labels[kept] = "replaced"
    assert len(db) == 200 + 5 - 3
    assert ask() == answer(client, labels)
    assert db.oprf == "x25519"
    db.rotate_key()
    assert ask() == answer(client, labels)
    # A key in the other group, and back.
    db.rotate_key(oprf="ristretto255")
    assert db.oprf == "ristretto255" and db.info()["oprf"] == "ristretto255"
    assert ask() == answer(client, labels)
    db.rotate_key("x25519")
    assert db.oprf == "x25519"
    assert ask() == answer(client, labels)
    with pytest.raises(privset.ConfigurationError, match="expected \"x25519\" or \"ristretto255\""):
        db.rotate_key(oprf="p256")
    # Moved to its own preset (the same layout); another layout is refused.
    db.set_preset(db.preset)
    assert ask() == answer(client, labels)
    other = "n4096-c4k" if db.preset != "n4096-c4k" else "n4096-c1k"
    with pytest.raises(privset.ConfigurationError, match="lays out the data differently"):
        db.set_preset(other)
    with pytest.raises(privset.ConfigurationError, match="no unbalanced-PSI preset"):
        db.set_preset("nope")
    with pytest.raises(privset.ConfigurationError, match="this database is labeled"):
        db.insert(["unlabeled"])


def test_save_and_load_round_trip(tmp_path: pathlib.Path, rng: random.Random) -> None:
    client, server = sets(rng, 25, 150, 12)
    db, labels = labeled_db(server)
    path = tmp_path / "db.upsi"
    db.save(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    again = privset.UpsiDatabase.load(path)
    assert (len(again), again.preset, again.label_bytes, again.bundle_counts) == (
        len(db), db.preset, db.label_bytes, db.bundle_counts,
    )  # fmt: skip
    def described(d: privset.UpsiDatabase) -> Dict[str, Any]:
        return {k: v for k, v in d.info().items() if k != "memory_mib"}

    assert described(again) == described(db)
    assert db.info()["items"] == 150 and db.info()["max_client_items"] == 1024
    assert found(privset.local.upsi(again, client).matches) == answer(client, labels)
    # Served straight from the file.
    assert found(privset.local.upsi(path, client).matches) == answer(client, labels)
    # With no polynomial held ready: every one converted during the query, same answer.
    assert again.info()["memory_mib"]["ready_polynomials"] > 0
    packed = privset.UpsiDatabase.load(path, cache_mb=0)
    assert packed.info()["memory_mib"]["ready_polynomials"] == 0
    assert found(privset.local.upsi(packed, client).matches) == answer(client, labels)
    found_, _ = privset.local.run_pair(privset.Upsi.client(client), privset.Upsi.server(path, cache_mb=0))
    assert found(found_.matches) == answer(client, labels)


def test_a_corrupted_database_file_is_a_clear_error(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "db.upsi"
    privset.UpsiDatabase.build(["a", "b"], ["1", "2"]).save(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data[: len(data) - 7]))
    with pytest.raises(privset.InputError, match=str(path)):
        privset.UpsiDatabase.load(path)
    with pytest.raises(privset.InputError, match=str(path)):
        privset.Upsi.server(path)
    with pytest.raises(privset.InputError, match="cannot read"):
        privset.UpsiDatabase.load(tmp_path / "missing.upsi")


def version_5_file(data: bytes) -> bytes:
    """A database file as privset wrote it before the key settings were recorded
    (version 5): the current file without its settings field (after the magic,
    version, preset, label length, nonce length, label layout, key seed and OPRF
    group), its checksum made again."""
    body = data[:-32]
    preset_len = int.from_bytes(body[20:24], "big")
    at = 16 + 4 + 4 + preset_len + 4 + 1 + 1 + 32 + 1
    n = int.from_bytes(body[at : at + 2], "big")
    old = bytearray(body[:at] + body[at + 2 + n :])
    old[16:20] = (5).to_bytes(4, "big")
    return bytes(old) + hashlib.sha256(bytes(old)).digest()


def test_key_settings_are_recorded_and_agreed(tmp_path: pathlib.Path) -> None:
    """The database records how its items were made (here lower-cased e-mail
    addresses); a client that trims only used to match nothing with no error, and now
    stops at the hello naming the setting. Changes with other settings are refused; a
    database recording none (an older file) is refused for serving."""
    server = [f"User{i}@Example.com" for i in range(200)]
    client = [f"User{i}@Example.com" for i in range(190, 230)]
    db = privset.UpsiDatabase.build(server, normalize="email")
    settings = {"key-columns": "1", "normalize": "email", "hash-ids": "none"}
    assert db.info()["key_settings"] == settings
    with pytest.raises(privset.PeerMisbehaved, match="input settings differ, normalize"):
        privset.local.upsi(db, client)
    assert len(privset.local.upsi(db, client, normalize="email").matches) == 10
    mismatch = "normalize: the database uses normalize email, the input uses normalize trim"
    with pytest.raises(privset.ConfigurationError, match=mismatch):
        db.insert(["New@Example.com"])
    with pytest.raises(privset.ConfigurationError, match=mismatch):
        db.remove(server[:3])
    assert len(db) == 200
    db.insert(["New@Example.com"], normalize="email")
    assert db.remove(server[:3], normalize="email") == 3
    assert len(db) == 198
    path = tmp_path / "db.upsi"
    db.save(path)
    assert privset.UpsiDatabase.load(path).info()["key_settings"] == settings
    (tmp_path / "old.upsi").write_bytes(version_5_file(path.read_bytes()))
    for open_old in (privset.UpsiDatabase.load, privset.Upsi.server):
        with pytest.raises(privset.ConfigurationError, match="build it again"):
            open_old(tmp_path / "old.upsi")
    # The CLI still describes it, and refuses to serve it.
    info = subprocess.run(
        [privset_binary(), "upsi", "db", "info", "--db", str(tmp_path / "old.upsi")], capture_output=True, text=True
    )
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["key_settings"] is None
    served = subprocess.run(
        [
            privset_binary(), "upsi", "serve", "--db", str(tmp_path / "old.upsi"),
            "--listen", f"127.0.0.1:{free_port()}", "--insecure-no-tls",
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert served.returncode == 2 and "build it again" in served.stderr, served.stderr


def test_a_client_over_the_presets_limit_is_a_clear_error() -> None:
    db = privset.UpsiDatabase.build([f"s{i}" for i in range(100)])
    assert db.info()["max_client_items"] == 1024
    # Either party may be the first to tell (the client says "the server's preset").
    limit = "the client has 1025 items; (the|this) server's preset n4096-c1k takes at most 1024"
    with pytest.raises(privset.PeerMisbehaved, match=limit):
        privset.local.upsi(db, [f"c{i}" for i in range(1025)])
    with pytest.raises(privset.ConfigurationError, match="the largest preset takes"):
        privset.Upsi.client([f"c{i}" for i in range(100_000)])


def test_build_settings_are_checked() -> None:
    with pytest.raises(privset.ConfigurationError, match="2 labels for 3 items"):
        privset.UpsiDatabase.build(["a", "b", "c"], ["1", "2"])
    with pytest.raises(privset.ConfigurationError):
        privset.UpsiDatabase.build(["a"], preset="no-such-preset")
    with pytest.raises(privset.ConfigurationError, match="label_columns="):
        privset.UpsiDatabase.build(["a"], label_columns=["x"])
    with pytest.raises(privset.ConfigurationError, match="oprf="):
        privset.UpsiDatabase.build(["a"], oprf="x448")


def test_a_ristretto255_database_matches_the_plaintext(rng: random.Random) -> None:
    client, server = sets(rng, 40, 300, 15)
    labels = {x: f"label {x}" for x in server}
    db = privset.UpsiDatabase.build(server, [labels[x] for x in server], oprf="ristretto255")
    assert db.oprf == "ristretto255"
    assert found(privset.local.upsi(db, client).matches) == answer(client, labels)


def test_progress_and_an_exception_in_the_callback(rng: random.Random) -> None:
    client, server = sets(rng, 100, 500, 30)
    db, labels = labeled_db(server)
    events: List[privset.Progress] = []
    r = privset.local.upsi(db, client, progress=events.append)
    assert found(r.matches) == answer(client, labels)
    last = {e.party: e for e in events}
    assert set(last) == {"client", "server"} and last["client"].status == "done"
    assert last["client"].bytes_sent == r.client.bytes_sent

    def fail(p: privset.Progress) -> None:
        if p.messages_sent:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        privset.local.upsi(db, client, progress=fail)
    deadline = time.monotonic() + 60
    while privset._native.live_workers() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert privset._native.live_workers() == 0


def test_an_input_error_names_its_line() -> None:
    with pytest.raises(privset.InputError, match="line 3: identifier of type float") as e:
        privset.UpsiDatabase.build(["a", 1.5], ["x", "y"])
    assert e.value.line == 3
    with pytest.raises(privset.InputError, match="line 4"):
        privset.Upsi.client(["a", "b", None])


def write_csv(path: pathlib.Path, rows: List[Tuple[str, ...]], header: Tuple[str, ...]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def test_a_cli_built_database_answers_the_same_in_python(tmp_path: pathlib.Path, rng: random.Random) -> None:
    client, server = sets(rng, 40, 250, 18)
    rows = [(x, f"acct-{i}", str(i * 7)) for i, x in enumerate(server)]
    write_csv(tmp_path / "server.csv", rows, ("email", "account", "score"))
    built = subprocess.run(
        [
            privset_binary(), "upsi", "db", "build", "--input", str(tmp_path / "server.csv"),
            "--id-column", "email", "--label-column", "account,score", "--db", str(tmp_path / "cli.upsi"),
        ],
        capture_output=True, text=True,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    cli_db = privset.UpsiDatabase.load(tmp_path / "cli.upsi")
    expected = {x: (a, s) for x, a, s in rows if x in set(client)}
    assert found(privset.local.upsi(cli_db, client).matches) == expected
    # The same rows through Python (file and in-memory) give the same labels, bytes for
    # bytes: the two databases are interchangeable.
    from_file = privset.UpsiDatabase.build(
        tmp_path / "server.csv", id_column="email", label_columns=["account", "score"]
    )
    in_memory = privset.UpsiDatabase.build(server, [(a, s) for _, a, s in rows])
    for db in (from_file, in_memory):
        assert db.label_bytes == cli_db.label_bytes and db.preset == cli_db.preset
        assert found(privset.local.upsi(db, client).matches) == expected


def tls_args(certs: Dict[str, privset.TlsFiles], who: str) -> List[str]:
    t = certs[who]
    return ["--tls-ca", str(t.ca), "--tls-cert", str(t.cert), "--tls-key", str(t.key)]


def test_cli_server_and_python_client_over_mutual_tls(tmp_path: pathlib.Path, rng: random.Random) -> None:
    client, server = sets(rng, 60, 500, 25)
    db, labels = labeled_db(server)
    db.save(tmp_path / "py.upsi")
    certs = privset.generate_certs(tmp_path / "certs", ["server", "client"])
    port = free_port()
    cli = subprocess.Popen(
        [
            privset_binary(), "upsi", "serve", "--db", str(tmp_path / "py.upsi"),
            "--listen", f"127.0.0.1:{port}", "--max-sessions", "1", *tls_args(certs, "server"),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        r = privset.Upsi.client(client).run(
            peer=f"127.0.0.1:{port}", tls=certs["client"], server_name="server", timeout=60
        )
        out, err = cli.communicate(timeout=60)
    finally:
        cli.kill()
    assert cli.returncode == 0, err
    assert found(r.matches) == answer(client, labels)
    assert r.transport == "tcp+mtls"
    session = json.loads(out.strip().splitlines()[-1])
    assert session["ok"] and session["outcome"]["client_items"] == 60


def test_python_server_of_a_file_and_cli_clients_with_a_reload(tmp_path: pathlib.Path, rng: random.Random) -> None:
    client, server = sets(rng, 30, 200, 10)
    db, labels = labeled_db(server, label_bytes=40)
    path = tmp_path / "db.upsi"
    db.save(path)
    write_csv(tmp_path / "client.csv", [(x,) for x in client], ("email",))
    certs = privset.generate_certs(tmp_path / "certs", ["server", "client"])
    port = free_port()
    party = privset.Upsi.server(path, reload_interval=0.2)
    sessions: List[Dict[str, Any]] = []
    thread = threading.Thread(
        target=lambda: sessions.extend(
            party.serve(listen=f"127.0.0.1:{port}", tls=certs["server"], max_sessions=2, timeout=60)
        )
    )
    thread.start()

    def query(n: int) -> Dict[str, Tuple[str, ...]]:
        rows = tmp_path / f"rows{n}.csv"
        q = subprocess.run(
            [
                privset_binary(), "upsi", "query", "--peer", f"127.0.0.1:{port}", "--tls-server-name", "server",
                *tls_args(certs, "client"), "--input", str(tmp_path / "client.csv"), "--id-column", "email",
                "--output", str(tmp_path / f"result{n}.json"), "--output-rows", str(rows),
            ],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert q.returncode == 0, q.stderr
        with open(rows, newline="") as f:
            return {row["email"]: (row["label_1"],) for row in csv.DictReader(f)}

    try:
        assert query(1) == answer(client, labels)
        extra = [x for x in client if x not in labels][:4]
        db.insert(extra, ["late"] * len(extra))
        db.save(path)
        labels.update({x: "late" for x in extra})
        time.sleep(1.0)  # the watcher looks every 0.2 s
        assert query(2) == answer(client, labels)
    finally:
        thread.join(timeout=120)
    assert len(sessions) == 2 and all(s["ok"] for s in sessions)


def test_python_server_serves_only_allowed_clients(tmp_path: pathlib.Path, rng: random.Random) -> None:
    client, server = sets(rng, 20, 100, 8)
    db, labels = labeled_db(server)
    certs = privset.generate_certs(tmp_path / "certs", ["server", "client", "other"])
    allowed = tmp_path / "allowed.txt"
    allowed.write_text("# who may query\nclient\n")
    port = free_port()
    party = privset.Upsi.server(db)
    sessions: List[Dict[str, Any]] = []
    thread = threading.Thread(
        target=lambda: sessions.extend(
            party.serve(
                listen=f"127.0.0.1:{port}", tls=certs["server"], max_sessions=1, timeout=60,
                handshake_timeout=2.0, allow_clients=allowed,
            )
        )
    )  # fmt: skip
    thread.start()
    try:
        with pytest.raises(privset.PrivsetError, match="allow"):
            privset.Upsi.client(client).run(
                peer=f"127.0.0.1:{port}", tls=certs["other"], server_name="server", timeout=60
            )
        r = privset.Upsi.client(client).run(
            peer=f"127.0.0.1:{port}", tls=certs["client"], server_name="server", timeout=60
        )
    finally:
        thread.join(timeout=120)
    assert found(r.matches) == answer(client, labels)
    assert len(sessions) == 1 and sessions[0]["ok"] and sessions[0]["client"] == "client"


def test_a_bad_allow_list_is_a_clear_error(tmp_path: pathlib.Path) -> None:
    db, _ = labeled_db(["a", "b"])
    certs = privset.generate_certs(tmp_path / "certs", ["server"])
    bad = tmp_path / "allowed.txt"
    bad.write_text("client\nsha256:1234\n")
    with pytest.raises(privset.PrivsetError, match="line 2"):
        privset.Upsi.server(db).serve(
            listen=f"127.0.0.1:{free_port()}", tls=certs["server"], allow_clients=bad, max_sessions=1
        )
