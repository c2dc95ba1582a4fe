"""Proving stored theorems: one theorem's search and final check (``theorem.py``); for a job,
which sorries and where (``targets.py``), the attempts recorded and reported (``attempts.py``),
carried proofs confirmed (``carried.py``), the lifelong loop (``job.py``), write-back
(``write_back.py``), Ray (``scale.py``), and what is checked after a search."""
