"""Imported by the solver forkserver only (:mod:`verify.smt.portfolio` names it in the preload
list), never by the verifier itself: it makes the forkserver die with the process that
started it.

multiprocessing hands every child of the forkserver a copy of the pipe whose end tells the
server its client is gone, so the server outlives its client for as long as a child lives,
and a child whose parent (the server) lives is not told by ``PR_SET_PDEATHSIG``. With this,
a client killed outright (SIGKILL, the OOM killer) takes the server with it, the server its
solver processes (each asks for ``PR_SET_PDEATHSIG`` too), and those their binaries.
"""

from verify.smt.solvers import die_with_parent

die_with_parent()
