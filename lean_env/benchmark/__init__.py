"""The LeanDojo Benchmark 4 format: reading it (:mod:`.read`), writing it (:mod:`.write`),
its JSON and JSON Lines plumbing (:mod:`.jsonl`), its two splits (:mod:`.splits`) and
LeanDojo's data shapes as our records (:mod:`.dojo_shapes`). See docs/benchmark-format.md."""
