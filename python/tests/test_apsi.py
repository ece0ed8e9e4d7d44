"""Authorized PSI (Falzon-Markatou, "Re-visiting Authorized PSI") through the Python API: the output is (authorized subset)
∩ Y in both modes and on the edges, the judge's policy in every form, signatures that
are saved, reloaded, reused and refused when they are not the client's, and the three
parties as separate processes over mutual TLS, one of them the CLI."""

from __future__ import annotations

import hashlib
import pathlib
import random
import subprocess
import threading
from typing import Any, List, Optional

import pytest

import privset
from conftest import sets
from helpers import finish, free_port, privset_binary, spawn_party

MODES = [None, 0.3, 1.0]


def expected(client: List[Any], server: List[Any], subset: Optional[List[Any]] = None) -> List[Any]:
    used = client if subset is None else [x for x in subset if x in set(client)]
    return sorted(set(used) & set(server))


@pytest.mark.parametrize("partial", MODES)
@pytest.mark.parametrize(
    "n_client,n_server,overlap",
    [(60, 80, 25), (1, 1, 1), (1, 1, 0), (40, 40, 40), (30, 50, 0), (1, 300, 1), (200, 1, 1)],
)
def test_matches_the_plaintext(
    rng: random.Random, partial: Optional[float], n_client: int, n_server: int, overlap: int
) -> None:
    x, y = sets(rng, n_client, n_server, overlap)
    r = privset.local.apsi(x, y, partial=partial)
    assert sorted(r.intersection) == expected(x, y)
    assert r.cardinality == overlap and r.server_items == n_server
    assert r.judge.accepted and r.judge.items == n_client
    # APSI shows the judge every item; Partial-APSI ceil(p n) of them.
    shown = n_client if partial is None else -(-int(partial * 1_000_000) * n_client // 1_000_000)
    assert r.judge.shown == shown
    assert r.authorize.mode == r.client.mode == r.server.mode == ("apsi" if partial is None else "partial-apsi")
    assert r.server.client_id == r.client.client_id == "client"


@pytest.mark.parametrize("partial", [None, 0.5])
def test_a_subset_and_unsigned_items(rng: random.Random, partial: Optional[float]) -> None:
    x, y = sets(rng, 50, 50, 30)
    extra = [f"later{i}@example.com" for i in range(5)]
    # Items added after authorization are left out even when the server holds them.
    subset = x[:20] + extra
    r = privset.local.apsi(x, y + extra, subset=subset, partial=partial)
    assert sorted(r.intersection) == expected(x, y, subset)
    assert sorted(r.client.unauthorized) == sorted(extra)
    assert r.client.items_used == 20 and r.client.unauthorized_items == 5


def test_empty_sets() -> None:
    assert privset.local.apsi([], ["a", "b"]).intersection == []
    r = privset.local.apsi(["a", "b"], [])
    assert r.intersection == [] and r.server_items == 0


def test_signatures_are_saved_reloaded_and_reused(tmp_path: pathlib.Path, rng: random.Random) -> None:
    x, y = sets(rng, 40, 40, 15)
    key = privset.JudgeKey.generate()
    key.save(tmp_path / "judge.key", tmp_path / "judge.pub")
    r = privset.local.apsi(x, y, judge_key=key, partial=0.25, client_id="acme")
    r.signatures.save(tmp_path / "acme.sig")
    assert (tmp_path / "acme.sig").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "judge.key").stat().st_mode & 0o777 == 0o600
    sigs = privset.Signatures.load(tmp_path / "acme.sig", client_id="acme")
    assert (len(sigs), sigs.mode, sigs.client_id) == (40, "partial-apsi", "acme")
    assert sigs.judge_public_key == privset.JudgePublicKey.load(tmp_path / "judge.pub") == key.public_key
    server = privset.ApsiServer(y, judge_public=tmp_path / "judge.pub", partial=True)
    client = privset.ApsiClient(tmp_path / "acme.sig", x[:25], judge_public=tmp_path / "judge.pub")
    # Two runs on the same sets: same answer (fresh s and blinding each time).
    first = privset.local.run_pair(client, server)
    second = privset.local.run_pair(client, server)
    assert sorted(first[0].intersection) == sorted(second[0].intersection) == expected(x, y, x[:25])
    with pytest.raises(privset.InputError, match="was issued to client"):
        privset.Signatures.load(tmp_path / "acme.sig", client_id="globex")
    corrupt = bytearray((tmp_path / "acme.sig").read_bytes())
    corrupt[-40] ^= 1
    (tmp_path / "bad.sig").write_bytes(bytes(corrupt))
    with pytest.raises(privset.InputError):
        privset.Signatures.load(tmp_path / "bad.sig")


def test_signatures_of_another_judge_are_refused_before_any_run(rng: random.Random) -> None:
    x, y = sets(rng, 10, 10, 5)
    r = privset.local.apsi(x, y)
    other = privset.JudgeKey.generate().public_key
    with pytest.raises(privset.ConfigurationError, match="another judge key"):
        privset.ApsiClient(r.signatures, x, judge_public=other)


def test_a_server_of_another_mode_stops_the_run(rng: random.Random) -> None:
    x, y = sets(rng, 10, 10, 5)
    key = privset.JudgeKey.generate()
    r = privset.local.apsi(x, y, judge_key=key)
    client = privset.ApsiClient(r.signatures, judge_public=key.public_key)
    server = privset.ApsiServer(y, judge_public=key.public_key, partial=0.5)
    with pytest.raises(privset.PeerMisbehaved):
        privset.local.run_pair(client, server)


def test_key_settings_are_agreed_between_client_and_server(tmp_path: pathlib.Path) -> None:
    """The client authorized lower-cased e-mail addresses; a server that trims only
    used to give an empty intersection with no error, and now stops the run at the
    hello naming the setting. The signatures record the settings; an intersect input
    made otherwise is refused before any run; the same settings give the overlap."""
    client_ids = [f"User{i}@Example.com" for i in range(30)]
    server_ids = [f"User{i}@Example.com" for i in range(20, 60)]
    key = privset.JudgeKey.generate()
    r = privset.local.apsi(client_ids, server_ids, judge_key=key, normalize="email")
    assert r.cardinality == 10
    assert r.signatures.key_settings == {"key-columns": "1", "normalize": "email", "hash-ids": "none"}
    trimming = privset.ApsiServer(server_ids, judge_public=key.public_key)
    for client in (
        privset.ApsiClient(r.signatures, judge_public=key.public_key),
        privset.ApsiClient(r.signatures, client_ids, judge_public=key.public_key, normalize="email"),
    ):
        with pytest.raises(privset.PeerMisbehaved, match="input settings differ, normalize"):
            privset.local.run_pair(client, trimming)
    with pytest.raises(
        privset.ConfigurationError, match="the signature file uses normalize email, the input uses normalize trim"
    ):
        privset.ApsiClient(r.signatures, client_ids, judge_public=key.public_key)
    same = privset.ApsiServer(server_ids, judge_public=key.public_key, normalize="email")
    found, _ = privset.local.run_pair(privset.ApsiClient(r.signatures, judge_public=key.public_key), same)
    assert sorted(found.intersection) == sorted(f"user{i}@example.com" for i in range(20, 30))
    # A signature file of version 1 (no settings): with ids, the input's settings are
    # stated; without, there is nothing to state and the client says so.
    r.signatures.save(tmp_path / "x.sig")
    data = (tmp_path / "x.sig").read_bytes()[:-32]
    at = 17 + 1 + 1 + 96 + 4 + len("client") + 33 + 145
    n = int.from_bytes(data[at : at + 2], "big")
    old = bytearray(data[:at] + data[at + 2 + n :])
    old[17] = 1
    (tmp_path / "v1.sig").write_bytes(bytes(old) + hashlib.sha256(bytes(old)).digest())
    v1 = privset.Signatures.load(tmp_path / "v1.sig")
    assert v1.key_settings is None and len(v1) == 30
    with pytest.raises(privset.ConfigurationError, match="authorize again"):
        privset.ApsiClient(v1, judge_public=key.public_key)
    client = privset.ApsiClient(v1, client_ids, judge_public=key.public_key, normalize="email")
    found, _ = privset.local.run_pair(client, same)
    assert found.cardinality == 10


def test_policy_forms(tmp_path: pathlib.Path) -> None:
    x = ["alice", "bob", "carol"]
    y = ["bob", "dave"]
    allow = tmp_path / "allow.csv"
    allow.write_text("who,note\nalice,1\nbob,2\ncarol,3\n")
    assert privset.local.apsi(x, y, policy=x + ["zed"]).intersection == ["bob"]
    assert privset.local.apsi(x, y, policy=f"allow:{allow}").intersection == ["bob"]
    judge = privset.ApsiJudge(privset.JudgeKey.generate(), allow, allow_column="who")
    assert len(judge) == 3
    assert privset.local.apsi(x, y, policy="exec:grep -qx mallory || echo accept").intersection == ["bob"]
    assert privset.local.apsi(x, y, policy=lambda cid, items: cid == b"client" and len(items) == 3).cardinality == 1
    rejections = [
        (["alice"], "2 of the 3 items shown are not on the judge's allowlist"),
        ("exec:echo over quota; exit 1", "over quota"),
        (lambda cid, items: False, "the judge's policy rejected the set"),
        (lambda cid, items: "not today", "not today"),
        (lambda cid, items: None, "not True, False or a reason"),
    ]
    for policy, reason in rejections:
        with pytest.raises(privset.AuthorizationRejected, match=reason) as e:
            privset.local.apsi(x, y, policy=policy)
        assert e.value.exit_code == 5
    with pytest.raises(privset.InputError, match="allow:FILE.csv or exec:COMMAND"):
        privset.ApsiJudge(privset.JudgeKey.generate(), "everyone")
    # allow_column picks the allowlist's column (here not the first).
    notes = tmp_path / "notes.csv"
    notes.write_text("note,who\n1,alice\n2,bob\n3,carol\n")
    key = privset.JudgeKey.generate()
    judge = privset.ApsiJudge(key, f"allow:{notes}", allow_column="who")
    judged, auth = privset.local.run_pair(judge, privset.ApsiAuthorizeClient(x, client_id="c"))
    assert judged.accepted and len(auth.signatures) == 3
    with pytest.raises(privset.AuthorizationRejected):
        privset.local.run_pair(privset.ApsiJudge(key, f"allow:{notes}"), privset.ApsiAuthorizeClient(x, client_id="c"))


def test_a_failing_python_policy_stays_with_the_judge() -> None:
    """The client learns only that the policy failed; the judge's run raises the
    exception itself (its text may hold the judge's data)."""
    secret = {"alice": 1}

    def policy(client_id: bytes, items: List[bytes]) -> bool:
        return all(secret[x.decode()] for x in items)  # KeyError('bob')

    judge = privset.ApsiJudge(privset.JudgeKey.generate(), policy)
    client = privset.ApsiAuthorizeClient(["alice", "bob"], client_id="c")
    with pytest.raises(KeyError):
        privset.local.run_pair(judge, client)
    with pytest.raises(KeyError):
        privset.local.run_pair(client, judge)
    # Over a real link: the client's error names no judge data.
    port = free_port()
    judge_error: List[BaseException] = []

    def serve() -> None:
        try:
            judge.run(listen=f"127.0.0.1:{port}", insecure_no_tls=True, timeout=60)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            judge_error.append(e)

    thread = threading.Thread(target=serve)
    thread.start()
    with pytest.raises(privset.AuthorizationRejected) as rejected:
        client.run(peer=f"127.0.0.1:{port}", insecure_no_tls=True, timeout=60)
    thread.join(60)
    assert str(rejected.value).endswith("the judge's policy failed") and "bob" not in str(rejected.value)
    assert len(judge_error) == 1 and isinstance(judge_error[0], KeyError)


@pytest.mark.parametrize("partial", [0.1, 0.5, 1.0])
def test_the_policy_sees_only_the_opened_items(partial: float) -> None:
    x = [f"item{i}" for i in range(37)]
    seen: List[List[bytes]] = []

    def policy(client_id: bytes, items: List[bytes]) -> bool:
        seen.append(items)
        return True

    privset.local.apsi(x, x[:5], policy=policy, partial=partial)
    (shown,) = seen
    assert len(shown) == -(-int(partial * 1_000_000) * 37 // 1_000_000)
    assert set(shown) <= {i.encode() for i in x}


def test_bad_settings_are_refused_before_any_run() -> None:
    key = privset.JudgeKey.generate()
    with pytest.raises(privset.ConfigurationError, match="partial fraction"):
        privset.ApsiJudge(key, ["a"], partial=1.5)
    with pytest.raises(privset.ConfigurationError, match="client ID"):
        privset.ApsiAuthorizeClient(["a"], client_id="")
    with pytest.raises(privset.ConfigurationError, match="partial fraction"):
        privset.ApsiServer(["a"], judge_public=key.public_key, partial=0.0)
    with pytest.raises(privset.ConfigurationError, match="judge_public"):
        privset.ApsiServer(["a"], judge_public=42)
    judge = privset.ApsiJudge(key, ["a"])
    server = privset.ApsiServer(["a"], judge_public=key.public_key)
    with pytest.raises(privset.ConfigurationError, match="pairs the judge"):
        privset.local.run_pair(judge, server)


def test_pandas_in_and_out() -> None:
    pd = pytest.importorskip("pandas")
    customers = pd.DataFrame({"email": ["a@x", "b@x", "c@x"], "tier": [1, 2, 3]})
    registry = pd.DataFrame({"email": ["b@x", "c@x", "d@x"]})
    r = privset.local.apsi(customers, registry, id_column="email")
    frame = r.client.to_frame()
    assert list(frame.columns) == ["email"] and sorted(frame["email"]) == ["b@x", "c@x"]


def tls_list(files: privset.TlsFiles) -> List[str]:
    return [str(files.ca), str(files.cert), str(files.key)]


@pytest.mark.parametrize("partial", [None, 0.4])
def test_judge_client_and_cli_server_as_three_processes(
    tmp_path: pathlib.Path, rng: random.Random, partial: Optional[float]
) -> None:
    """A Python judge process, this process as the client, and `privset apsi serve`
    as the server: key files and signature files are the CLI's."""
    certs = privset.generate_certs(tmp_path / "certs", ["judge", "client", "server"])
    x, y = sets(rng, 70, 90, 30)
    privset.JudgeKey.generate().save(tmp_path / "judge.key", tmp_path / "judge.pub")
    port = free_port()
    judge = spawn_party(
        {
            "party": "Apsi.judge",
            "args": [str(tmp_path / "judge.key"), x],
            "kwargs": {"partial": partial},
            "run": {"listen": f"127.0.0.1:{port}", "tls": tls_list(certs["judge"]), "timeout": 60},
        }
    )
    auth = privset.ApsiAuthorizeClient(x, client_id="acme", partial=partial).run(
        peer=f"127.0.0.1:{port}", tls=certs["client"], server_name="judge", timeout=60
    )
    judged = finish(judge)
    assert judged["accepted"] and judged["client_id"] == "acme" and judged["transport"] == "tcp+mtls"
    auth.signatures.save(tmp_path / "acme.sig")

    (tmp_path / "y.csv").write_text("id\n" + "".join(f"{v}\n" for v in y))
    port = free_port()
    server = subprocess.Popen(
        [
            privset_binary(), "apsi", "serve", "--listen", f"127.0.0.1:{port}",
            "--tls-ca", str(certs["server"].ca), "--tls-cert", str(certs["server"].cert),
            "--tls-key", str(certs["server"].key), "--judge-public", str(tmp_path / "judge.pub"),
            "--input", str(tmp_path / "y.csv"), "--id-column", "id", "--max-sessions", "1",
            *(["--partial", str(partial)] if partial else []),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    subset = x[:50] + ["never-signed@example.com"]
    client = privset.ApsiClient(
        privset.Signatures.load(tmp_path / "acme.sig", client_id="acme"), subset, judge_public=tmp_path / "judge.pub"
    )
    r = client.run(peer=f"127.0.0.1:{port}", tls=certs["client"], server_name="server", timeout=60)
    out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert sorted(r.intersection) == expected(x, y, subset)
    assert r.unauthorized == ["never-signed@example.com"] and r.server_items == 90
    # The session's log line, on stdout.
    assert '"client_id":"acme"' in out


def test_python_judge_and_server_processes_with_a_saved_signature_file(
    tmp_path: pathlib.Path, rng: random.Random
) -> None:
    """Authorize in a subprocess that saves the signatures; intersect from this process
    against a Python server process."""
    certs = privset.generate_certs(tmp_path / "certs", ["judge", "client", "server"])
    x, y = sets(rng, 30, 30, 12)
    key = privset.JudgeKey.generate()
    key.save(tmp_path / "judge.key", tmp_path / "judge.pub")
    port = free_port()
    client = spawn_party(
        {
            "party": "Apsi.authorize",
            "args": [x],
            "kwargs": {"client_id": "acme"},
            "run": {"peer": f"127.0.0.1:{port}", "tls": tls_list(certs["client"]), "server_name": "judge"},
            "save_signatures": str(tmp_path / "acme.sig"),
        }
    )
    privset.ApsiJudge(key, lambda cid, items: cid == b"acme").run(
        listen=f"127.0.0.1:{port}", tls=certs["judge"], timeout=60
    )
    assert finish(client)["items"] == 30
    port = free_port()
    server = spawn_party(
        {
            "party": "Apsi.server",
            "args": [y],
            "kwargs": {"judge_public": str(tmp_path / "judge.pub")},
            "run": {"listen": f"127.0.0.1:{port}", "tls": tls_list(certs["server"]), "timeout": 60},
        }
    )
    r = privset.ApsiClient(tmp_path / "acme.sig", judge_public=key.public_key).run(
        peer=f"127.0.0.1:{port}", tls=certs["client"], server_name="server", timeout=60
    )
    served = finish(server)
    assert sorted(r.intersection) == expected(x, y)
    assert served["client_id"] == "acme" and served["items"] == 30


def test_an_input_error_names_its_line() -> None:
    with pytest.raises(privset.InputError) as e:
        privset.ApsiAuthorizeClient(["alice", "bob", "  "], client_id="acme")
    assert e.value.line == 4
    # Duplicates are kept once, as `privset apsi authorize` reads its CSV file.
    r = privset.local.apsi(["alice", "bob", "alice"], ["alice"])
    assert r.intersection == ["alice"] and len(r.signatures) == 2


def test_a_cli_judge_authorizes_a_python_client(tmp_path: pathlib.Path, rng: random.Random) -> None:
    """`privset judge keygen` and `privset judge serve`, and a Python client whose
    signatures then work against a Python server trusting the CLI's judge.pub."""
    certs = privset.generate_certs(tmp_path / "certs", ["judge", "client"])
    x, y = sets(rng, 25, 30, 10)
    subprocess.run(
        [privset_binary(), "judge", "keygen", "--key", str(tmp_path / "j.key"), "--public", str(tmp_path / "j.pub")],
        check=True,
        capture_output=True,
    )
    (tmp_path / "allow.csv").write_text("id\n" + "".join(f"{v}\n" for v in x))
    port = free_port()
    judge = subprocess.Popen(
        [
            privset_binary(), "judge", "serve", "--listen", f"127.0.0.1:{port}", "--max-sessions", "1",
            "--tls-ca", str(certs["judge"].ca), "--tls-cert", str(certs["judge"].cert),
            "--tls-key", str(certs["judge"].key), "--key", str(tmp_path / "j.key"),
            "--policy", f"allow:{tmp_path / 'allow.csv'}", "--partial", "0.2",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    auth = privset.ApsiAuthorizeClient(x, client_id="acme", partial=0.2).run(
        peer=f"127.0.0.1:{port}", tls=certs["client"], server_name="judge", timeout=60
    )
    _, err = judge.communicate(timeout=60)
    assert judge.returncode == 0, err
    assert auth.signatures.judge_public_key == privset.JudgePublicKey.load(tmp_path / "j.pub")
    client = privset.ApsiClient(auth.signatures, judge_public=tmp_path / "j.pub")
    server = privset.ApsiServer(y, judge_public=tmp_path / "j.pub", partial=0.2)
    found, _ = privset.local.run_pair(client, server)
    assert sorted(found.intersection) == expected(x, y)


def test_a_judge_whose_policy_refers_to_it_is_collected() -> None:
    import gc
    import weakref

    class Desk:
        judge: Any = None

    desk = Desk()
    # The policy holds the desk itself (a default argument, not the test's variable).
    desk.judge = privset.ApsiJudge(privset.JudgeKey.generate(), lambda cid, items, d=desk: d is not None)
    gone = weakref.ref(desk)
    del desk
    gc.collect()
    assert gone() is None


def test_a_judge_and_a_server_serve_concurrent_sessions(tmp_path: pathlib.Path, rng: random.Random) -> None:
    """ApsiJudge.serve and ApsiServer.serve: the CLI's endpoint, several sessions at once,
    one log dict per session."""
    x, y = sets(rng, 40, 60, 20)
    certs = privset.generate_certs(tmp_path / "certs", ["judge", "client", "server"])
    key = privset.JudgeKey.generate()
    judge = privset.ApsiJudge(key, x)
    judge_port = free_port()
    judge_logs: List[Any] = []
    serving = threading.Thread(
        target=lambda: judge_logs.extend(
            judge.serve(listen=f"127.0.0.1:{judge_port}", tls=certs["judge"], max_sessions=2, timeout=60)
        )
    )
    serving.start()
    authorized: List[Any] = [None, None]

    def authorize(i: int) -> None:
        client = privset.ApsiAuthorizeClient(x if i == 0 else x + ["not-allowed"], client_id=f"c{i}")
        try:
            authorized[i] = client.run(
                peer=f"127.0.0.1:{judge_port}", tls=certs["client"], server_name="judge", timeout=60
            )
        except privset.AuthorizationRejected as e:
            authorized[i] = e

    clients = [threading.Thread(target=authorize, args=(i,)) for i in range(2)]
    for t in clients:
        t.start()
    for t in clients:
        t.join(120)
    serving.join(120)
    assert not serving.is_alive()
    assert isinstance(authorized[1], privset.AuthorizationRejected)
    signatures = authorized[0].signatures
    assert sorted(line["session"] for line in judge_logs) == [1, 2]
    verdicts = {line["outcome"]["client_id"]: line["outcome"]["accepted"] for line in judge_logs}
    assert verdicts == {"c0": True, "c1": False}

    server = privset.ApsiServer(y, judge_public=key.public_key)
    port = free_port()
    logs: List[Any] = []
    serving = threading.Thread(
        target=lambda: logs.extend(
            server.serve(
                listen=f"127.0.0.1:{port}", tls=certs["server"], max_sessions=3, max_concurrent=3, timeout=60
            )
        )
    )
    serving.start()
    results: List[Any] = [None] * 3

    def intersect(i: int) -> None:
        client = privset.ApsiClient(signatures, x, judge_public=key.public_key)
        results[i] = client.run(peer=f"127.0.0.1:{port}", tls=certs["client"], server_name="server", timeout=60)

    clients = [threading.Thread(target=intersect, args=(i,)) for i in range(3)]
    for t in clients:
        t.start()
    for t in clients:
        t.join(120)
    serving.join(120)
    assert not serving.is_alive()
    for r in results:
        assert sorted(r.intersection) == expected(x, y)
    assert len(logs) == 3
    assert sorted(line["session"] for line in logs) == [1, 2, 3]
    for line in logs:
        assert line["ok"] and line["role"] == "apsi server" and line["transport"] == "tcp+mtls"
        assert line["outcome"] == {"client_id": "c0", "items": 60}
        assert line["bytes_sent"] > 0 and "error" not in line
    # Serving needs TLS files or the explicit plaintext flag, and a judge or server.
    with pytest.raises(privset.ConfigurationError):
        server.serve(listen="127.0.0.1:0")
    with pytest.raises(privset.ConfigurationError):
        privset.ApsiClient(signatures, x, judge_public=key.public_key)._native.serve(
            "127.0.0.1:0", tls=None, insecure_no_tls=True, max_sessions=1, max_concurrent=1, timeout=1.0
        )
