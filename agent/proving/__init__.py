"""Proving stored theorems: one theorem's search and final check (``theorem.py``); the one
pipeline of ``prove`` (``prove.py``) and ``run``, which sorries and where (``targets.py``), each
repository built, its carried proofs confirmed (``carried.py``) and its sorries attempted
(``repositories.py``), the attempts recorded (``attempts.py``) into one outcome
(``outcome.py``), written back as patches (``patches.py``); the prover's recipe and Ray
(``scale.py``)."""
