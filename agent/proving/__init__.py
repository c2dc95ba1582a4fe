"""Proving stored theorems: one theorem's search and final check (``theorem.py``), a job's
targets, attempts and write-back (``repository.py``), Ray, and what is checked after a search."""
