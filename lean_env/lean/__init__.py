"""The Lean toolchain itself: finding ``lean``/``lake`` (:mod:`.toolchain`), running
``lean FILE`` once with a time limit (:mod:`.runner`) or through the language server
(:mod:`.server`), reading what it prints (:mod:`.diagnostics`), building a Lake project
(:mod:`.build`), and an in-memory Lean for tests (:mod:`.mock`)."""
