"""Best-first proof search over a proof session (``tree.py``), and the seam to generators that
learn while they prove (``online.py``); it knows goals and tactics, nothing of premises."""
