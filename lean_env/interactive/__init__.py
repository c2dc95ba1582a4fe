"""Interactive proof environments: one interface (:mod:`.interface`), its backends (file
check :mod:`.filecheck`, LeanDojo :mod:`.dojo`, the Lean REPL :mod:`.repl`), the choice
between them (:mod:`.choice`) and a proof replayed tactic by tactic (:mod:`.replay`)."""
