"""The Lean toolchain itself: finding ``lean``/``lake`` (:mod:`.toolchain`), running
``lean FILE`` once with a time limit (:mod:`.runner`) and reading what it prints
(:mod:`.diagnostics`)."""
