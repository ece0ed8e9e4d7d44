"""Shared helpers: random sets with a known overlap and the plaintext answers."""

from __future__ import annotations

import random
from typing import Dict, List, Tuple

import pytest

#: PI-Sum with a 1024-bit Paillier modulus: the same code paths, much faster tests.
FAST = {"he_modulus_bits": 1024}


def sets(rng: random.Random, n1: int, n2: int, overlap: int) -> Tuple[List[str], List[str]]:
    """Two sets of e-mail-like identifiers sharing exactly `overlap` items, shuffled."""
    common = [f"common{i}@example.com" for i in range(overlap)]
    a = common + [f"a{i}@example.com" for i in range(n1 - overlap)]
    b = common + [f"b{i}@example.org" for i in range(n2 - overlap)]
    rng.shuffle(a)
    rng.shuffle(b)
    return a, b


def values_for(rng: random.Random, ids: List[str], bound: int = 1000) -> Dict[str, int]:
    return {i: rng.randrange(bound) for i in ids}


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A generator seeded by the test's name: random, yet reproducible."""
    return random.Random(request.node.name)
