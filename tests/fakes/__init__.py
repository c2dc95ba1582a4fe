"""Subprocess and in-process stand-ins for external programs (Lean, the Lean REPL)."""
