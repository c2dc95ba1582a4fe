"""Results as people and machines read them: reports on disk (``files.py``), the text tables
and JSON shapes several commands share (``tables.py``), JSON or text on stdout (``output.py``)."""
