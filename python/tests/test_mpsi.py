"""Multi-party PSI (de Jong's thesis: Bay et al., Miyaji-Nishida,
Hazay-Venkitasubramaniam) from Python: every protocol against the plaintext intersection
with 3 and 5 participants, the edges, errors, progress and Ctrl-C, and sessions between
real processes (Python and the CLI) over mutual TLS and an exchange directory."""

from __future__ import annotations

import json
import pathlib
import random
import subprocess
import time
from typing import Any, Dict, List, Optional

import pytest

import privset
from privset.mpsi import run_session
from helpers import finish, free_port, privset_binary, spawn_party
from test_runs import interrupt

PROTOCOLS = ["bay", "miyaji-nishida", "hazay"]


def holders(protocol: str, participants: int) -> int:
    """How many set holders a session of `participants` has (the dealer holds none)."""
    return participants - 1 if protocol == "miyaji-nishida" else participants


def random_sets(rng: random.Random, count: int, size: int, overlap: int) -> List[List[str]]:
    """`count` sets of `size` items each, `overlap` of them in every set, plus items in
    every set but one (never in the intersection), shuffled."""
    common = [f"plate-{i:05d}" for i in range(overlap)]
    out = []
    for k in range(count):
        s = common + [f"own-{k}-{i}" for i in range(size - overlap - 1)]
        if k != 1:
            s.append("almost-everywhere")
        rng.shuffle(s)
        out.append(s)
    return out


def plaintext(sets: List[List[Any]]) -> List[Any]:
    """The items of the learner's set (the first) that every set holds, in its order."""
    others = [set(s) for s in sets[1:]]
    return [x for x in dict.fromkeys(sets[0]) if all(x in o for o in others)]


def check(r: privset.local.LocalMpsi, protocol: str, sets: List[List[Any]]) -> None:
    """Every learner has exactly the plaintext intersection (in its own order); the
    others learn nothing."""
    want = plaintext(sets)
    assert r.intersection == want
    n = len(r.participants)
    assert n == len(sets) + (1 if protocol == "miyaji-nishida" else 0)
    for i, p in enumerate(r.participants):
        assert (p.protocol, p.mpsi_protocol, p.participants, p.transport) == ("mpsi", protocol, n, "memory")
        own = sets[i - 1] if protocol == "miyaji-nishida" else sets[i]
        if protocol == "miyaji-nishida" and i == 0:
            assert (p.role, p.items, p.intersection, p.intersection_size) == ("dealer", 0, None, None)
        elif protocol == "miyaji-nishida":
            assert p.role == "party"
            mine = plaintext([own] + [s for s in sets if s is not own])
            assert p.intersection == mine and p.intersection_size == p.rows == len(mine)
        elif i == 0:
            assert p.role == "server" and p.intersection == want and p.intersection_size == len(want)
        else:
            assert (p.role, p.intersection, p.intersection_size, p.rows) == ("client", None, None, None)
        if not (protocol == "miyaji-nishida" and i == 0):
            assert p.items == len(set(own))
        assert p.bytes_sent > 0 and p.bytes_received > 0
        assert p.to_dict()["name"] == p.name


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("participants", [3, 5])
def test_random_sets_give_the_plaintext_intersection(rng, protocol: str, participants: int) -> None:
    sets = random_sets(rng, holders(protocol, participants), 40, rng.randrange(1, 20))
    r = privset.local.mpsi(sets, protocol=protocol)
    check(r, protocol, sets)
    assert r.protocol == protocol


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_dealt_paillier_key_gives_the_plaintext_intersection(rng, protocol: str) -> None:
    sets = random_sets(rng, holders(protocol, 4), 12, 5)
    r = privset.local.mpsi(sets, protocol=protocol, scheme="paillier", paillier_modulus_bits=1024)
    check(r, protocol, sets)
    assert {p.scheme for p in r.participants} == {"paillier"}
    assert {p.scheme for p in privset.local.mpsi(sets, protocol=protocol).participants} == {"elgamal"}


def test_dealt_key_files_are_checked(tmp_path: pathlib.Path) -> None:
    dealt = privset.mpsi_deal(["a", "b"], tmp_path, modulus_bits=1024)
    assert len(dealt.holders) == 2 and len(dealt.fingerprint) == 64
    assert privset.Bay.server(["x"], paillier_key=dealt.public).scheme == "paillier"
    assert privset.Bay.client(["x"], paillier_key=dealt.holders[0]).scheme == "paillier"
    # The server takes the public key only; a client needs its share.
    with pytest.raises(privset.ConfigurationError, match="public key only"):
        privset.Bay.server(["x"], paillier_key=dealt.holders[0])
    with pytest.raises(privset.ConfigurationError, match="key share"):
        privset.Bay.client(["x"], paillier_key=dealt.public)
    damaged = tmp_path / "damaged.key"
    damaged.write_bytes(dealt.holders[1].read_bytes()[:-3])
    with pytest.raises(privset.ConfigurationError, match="damaged|truncated|checksum"):
        privset.Bay.client(["x"], paillier_key=damaged)
    with pytest.raises(privset.ConfigurationError, match="scheme"):
        privset.local.mpsi([["a"], ["a"], ["a"]], scheme="rsa")


EDGES: Dict[str, List[List[Any]]] = {
    "empty set": [["a", "b", "c"], [], ["a", "b"], ["b", "a"]],
    "empty learner": [[], ["a", "b"], ["a", "b"], ["a"]],
    "disjoint": [["a", "b"], ["c", "d"], ["e", "f"], ["g"]],
    "identical": [["a", "b", "c"], ["c", "b", "a"], ["b", "a", "c"], ["a", "c", "b"]],
    "size 1": [["only"], ["only"], ["only"], ["only"]],
    "size 1 apart": [["x"], ["y"], ["x"], ["x"]],
    "ints and text": [[1, 2, "3"], ["1", 3, 9], [b" 1 ", 3, 2], [3, 1]],
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("edge", sorted(EDGES))
def test_edges(protocol: str, edge: str) -> None:
    sets = EDGES[edge]
    r = privset.local.mpsi(sets, protocol=protocol)
    # Identifiers are bytes as the CLI reads a cell: 1, "1" and b" 1 " are one item, and
    # results give back the learner's own objects.
    norm = [[str(x.decode() if isinstance(x, bytes) else x).strip() for x in s] for s in sets]
    learner = sets[0]
    want = [learner[i] for i, x in enumerate(norm[0]) if all(x in o for o in norm[1:])]
    assert r.intersection == want, edge


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_duplicates_follow_the_policy(protocol: str) -> None:
    sets = [["a", "b", "a"], ["a", "b"], ["b", "a"]]
    with pytest.raises(privset.InputError, match="duplicate identifier") as e:
        privset.local.mpsi(sets, protocol=protocol)
    assert e.value.line == 4
    r = privset.local.mpsi(sets, protocol=protocol, duplicates="first")
    assert sorted(r.intersection) == ["a", "b"]
    assert r.participants[1 if protocol == "miyaji-nishida" else 0].items == 2
    with pytest.raises(privset.ConfigurationError, match="'error' or 'first'"):
        privset.local.mpsi(sets, protocol=protocol, duplicates="sum")


def test_data_frames_and_files(tmp_path: pathlib.Path) -> None:
    """Sets from a DataFrame (``id_column=``) and a CSV file, as for every party: the
    learner gets its own rows back (a file's as text), ``to_frame`` the CLI's column."""
    pd = pytest.importorskip("pandas")
    csv = tmp_path / "server.csv"
    csv.write_text("plate,seen\nAB-12,1\n CD-34 ,2\nEF-56,3\n")
    frame = pd.DataFrame({"plate": ["CD-34", "AB-12", "ZZ-99"], "seen": [1, 2, 3]})
    r = privset.local.mpsi([csv, frame, frame], protocol="bay", id_column="plate")
    assert r.intersection == ["AB-12", "CD-34"]
    assert list(r.participants[0].to_frame()["plate"]) == ["AB-12", "CD-34"]
    r = privset.local.mpsi([frame, csv, frame], protocol="miyaji-nishida", id_column="plate")
    assert r.intersection == ["CD-34", "AB-12"]


def test_classes_names_and_settings() -> None:
    assert privset.Bay.server is privset.BayServer and privset.Hazay.client is privset.HazayClient
    assert privset.MiyajiNishida.dealer is privset.MiyajiNishidaDealer
    p = privset.MiyajiNishida.party(["a", "b"], max_items=8)
    assert (p.protocol, p.role, len(p)) == ("miyaji-nishida", "party", 2)
    assert len(privset.MiyajiNishida.dealer()) == 0
    # A bound below the party's own size is refused when the party is built.
    with pytest.raises(privset.ConfigurationError, match="above the announced bound"):
        privset.MiyajiNishida.party(["a", "b", "c"], max_items=2)
    with pytest.raises(privset.ConfigurationError, match="max_peer_items"):
        privset.Bay.client(["a"], max_peer_items=-1)
    r = privset.local.mpsi([["a", "b"], ["a"], ["a", "c"]], protocol="hazay", names=["hq", "east", "west"])
    assert [p.name for p in r.participants] == ["hq", "east", "west"]
    assert r.intersection == ["a"]
    frame_input = r.participants[0]
    assert frame_input.to_json().startswith("{")
    with pytest.raises(ValueError, match="learns no intersection"):
        r.participants[1].to_frame()
    with pytest.raises(privset.ConfigurationError, match="bay, miyaji-nishida, hazay"):
        privset.local.mpsi([["a"], ["a"], ["a"]], protocol="kissner-song")
    with pytest.raises(privset.ConfigurationError, match="3 to 255 participants"):
        privset.local.mpsi([["a"], ["a"]], protocol="bay")
    with pytest.raises(privset.ConfigurationError, match="2 names for 3 participants"):
        privset.local.mpsi([["a"], ["a"], ["a"]], protocol="bay", names=["x", "y"])


def test_a_peer_over_the_limit_stops_the_session_naming_it() -> None:
    server = privset.Bay.server(["a", "b", "c", "d"])
    careful = privset.Bay.client(["a", "b"], max_peer_items=2)
    with pytest.raises(privset.PeerMisbehaved, match=r"the server \(participant 0\): announced set size 4"):
        run_session([server, careful, privset.Bay.client(["a"])], names=None, timeout=30, cpu_price=0,
                    network_price=0, progress=None)  # fmt: skip
    assert privset._native.live_workers() == 0


def test_progress_reaches_the_callback(rng) -> None:
    seen: Dict[str, int] = {}

    def progress(p: privset.Progress) -> None:
        seen[p.party] = max(seen.get(p.party, 0), p.messages_sent)

    privset.local.mpsi(random_sets(rng, 3, 30, 5), protocol="bay", progress=progress, names=["s", "c1", "c2"])
    assert set(seen) == {"s", "c1", "c2"} and all(v > 0 for v in seen.values()), seen


def test_an_exception_in_the_callback_stops_the_session(rng) -> None:
    def progress(p: privset.Progress) -> None:
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        privset.local.mpsi(random_sets(rng, 4, 300, 5), protocol="miyaji-nishida", progress=progress)
    deadline = time.monotonic() + 30
    while privset._native.live_workers() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert privset._native.live_workers() == 0


def test_ctrl_c_stops_a_local_session() -> None:
    # A server with 30,000 items and two clients with 15,000: about 11 s of Bay et al.
    # on this machine (5,000 took 1.8 s once Bay was in lanes, so the signal at 1.5 s
    # could come after the end); interrupted 1.5 s in.
    r = interrupt("mpsi-local", 30000, 1.5)
    assert r["delay"] < 1.0, r
    assert r["live_at_raise"] == 3, r  # every participant was still working...
    assert r["live_workers"] == 0, r  # ...and ended at its next message boundary


def test_ctrl_c_while_waiting_in_an_exchange_directory() -> None:
    r = interrupt("mpsi-exchange-dir", 10, 1.0)
    assert r["delay"] < 1.0, r
    assert r["workers_ended_after"] < 2.0 and r["live_workers"] == 0, r


def roster(tmp: pathlib.Path, names: List[str], tcp: bool) -> pathlib.Path:
    """Throwaway certificates for `names` and the parties file listing them in order."""
    privset.generate_certs(tmp / "certs", names)
    text = 'ca = "certs/ca.pem"\n'
    for n in names:
        text += f'\n[[party]]\nname = "{n}"\ncertificate = "certs/{n}.pem"\n'
        if tcp:
            text += f'address = "127.0.0.1:{free_port()}"\n'
    path = tmp / "parties.toml"
    path.write_text(text)
    return path


def test_a_role_that_does_not_match_the_parties_file_is_refused(tmp_path: pathlib.Path) -> None:
    parties = roster(tmp_path, ["org0", "org1", "org2"], tcp=True)
    with pytest.raises(privset.ConfigurationError, match="its role in bay is server"):
        privset.Bay.client(["a"]).run(parties=parties, name="org0", tls_key=tmp_path / "certs" / "org0.key")
    with pytest.raises(privset.ConfigurationError, match="no participant named"):
        privset.Bay.client(["a"]).run(parties=parties, name="nobody", insecure_no_tls=True)
    with pytest.raises(privset.ConfigurationError, match="TCP links use mutual TLS"):
        privset.Bay.client(["a"]).run(parties=parties, name="org1")
    with pytest.raises(privset.ConfigurationError, match="exchange directory has no TLS"):
        privset.Bay.client(["a"]).run(
            parties=parties, name="org1", exchange_dir=tmp_path / "x", tls_key=tmp_path / "certs" / "org1.key"
        )
    with pytest.raises(privset.InputError, match="parties.toml"):
        privset.Bay.client(["a"]).run(parties=tmp_path / "missing" / "parties.toml", name="org1")


def spec(party: str, ids: Optional[List[str]], run: Dict[str, Any]) -> Dict[str, Any]:
    return {"party": party, "args": [] if ids is None else [ids], "run": run}


def test_python_and_cli_processes_over_mutual_tls(tmp_path: pathlib.Path, rng) -> None:
    """Hazay-Venkitasubramaniam among a Python server, a Python client and a CLI client,
    each its own process, over mutual TLS on loopback."""
    names = ["hq", "east", "west"]
    parties = roster(tmp_path, names, tcp=True)
    sets = random_sets(rng, 3, 50, 7)
    key = lambda n: str(tmp_path / "certs" / f"{n}.key")  # noqa: E731
    run = lambda n: {"parties": str(parties), "name": n, "tls_key": key(n), "timeout": 60}  # noqa: E731
    server = spawn_party(spec("Hazay.server", sets[0], run("hq")))
    client = spawn_party(spec("Hazay.client", sets[1], run("east")))
    (tmp_path / "west.csv").write_text("plate\n" + "".join(x + "\n" for x in sets[2]))
    cli = subprocess.Popen(
        [
            privset_binary(), "mpsi", "--protocol", "hazay", "--role", "client", "--name", "west",
            "--parties", str(parties), "--tls-key", key("west"), "--timeout", "60",
            "--input", str(tmp_path / "west.csv"), "--id-column", "plate",
            "--output", str(tmp_path / "west.json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    s, c = finish(server), finish(client)
    _, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    w = json.loads((tmp_path / "west.json").read_text())
    assert s["intersection"] == plaintext(sets)
    assert s["intersection_size"] == len(plaintext(sets)) and s["transport"] == "tcp+mtls"
    assert (c["role"], c["intersection_size"], c["transport"]) == ("client", None, "tcp+mtls")
    assert (w["role"], w["intersection_size"], w["participants"]) == ("client", None, 3)
    # The Python participants' RESULT.json has the CLI's fields.
    assert set(w) - {"rows_file"} <= set(s)


def test_three_python_processes_over_an_exchange_directory(tmp_path: pathlib.Path, rng) -> None:
    """Miyaji-Nishida among three Python processes (a dealer and two parties) sharing one
    directory, each with its own private state directory."""
    names = ["dealer", "bank-a", "bank-b"]
    parties = roster(tmp_path, names, tcp=False)
    sets = random_sets(rng, 2, 60, 9)

    def run(n: str) -> Dict[str, Any]:
        return {
            "parties": str(parties),
            "name": n,
            "exchange_dir": str(tmp_path / "exchange"),
            "state_dir": str(tmp_path / f"state-{n}"),
            "poll_interval": 0.01,
            "timeout": 60,
        }

    procs = [
        spawn_party(spec("MiyajiNishida.dealer", None, run("dealer"))),
        spawn_party(spec("MiyajiNishida.party", sets[0], run("bank-a"))),
        spawn_party(spec("MiyajiNishida.party", sets[1], run("bank-b"))),
    ]
    d, a, b = (finish(p) for p in procs)
    assert (d["role"], d["intersection_size"], d["transport"]) == ("dealer", None, "exchange-dir")
    assert a["intersection"] == plaintext(sets)
    assert b["intersection"] == plaintext([sets[1], sets[0]])
    # Each seed is removed once its participant has its result.
    assert [p.name for p in tmp_path.glob("state-*/*")] == []


def test_a_killed_participant_resumes_over_an_exchange_directory(tmp_path: pathlib.Path, rng) -> None:
    """Bay et al. among three Python processes; a client is killed (SIGKILL) once it has
    written its first filter chunk, before it can have a result, and started again with
    the same arguments: it resumes from its seed in its state directory and the server
    gets the plaintext intersection."""
    names = ["hub", "c1", "c2"]
    parties = roster(tmp_path, names, tcp=False)
    sets = random_sets(rng, 3, 300, 40)
    exchange = tmp_path / "exchange"

    def party(i: int) -> Dict[str, Any]:
        run = {
            "parties": str(parties),
            "name": names[i],
            "exchange_dir": str(exchange),
            "state_dir": str(tmp_path / f"state-{names[i]}"),
            "poll_interval": 0.01,
            "timeout": 60,
        }
        return spec("Bay.server" if i == 0 else "Bay.client", sets[i], run)

    procs = [spawn_party(party(i)) for i in range(3)]
    first_chunk = exchange / "0001-p1-to-p0.msg"  # after c1's key contribution
    deadline = time.monotonic() + 60
    while not first_chunk.exists():
        assert time.monotonic() < deadline and procs[1].poll() is None, "c1 never sent its filter"
        time.sleep(0.005)
    procs[1].kill()
    procs[1].wait()
    assert list((tmp_path / "state-c1").iterdir()), "the killed client's seed is kept"
    procs[1] = spawn_party(party(1))
    s, c1, c2 = (finish(p) for p in procs)
    assert s["intersection"] == plaintext(sets)
    assert (c1["role"], c2["role"]) == ("client", "client")
    assert [p.name for p in tmp_path.glob("state-*/*")] == []
