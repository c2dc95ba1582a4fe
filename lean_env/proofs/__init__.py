"""Proofs as text: surgery on a file's proof (:mod:`.text`), locating a theorem in a file
(:mod:`.theorem_source`), the final check that makes a found proof count (:mod:`.final_check`),
writing proofs back as a diff or a git branch (:mod:`.writeback`) and opening a pull request
of that branch on GitHub (:mod:`.github`)."""
